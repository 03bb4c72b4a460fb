#include "server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "channels.h"
#include "codec_binary.h"
#include "codec_json.h"
#include "codec_soap.h"
#include "trace.h"

namespace txray::samples::orders {

bool FrameReader::fill() {
  if (pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  }
  char tmp[16384];
  for (;;) {
    ssize_t n = ::read(fd_, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    bytes_read_ += static_cast<uint64_t>(n);
    return true;
  }
}

bool FrameReader::read(std::string& body) {
  while (buf_.size() - pos_ < sizeof(uint32_t)) {
    bool empty = buf_.size() == pos_;
    if (!fill()) {
      if (empty) return false;
      throw std::runtime_error("connection closed inside a frame");
    }
  }
  uint32_t len = 0;
  std::memcpy(&len, buf_.data() + pos_, sizeof len);
  if (len == 0 || len > kMaxFrame) throw std::runtime_error("bad frame length " + std::to_string(len));
  while (buf_.size() - pos_ < sizeof len + len) {
    if (!fill()) throw std::runtime_error("connection closed inside a frame");
  }
  body.assign(buf_, pos_ + sizeof len, len);
  pos_ += sizeof len + len;
  return true;
}

bool write_frame(int fd, const std::string& body) {
  std::string msg(sizeof(uint32_t), '\0');
  uint32_t len = static_cast<uint32_t>(body.size());
  std::memcpy(msg.data(), &len, sizeof len);
  msg += body;
  return write_all(fd, msg);  // one write per message, like a binary formatter's buffered stream
}

namespace {

void serve_tcp_connection(int raw_fd, const Repository& repo) {
  Fd fd(raw_fd);
  FrameReader reader(fd.get());
  std::string body;
  for (;;) {
    // Wait for the next call outside any transaction; it begins once a whole frame has arrived.
    try {
      if (!reader.read(body)) return;
    } catch (const std::exception&) {
      return;  // not our protocol: drop the connection
    }
    Request req;
    Response resp;
    bool decoded = false;
    std::string name = "TCP ?";
    try {
      req = binary::decode_request(body);
      decoded = true;
      name = std::string("TCP ") + method_name(req.method);
    } catch (const std::exception& e) {
      resp.code = Code::BadRequest;
      resp.error = e.what();
    }
    trace::tx_begin(name);
    if (decoded) resp = repo.execute(req);
    bool ok = write_frame(fd.get(), binary::encode_response(req.method, resp));
    trace::tx_end(resp.code == Code::Ok ? 0 : http_status_of(resp.code), resp.error);
    if (!ok) return;
  }
}

}  // namespace

void serve_tcp_binary(int listen_fd, const Repository& repo) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) continue;
      return;
    }
    std::thread([fd, &repo] { serve_tcp_connection(fd, repo); }).detach();
  }
}

void handle_http(const Repository& repo, const HttpRequest& req, HttpResponse& resp) {
  if (req.path == "/health") {
    resp.body = "ok\n";
    return;
  }
  std::optional<Channel> channel;
  std::string_view rest;
  for (Channel c : {Channel::HttpBinary, Channel::HttpJson, Channel::HttpXml}) {
    std::string prefix = std::string(http_prefix(c)) + "/";
    if (req.path.compare(0, prefix.size(), prefix) == 0) {
      channel = c;
      rest = std::string_view(req.path).substr(prefix.size());
    }
  }
  std::optional<Method> method = parse_method(rest);
  if (!channel || !method || req.method != "POST") {
    resp.status = 404;
    resp.headers["Content-Type"] = "text/plain";
    resp.body = "use POST /bin|/json|/soap/GetOrderStatus|GetCustomers\n";
    return;
  }
  Response result;
  Request call;
  try {
    switch (*channel) {
      case Channel::HttpBinary:
        call = binary::decode_request(req.body);
        if (call.method != *method) throw std::runtime_error("the body is for another method");
        break;
      case Channel::HttpJson: call = json::decode_request(*method, req.body); break;
      default: call = soap::decode_request(*method, req.body); break;
    }
    result = repo.execute(call);
  } catch (const std::exception& e) {
    result.code = Code::BadRequest;
    result.error = e.what();
  }
  resp.status = http_status_of(result.code);
  switch (*channel) {
    case Channel::HttpBinary:
      resp.headers["Content-Type"] = "application/octet-stream";
      resp.body = binary::encode_response(*method, result);
      break;
    case Channel::HttpJson:
      resp.headers["Content-Type"] = "application/json";
      resp.body = json::encode_response(*method, result);
      break;
    default:
      resp.headers["Content-Type"] = "text/xml; charset=utf-8";
      resp.body = soap::encode_response(*method, result);
      break;
  }
}

}  // namespace txray::samples::orders
