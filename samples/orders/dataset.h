// The order database: 100,000 customers and 300,000 orders, generated deterministically (every value is
// a function of its row id through splitmix64), so the C++ and the Python sample build identical files.
// samples/py_orders/orders_data.py is the Python twin of this file: change both or neither.
#pragma once

#include <cstdint>
#include <string>

#include "model.h"

namespace txray::samples::orders {

constexpr int64_t kCustomers = 100000;
constexpr int64_t kOrders = 300000;

uint64_t splitmix64(uint64_t x);
Customer make_customer(int64_t id);
struct OrderRow {
  int64_t id, customer_id;
  std::string order_date;
  int32_t status;
  int64_t total_cents;
};
OrderRow make_order(int64_t id);

// Creates the database at `path` when it does not exist yet (written to a temporary file and renamed, so
// a concurrent starter never sees half a database). Returns true when it generated the file.
bool ensure_database(const std::string& path);

}  // namespace txray::samples::orders
