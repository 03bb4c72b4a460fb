// HTTP + verbose XML: SOAP 1.1 envelopes in the RPC/encoded style (every value carries its xsi:type,
// arrays their soapenc:arrayType), indented — the "HTTP/SOAP" channel of the reference. Errors are SOAP
// faults (soap:Fault with faultcode and faultstring; HTTP 404 / 400 / 500 as on the JSON channel).
#pragma once

#include <string>
#include <string_view>

#include "model.h"

namespace txray::samples::orders::soap {

constexpr const char* kNamespace = "http://txray.dev/samples/orders/";

std::string encode_request(const Request& r);
Request decode_request(Method m, std::string_view body);  // throws std::runtime_error on malformed input
std::string encode_response(Method m, const Response& r);
Response decode_response(Method m, int http_status, std::string_view body);
// The SOAPAction header value of a method.
std::string action(Method m);

}  // namespace txray::samples::orders::soap
