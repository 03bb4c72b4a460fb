#include "codec_json.h"

#include <stdexcept>

#include "json_value.h"

namespace txray::samples::orders::json {

using jsonv::Value;

std::string encode_request(const Request& r) {
  Value j = Value::object();
  if (r.method == Method::GetOrderStatus) {
    j.add("orderId", Value::integer(r.order_id));
  } else {
    j.add("customerId", Value::integer(r.customer_id));
    j.add("n", Value::integer(r.n));
  }
  return jsonv::write(j);
}

Request decode_request(Method m, std::string_view body) {
  Request r;
  r.method = m;
  Value j = jsonv::parse(body);
  if (m == Method::GetOrderStatus) {
    r.order_id = j.at("orderId").as_int();
  } else {
    r.customer_id = j.at("customerId").as_int();
    int64_t n = j.at("n").as_int();
    if (n < 0 || n > 0xffffffffLL) throw std::runtime_error("JSON: n out of range");
    r.n = static_cast<uint32_t>(n);
  }
  return r;
}

std::string encode_response(Method m, const Response& r) {
  Value j = Value::object();
  if (r.code != Code::Ok) {
    j.add("error", Value::string(r.error));
  } else if (m == Method::GetOrderStatus) {
    j.add("status", Value::integer(r.status));
  } else {
    Value& rows = j.add("customers", Value::array());
    for (const auto& c : r.customers) {
      Value row = Value::object();
      row.add("id", Value::integer(c.id));
      row.add("name", Value::string(c.name));
      row.add("company", Value::string(c.company));
      row.add("email", Value::string(c.email));
      row.add("phone", Value::string(c.phone));
      row.add("address", Value::string(c.address));
      row.add("city", Value::string(c.city));
      row.add("country", Value::string(c.country));
      row.add("balanceCents", Value::integer(c.balance_cents));
      rows.items.push_back(std::move(row));
    }
  }
  return jsonv::write(j);
}

Response decode_response(Method m, int http_status, std::string_view body) {
  Response r;
  Value j = jsonv::parse(body);
  if (http_status != 200) {
    r.code = http_status == 404 ? Code::NotFound : http_status == 400 ? Code::BadRequest : Code::Error;
    const Value* e = j.find("error");
    r.error = e && e->type == Value::Type::String ? e->s : "HTTP " + std::to_string(http_status);
    return r;
  }
  if (m == Method::GetOrderStatus) {
    r.status = static_cast<int32_t>(j.at("status").as_int());
    return r;
  }
  const Value& rows = j.at("customers");
  if (rows.type != Value::Type::Array) throw std::runtime_error("JSON: customers is not an array");
  for (const auto& row : rows.items) {
    Customer c;
    c.id = row.at("id").as_int();
    c.name = row.at("name").as_string();
    c.company = row.at("company").as_string();
    c.email = row.at("email").as_string();
    c.phone = row.at("phone").as_string();
    c.address = row.at("address").as_string();
    c.city = row.at("city").as_string();
    c.country = row.at("country").as_string();
    c.balance_cents = row.at("balanceCents").as_int();
    r.customers.push_back(std::move(c));
  }
  return r;
}

}  // namespace txray::samples::orders::json
