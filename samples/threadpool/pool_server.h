// A thread-pool HTTP/1.1 server: one I/O thread accepts connections and reads requests from all of them
// (non-blocking sockets, epoll), and hands each complete request to one of N worker threads, which runs
// the handler and writes the response itself. While a request is with a worker its connection is out of
// the I/O thread's epoll set (EPOLLONESHOT); the worker arms it again after the response.
//
// The request's txray transaction (made by the agent on the I/O thread, which read the request) goes
// with it: the I/O thread captures it right after reading the request, the worker attaches it around the
// handler (so the handler's outbound calls, SQL and DNS steps belong to that request) and releases it
// after the response. Without the agent these calls do nothing.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <txray/txray.h>

#include "http.h"

namespace txray::samples::threadpool {

class PoolServer {
 public:
  // listen_fd: a listening socket (made non-blocking here). workers: the pool's size (>= 1).
  PoolServer(int listen_fd, int workers, HttpHandler handler);
  void serve_forever();  // runs the I/O loop on the calling thread; starts the workers

 private:
  struct Conn;
  struct Job {
    Conn* conn;
    HttpRequest req;
    bool keep_alive;
    txray_context ctx;  // the request's transaction, captured on the I/O thread
  };
  void io_loop();
  void accept_all();
  void on_readable(Conn* c);
  void worker();
  void finish(Conn* c, bool keep_open);  // after a response: arm the connection again, or close it
  void close_conn(Conn* c);

  int listen_fd_;
  int epoll_fd_ = -1;
  int nworkers_;
  HttpHandler handler_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
};

}  // namespace txray::samples::threadpool
