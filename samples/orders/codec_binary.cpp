#include "codec_binary.h"

#include <cstring>
#include <stdexcept>

namespace txray::samples::orders::binary {

namespace {

template <typename T>
void put(std::string& s, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the samples run on little-endian x86-64 / arm64 only
  s.append(b, sizeof(T));
}

void put_str(std::string& s, const std::string& v) {
  if (v.size() > 0xffff) throw std::runtime_error("string too long for the binary encoding");
  put<uint16_t>(s, static_cast<uint16_t>(v.size()));
  s += v;
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, s_.data(), sizeof(T));
    s_.remove_prefix(sizeof(T));
    return v;
  }
  std::string get_str() {
    auto n = get<uint16_t>();
    need(n);
    std::string v(s_.substr(0, n));
    s_.remove_prefix(n);
    return v;
  }
  void done() const {
    if (!s_.empty()) throw std::runtime_error("trailing bytes in binary message");
  }

 private:
  void need(size_t n) const {
    if (s_.size() < n) throw std::runtime_error("truncated binary message");
  }
  std::string_view s_;
};

}  // namespace

std::string encode_request(const Request& r) {
  std::string s;
  put<uint8_t>(s, static_cast<uint8_t>(r.method));
  if (r.method == Method::GetOrderStatus) {
    put<int64_t>(s, r.order_id);
  } else {
    put<int64_t>(s, r.customer_id);
    put<uint32_t>(s, r.n);
  }
  return s;
}

Request decode_request(std::string_view body) {
  Cursor c(body);
  Request r;
  auto m = c.get<uint8_t>();
  if (m == static_cast<uint8_t>(Method::GetOrderStatus)) {
    r.method = Method::GetOrderStatus;
    r.order_id = c.get<int64_t>();
  } else if (m == static_cast<uint8_t>(Method::GetCustomers)) {
    r.method = Method::GetCustomers;
    r.customer_id = c.get<int64_t>();
    r.n = c.get<uint32_t>();
  } else {
    throw std::runtime_error("unknown method " + std::to_string(m));
  }
  c.done();
  return r;
}

std::string encode_response(Method m, const Response& r) {
  std::string s;
  put<uint8_t>(s, static_cast<uint8_t>(r.code));
  if (r.code != Code::Ok) {
    put_str(s, r.error);
  } else if (m == Method::GetOrderStatus) {
    put<int32_t>(s, r.status);
  } else {
    put<uint32_t>(s, static_cast<uint32_t>(r.customers.size()));
    for (const auto& c : r.customers) {
      put<int64_t>(s, c.id);
      put<int64_t>(s, c.balance_cents);
      for (const auto* t : {&c.name, &c.company, &c.email, &c.phone, &c.address, &c.city, &c.country}) put_str(s, *t);
    }
  }
  return s;
}

Response decode_response(Method m, std::string_view body) {
  Cursor c(body);
  Response r;
  auto code = c.get<uint8_t>();
  if (code > static_cast<uint8_t>(Code::Error)) throw std::runtime_error("bad result code");
  r.code = static_cast<Code>(code);
  if (r.code != Code::Ok) {
    r.error = c.get_str();
  } else if (m == Method::GetOrderStatus) {
    r.status = c.get<int32_t>();
  } else {
    auto n = c.get<uint32_t>();
    if (n > kMaxPage) throw std::runtime_error("too many rows in binary message");
    r.customers.resize(n);
    for (auto& cu : r.customers) {
      cu.id = c.get<int64_t>();
      cu.balance_cents = c.get<int64_t>();
      for (auto* t : {&cu.name, &cu.company, &cu.email, &cu.phone, &cu.address, &cu.city, &cu.country}) *t = c.get_str();
    }
  }
  c.done();
  return r;
}

}  // namespace txray::samples::orders::binary
