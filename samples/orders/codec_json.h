// HTTP + JSON encoding (json_value.h): {"orderId":N} -> {"status":S};
// {"customerId":N,"n":K} -> {"customers":[{"id":…,"name":…,…}]}; errors -> {"error":"…"}.
#pragma once

#include <string>
#include <string_view>

#include "model.h"

namespace txray::samples::orders::json {

std::string encode_request(const Request& r);
Request decode_request(Method m, std::string_view body);  // throws std::runtime_error on malformed input
std::string encode_response(Method m, const Response& r);
Response decode_response(Method m, int http_status, std::string_view body);

}  // namespace txray::samples::orders::json
