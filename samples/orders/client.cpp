#include "client.h"

#include <stdexcept>

#include "codec_binary.h"
#include "codec_json.h"
#include "codec_soap.h"
#include "server.h"

namespace txray::samples::orders {

Client::Client(Channel channel, std::string host, uint16_t tcp_port, uint16_t http_port)
    : channel_(channel), host_(std::move(host)), tcp_port_(tcp_port) {
  if (channel != Channel::TcpBinary) http_ = std::make_unique<HttpClient>(host_, http_port);
}

uint64_t Client::bytes_written() const { return http_ ? http_->bytes_written() : tcp_written_; }
uint64_t Client::bytes_read() const {
  if (http_) return http_->bytes_read();
  return tcp_read_done_ + (frames_ ? frames_->bytes_read() : 0);
}

Response Client::call(const Request& req) {
  if (channel_ == Channel::TcpBinary) {
    auto drop = [this] {
      tcp_read_done_ += frames_ ? frames_->bytes_read() : 0;
      frames_.reset();
      tcp_.reset();
    };
    if (!tcp_) {
      tcp_.reset(connect_tcp(host_, tcp_port_));
      frames_ = std::make_unique<FrameReader>(tcp_.get());
    }
    std::string body = binary::encode_request(req);
    if (!write_frame(tcp_.get(), body)) {
      drop();
      throw std::runtime_error("write to the TCP channel failed");
    }
    tcp_written_ += 4 + body.size();
    std::string resp;
    bool got;
    try {
      got = frames_->read(resp);
    } catch (...) {
      drop();
      throw;
    }
    if (!got) {
      drop();
      throw std::runtime_error("the TCP channel closed the connection");
    }
    return binary::decode_response(req.method, resp);
  }
  const std::string target = std::string(http_prefix(channel_)) + "/" + method_name(req.method);
  Headers h;
  HttpResponse r;
  switch (channel_) {
    case Channel::HttpBinary:
      h["Content-Type"] = "application/octet-stream";
      r = http_->request("POST", target, h, binary::encode_request(req));
      return binary::decode_response(req.method, r.body);
    case Channel::HttpJson:
      h["Content-Type"] = "application/json";
      r = http_->request("POST", target, h, json::encode_request(req));
      return json::decode_response(req.method, r.status, r.body);
    default:
      h["Content-Type"] = "text/xml; charset=utf-8";
      h["SOAPAction"] = soap::action(req.method);
      r = http_->request("POST", target, h, soap::encode_request(req));
      return soap::decode_response(req.method, r.status, r.body);
  }
}

}  // namespace txray::samples::orders
