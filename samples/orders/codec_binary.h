// The compact binary encoding (the ".NET Remoting TCP/Binary" of the reference): little-endian integers,
// strings as u16 length + bytes. On raw TCP every message is framed as u32 length + body; over HTTP the
// body alone is the POST body.
//
//   request body:  u8 method | GetOrderStatus: i64 orderId | GetCustomers: i64 customerId, u32 n
//   response body: u8 code | ok+GetOrderStatus: i32 status
//                          | ok+GetCustomers: u32 count, count x (i64 id, i64 balance, 7 x string)
//                          | otherwise: string message
#pragma once

#include <string>
#include <string_view>

#include "model.h"

namespace txray::samples::orders::binary {

std::string encode_request(const Request& r);
Request decode_request(std::string_view body);  // throws std::runtime_error on malformed input
std::string encode_response(Method m, const Response& r);
Response decode_response(Method m, std::string_view body);

}  // namespace txray::samples::orders::binary
