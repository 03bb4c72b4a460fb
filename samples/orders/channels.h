// The channels the order service is served over, named as the driver and the tests name them:
//   tcp-binary   raw TCP, u32-length-framed binary messages (codec_binary.h)       port --tcp
//   http-binary  POST /bin/<Method>, the same binary body over HTTP                port --http
//   http-json    POST /json/<Method>, JSON (codec_json.h)                          port --http
//   http-xml     POST /soap/<Method>, SOAP envelopes (codec_soap.h)                port --http
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model.h"

namespace txray::samples::orders {

enum class Channel { TcpBinary, HttpBinary, HttpJson, HttpXml };

const std::vector<Channel>& all_channels();
const char* channel_name(Channel c);
std::optional<Channel> parse_channel(std::string_view s);
// "/bin", "/json", "/soap" ("" for tcp-binary).
const char* http_prefix(Channel c);
std::optional<Method> parse_method(std::string_view s);

// HTTP status of a result code on the HTTP channels.
int http_status_of(Code c);

}  // namespace txray::samples::orders
