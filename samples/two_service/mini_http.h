// A deliberately small HTTP/1.1 server and client over blocking POSIX sockets, for the two-service
// sample: Content-Length bodies only, keep-alive, one thread per connection. Plain read()/write()
// calls, so the agent sees exactly what a hand-written service does.
#pragma once

#include <functional>
#include <string>

namespace two_service {

struct Request {
  std::string method;
  std::string target;
  std::string body;
  bool keep_alive = true;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
};

using Handler = std::function<Response(const Request&)>;

// Serves on 127.0.0.1:port until the process ends (prints "listening on PORT" once ready).
// Returns non-zero when the port cannot be bound.
int serve(int port, const Handler& handler);

// A keep-alive client connection to 127.0.0.1:port, reconnected when the server closed it.
class Client {
 public:
  explicit Client(int port) : port_(port) {}
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  // GET target; false (with error set) when the exchange failed.
  bool get(const std::string& target, int& status, std::string& body, std::string& error);

 private:
  bool connect_();
  bool exchange(const std::string& request, int& status, std::string& body, std::string& error);
  int port_;
  int fd_ = -1;
  std::string buf_;  // bytes read past the previous response
};

// Parses "--name value" style options (value or fallback).
std::string option(int argc, char** argv, const std::string& name, const std::string& fallback);

}  // namespace two_service
