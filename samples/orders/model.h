// The order service's data and its two methods, as in ../shared/reference/000_*: GetOrderStatus(orderId)
// returns one integer; GetCustomers(customerId, n) returns the n customers after customerId.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace txray::samples::orders {

struct Customer {
  int64_t id = 0;
  std::string name, company, email, phone, address, city, country;
  int64_t balance_cents = 0;
  bool operator==(const Customer&) const = default;
};

enum class Method : uint8_t { GetOrderStatus = 1, GetCustomers = 2 };

struct Request {
  Method method = Method::GetOrderStatus;
  int64_t order_id = 0;     // GetOrderStatus
  int64_t customer_id = 0;  // GetCustomers: customers with an id greater than this
  uint32_t n = 0;           // GetCustomers: page size
};

// Result codes shared by every channel.
enum class Code : uint8_t { Ok = 0, NotFound = 1, BadRequest = 2, Error = 3 };

struct Response {
  Code code = Code::Ok;
  std::string error;               // when code != Ok
  int32_t status = 0;              // GetOrderStatus
  std::vector<Customer> customers; // GetCustomers
};

constexpr uint32_t kMaxPage = 1000;
const char* method_name(Method m);

}  // namespace txray::samples::orders
