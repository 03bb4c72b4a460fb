#include "pool_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace txray::samples::threadpool {

struct PoolServer::Conn {
  int fd;
  std::string buf;  // bytes read and not yet parsed; only the thread that holds the connection touches it
};

namespace {

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// write() all of `data` on a non-blocking socket, waiting (at most 10 s at a time) while it is full.
bool write_all_nb(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 10000) <= 0) return false;
    } else if (errno != EINTR) {
      return false;
    }
  }
  return true;
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

PoolServer::PoolServer(int listen_fd, int workers, HttpHandler handler)
    : listen_fd_(listen_fd), nworkers_(workers < 1 ? 1 : workers), handler_(std::move(handler)) {}

void PoolServer::serve_forever() {
  set_nonblocking(listen_fd_);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw std::runtime_error(std::string("epoll_create1: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listening socket
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  // Detached: the process ends with std::exit (serve_until_signal) while they wait for work.
  for (int i = 0; i < nworkers_; ++i) std::thread([this] { worker(); }).detach();
  io_loop();
}

void PoolServer::io_loop() {
  epoll_event events[64];
  for (;;) {
    int n = ::epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr)
        accept_all();
      else
        on_readable(static_cast<Conn*>(events[i].data.ptr));
    }
  }
}

void PoolServer::accept_all() {
  for (;;) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN: no more for now (EMFILE and the like: try again on the next event)
    }
    auto* c = new Conn{fd, {}};
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.ptr = c;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

// One read() per event (the connection is armed again while a request is incomplete), then, when the
// buffer holds a whole request, the hand-off. The capture comes right after the read of the request's
// bytes, with no other read or epoll_wait in between: the agent knows which request this thread has just
// read.
void PoolServer::on_readable(Conn* c) {
  char tmp[16384];
  bool eof = false;
  for (;;) {
    ssize_t n = ::read(c->fd, tmp, sizeof tmp);
    if (n > 0) c->buf.append(tmp, static_cast<size_t>(n));
    if (n == 0) eof = true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return close_conn(c);
    break;
  }
  Job job{c, {}, true, 0};
  size_t used = 0;
  try {
    used = parse_request(c->buf, job.req);
  } catch (const std::exception& e) {  // malformed: answer 400 and drop the connection
    HttpResponse resp;
    resp.status = 400;
    resp.headers["Content-Type"] = "text/plain";
    resp.body = std::string(e.what()) + "\n";
    write_all_nb(c->fd, format_response(resp, false));
    return close_conn(c);
  }
  if (used == 0) {
    if (eof) return close_conn(c);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.ptr = c;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
    return;
  }
  c->buf.erase(0, used);
  job.keep_alive = !eof && lower(job.req.header("connection")) != "close";
  job.ctx = txray_context_capture();
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void PoolServer::worker() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !jobs_.empty(); });
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    HttpResponse resp;
    txray_context_attach(job.ctx);  // the handler's steps belong to the request
    try {
      handler_(job.req, resp);
    } catch (const std::exception& e) {
      resp = HttpResponse{};
      resp.status = 500;
      resp.headers["Content-Type"] = "text/plain";
      resp.body = std::string(e.what()) + "\n";
    }
    txray_context_detach();
    bool ok = write_all_nb(job.conn->fd, format_response(resp, job.keep_alive));
    txray_context_release(job.ctx);
    finish(job.conn, ok && job.keep_alive);
  }
}

void PoolServer::finish(Conn* c, bool keep_open) {
  if (!keep_open) return close_conn(c);
  // Back into the I/O thread's set. Bytes of a next request may already be in the buffer (a pipelining
  // client): then ask for EPOLLOUT too, which fires at once, so the I/O thread looks at the buffer.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT | (c->buf.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.ptr = c;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void PoolServer::close_conn(Conn* c) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  delete c;
}

}  // namespace txray::samples::threadpool
