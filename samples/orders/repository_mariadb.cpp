#include "repository_mariadb.h"

#include <mariadb/mysql.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dataset.h"

namespace txray::samples::orders {

namespace {

constexpr const char* kStatusSql = "SELECT status FROM orders WHERE id = ?";
constexpr const char* kCustomersSql =
    "SELECT id, name, company, email, phone, address, city, country, balance_cents FROM customers "
    "WHERE id > ? ORDER BY id LIMIT ?";

struct Url {
  std::string user, host = "127.0.0.1", db;
  unsigned port = 3306;
};

// mysql://user@host:port/db (no password: the samples' servers trust the loopback root).
Url parse_url(const std::string& url) {
  const std::string scheme = "mysql://";
  if (url.compare(0, scheme.size(), scheme) != 0) throw std::runtime_error("--mariadb wants mysql://user@host:port/db");
  std::string rest = url.substr(scheme.size());
  Url u;
  size_t at = rest.find('@');
  if (at != std::string::npos) {
    u.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    u.db = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos) {
    u.port = unsigned(std::atoi(rest.c_str() + colon + 1));
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) u.host = rest;
  return u;
}

MYSQL* connect(const std::string& url) {
  Url u = parse_url(url);
  MYSQL* c = mysql_init(nullptr);
  if (!c) throw std::runtime_error("mysql_init: out of memory");
  if (!mysql_real_connect(c, u.host.c_str(), u.user.c_str(), "", u.db.c_str(), u.port, nullptr, 0)) {
    std::string msg = mysql_error(c);
    mysql_close(c);
    throw std::runtime_error("cannot connect to MariaDB: " + msg);
  }
  return c;
}

void exec(MYSQL* c, const std::string& q) {
  if (mysql_real_query(c, q.data(), q.size()) != 0)
    throw std::runtime_error(q.substr(0, 60) + "…: " + mysql_error(c));
  if (MYSQL_RES* r = mysql_store_result(c)) mysql_free_result(r);
}

void quoted(MYSQL* c, std::string& out, const std::string& v) {
  std::string buf(v.size() * 2 + 1, '\0');
  unsigned long n = mysql_real_escape_string(c, buf.data(), v.data(), v.size());
  out += '\'';
  out.append(buf.data(), n);
  out += '\'';
}

// INSERT … VALUES (…), (…), … in statements of up to 2,000 rows.
template <typename Row>
void insert_rows(MYSQL* c, const char* head, int64_t n, Row row) {
  std::string q;
  for (int64_t i = 1; i <= n; ++i) {
    q += q.empty() ? head : ",";
    q += '(';
    row(i, q);
    q += ')';
    if (i % 2000 == 0 || i == n) {
      exec(c, q);
      q.clear();
    }
  }
}

}  // namespace

bool ensure_mariadb_database(const std::string& url) {
  MYSQL* c = connect(url);
  try {
    exec(c, "SELECT GET_LOCK('txray_orders_load', 600)");  // one loader at a time
    exec(c, "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'orders'");
    bool exists = mysql_affected_rows(c) > 0 && mysql_affected_rows(c) != my_ulonglong(-1);
    if (!exists) {
      exec(c, "CREATE TABLE customers(id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, company VARCHAR(64) NOT NULL, "
              "email VARCHAR(128) NOT NULL, phone VARCHAR(32) NOT NULL, address VARCHAR(128) NOT NULL, "
              "city VARCHAR(64) NOT NULL, country VARCHAR(64) NOT NULL, balance_cents BIGINT NOT NULL)");
      exec(c, "CREATE TABLE orders_loading(id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, "
              "order_date VARCHAR(16) NOT NULL, status INT NOT NULL, total_cents BIGINT NOT NULL)");
      exec(c, "START TRANSACTION");
      insert_rows(c, "INSERT INTO customers VALUES ", kCustomers, [&](int64_t i, std::string& q) {
        Customer k = make_customer(i);
        q += std::to_string(k.id);
        for (const std::string* t : {&k.name, &k.company, &k.email, &k.phone, &k.address, &k.city, &k.country}) {
          q += ',';
          quoted(c, q, *t);
        }
        q += ',' + std::to_string(k.balance_cents);
      });
      insert_rows(c, "INSERT INTO orders_loading VALUES ", kOrders, [&](int64_t i, std::string& q) {
        OrderRow o = make_order(i);
        q += std::to_string(o.id) + ',' + std::to_string(o.customer_id) + ',';
        quoted(c, q, o.order_date);
        q += ',' + std::to_string(o.status) + ',' + std::to_string(o.total_cents);
      });
      exec(c, "COMMIT");
      exec(c, "RENAME TABLE orders_loading TO orders");  // `orders` exists only once it is complete
    }
    exec(c, "SELECT RELEASE_LOCK('txray_orders_load')");
    mysql_close(c);
    return !exists;
  } catch (...) {
    mysql_close(c);
    throw;
  }
}

struct MariaDbConnection::Impl {
  MYSQL* c = nullptr;
  MYSQL_STMT* status = nullptr;
  MYSQL_STMT* customers = nullptr;
};

namespace {
MYSQL_STMT* prepare(MYSQL* c, const char* q) {
  MYSQL_STMT* st = mysql_stmt_init(c);
  if (!st || mysql_stmt_prepare(st, q, std::strlen(q)) != 0) {
    std::string msg = st ? mysql_stmt_error(st) : "out of memory";
    if (st) mysql_stmt_close(st);
    throw std::runtime_error("prepare: " + msg);
  }
  return st;
}

MYSQL_BIND long_param(long long* v) {
  MYSQL_BIND b;
  std::memset(&b, 0, sizeof b);
  b.buffer_type = MYSQL_TYPE_LONGLONG;
  b.buffer = v;
  return b;
}

MYSQL_BIND text_result(char* buf, unsigned long size, unsigned long* len) {
  MYSQL_BIND b;
  std::memset(&b, 0, sizeof b);
  b.buffer_type = MYSQL_TYPE_STRING;
  b.buffer = buf;
  b.buffer_length = size;
  b.length = len;
  return b;
}
}  // namespace

MariaDbConnection::MariaDbConnection(const std::string& url) : impl_(new Impl) {
  impl_->c = connect(url);
  try {
    impl_->status = prepare(impl_->c, kStatusSql);
    impl_->customers = prepare(impl_->c, kCustomersSql);
  } catch (...) {
    if (impl_->status) mysql_stmt_close(impl_->status);
    mysql_close(impl_->c);
    throw;
  }
}

MariaDbConnection::~MariaDbConnection() {
  mysql_stmt_close(impl_->status);
  mysql_stmt_close(impl_->customers);
  mysql_close(impl_->c);
}

Response MariaDbConnection::run(const Request& req) {
  Response resp;
  auto fail = [&](MYSQL_STMT* st) {
    resp.code = Code::Error;
    resp.error = mysql_stmt_error(st);
    mysql_stmt_free_result(st);
    return resp;
  };
  if (req.method == Method::GetOrderStatus) {
    MYSQL_STMT* st = impl_->status;
    long long id = req.order_id;
    MYSQL_BIND p = long_param(&id);
    long long status = 0;
    MYSQL_BIND r = long_param(&status);
    if (mysql_stmt_bind_param(st, &p) || mysql_stmt_execute(st) || mysql_stmt_bind_result(st, &r) ||
        mysql_stmt_store_result(st))
      return fail(st);
    int rc = mysql_stmt_fetch(st);
    if (rc == MYSQL_NO_DATA) {
      resp.code = Code::NotFound;
      resp.error = "no order " + std::to_string(req.order_id);
    } else if (rc == 0 || rc == MYSQL_DATA_TRUNCATED) {
      resp.status = int32_t(status);
    } else {
      return fail(st);
    }
    mysql_stmt_free_result(st);
    return resp;
  }
  MYSQL_STMT* st = impl_->customers;
  long long after = req.customer_id, n = req.n;
  MYSQL_BIND p[2] = {long_param(&after), long_param(&n)};
  long long id = 0, balance = 0;
  char text[7][160];
  unsigned long len[7] = {};
  MYSQL_BIND r[9];
  r[0] = long_param(&id);
  for (int f = 0; f < 7; ++f) r[1 + f] = text_result(text[f], sizeof text[f], &len[f]);
  r[8] = long_param(&balance);
  if (mysql_stmt_bind_param(st, p) || mysql_stmt_execute(st) || mysql_stmt_bind_result(st, r) ||
      mysql_stmt_store_result(st))
    return fail(st);
  resp.customers.reserve(req.n);
  int rc;
  while ((rc = mysql_stmt_fetch(st)) == 0 || rc == MYSQL_DATA_TRUNCATED) {
    Customer k;
    k.id = id;
    std::string* texts[] = {&k.name, &k.company, &k.email, &k.phone, &k.address, &k.city, &k.country};
    for (int f = 0; f < 7; ++f) texts[f]->assign(text[f], std::min<unsigned long>(len[f], sizeof text[f]));
    k.balance_cents = balance;
    resp.customers.push_back(std::move(k));
  }
  if (rc != MYSQL_NO_DATA) return fail(st);
  mysql_stmt_free_result(st);
  return resp;
}

}  // namespace txray::samples::orders
