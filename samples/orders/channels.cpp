#include "channels.h"

namespace txray::samples::orders {

const std::vector<Channel>& all_channels() {
  static const std::vector<Channel> v = {Channel::TcpBinary, Channel::HttpBinary, Channel::HttpJson, Channel::HttpXml};
  return v;
}

const char* channel_name(Channel c) {
  switch (c) {
    case Channel::TcpBinary: return "tcp-binary";
    case Channel::HttpBinary: return "http-binary";
    case Channel::HttpJson: return "http-json";
    case Channel::HttpXml: return "http-xml";
  }
  return "?";
}

std::optional<Channel> parse_channel(std::string_view s) {
  for (Channel c : all_channels())
    if (s == channel_name(c)) return c;
  return std::nullopt;
}

const char* http_prefix(Channel c) {
  switch (c) {
    case Channel::HttpBinary: return "/bin";
    case Channel::HttpJson: return "/json";
    case Channel::HttpXml: return "/soap";
    default: return "";
  }
}

std::optional<Method> parse_method(std::string_view s) {
  if (s == "GetOrderStatus") return Method::GetOrderStatus;
  if (s == "GetCustomers") return Method::GetCustomers;
  return std::nullopt;
}

int http_status_of(Code c) {
  switch (c) {
    case Code::Ok: return 200;
    case Code::NotFound: return 404;
    case Code::BadRequest: return 400;
    case Code::Error: return 500;
  }
  return 500;
}

}  // namespace txray::samples::orders
