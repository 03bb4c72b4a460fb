#include "repository_pg.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "dataset.h"

namespace txray::samples::orders {

namespace {

constexpr const char* kStatusSql = "SELECT status FROM orders WHERE id = $1";
constexpr const char* kCustomersSql =
    "SELECT id, name, company, email, phone, address, city, country, balance_cents FROM customers "
    "WHERE id > $1 ORDER BY id LIMIT $2";

struct ResultGuard {
  PGresult* r;
  ~ResultGuard() { PQclear(r); }
};

void check(PGconn* c, PGresult* r, ExecStatusType want, const char* what) {
  ResultGuard g{r};
  if (!r || PQresultStatus(r) != want)
    throw std::runtime_error(std::string(what) + ": " + (r ? PQresultErrorMessage(r) : PQerrorMessage(c)));
}

PGconn* connect(const std::string& conninfo) {
  PGconn* c = PQconnectdb(conninfo.c_str());
  if (!c || PQstatus(c) != CONNECTION_OK) {
    std::string msg = c ? PQerrorMessage(c) : "out of memory";
    PQfinish(c);
    throw std::runtime_error("cannot connect to PostgreSQL: " + msg);
  }
  return c;
}

// COPY text format: tab-separated, backslash escapes for the few characters that need them.
void append_field(std::string& out, const std::string& v) {
  for (char ch : v) {
    switch (ch) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default: out += ch;
    }
  }
}

void copy_rows(PGconn* c, const char* sql, int64_t n, void (*row)(int64_t, std::string&)) {
  check(c, PQexec(c, sql), PGRES_COPY_IN, sql);
  std::string buf;
  for (int64_t i = 1; i <= n; ++i) {
    row(i, buf);
    if (buf.size() > (1 << 20) || i == n) {
      if (PQputCopyData(c, buf.data(), static_cast<int>(buf.size())) != 1)
        throw std::runtime_error(std::string("COPY: ") + PQerrorMessage(c));
      buf.clear();
    }
  }
  if (PQputCopyEnd(c, nullptr) != 1) throw std::runtime_error(std::string("COPY: ") + PQerrorMessage(c));
  check(c, PQgetResult(c), PGRES_COMMAND_OK, "COPY");
  while (PGresult* r = PQgetResult(c)) PQclear(r);
}

}  // namespace

bool ensure_pg_database(const std::string& conninfo) {
  PGconn* c = connect(conninfo);
  try {
    check(c, PQexec(c, "BEGIN"), PGRES_COMMAND_OK, "BEGIN");
    // One loader at a time; the others wait here and then find the tables.
    check(c, PQexec(c, "SELECT pg_advisory_xact_lock(7142)"), PGRES_TUPLES_OK, "lock");
    PGresult* r = PQexec(c, "SELECT to_regclass('public.orders') IS NOT NULL");
    bool exists = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (exists) {
      check(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK, "COMMIT");
      PQfinish(c);
      return false;
    }
    check(c,
          PQexec(c,
                 "CREATE TABLE customers(id BIGINT PRIMARY KEY, name TEXT NOT NULL, company TEXT NOT NULL, "
                 "email TEXT NOT NULL, phone TEXT NOT NULL, address TEXT NOT NULL, city TEXT NOT NULL, "
                 "country TEXT NOT NULL, balance_cents BIGINT NOT NULL);"
                 "CREATE TABLE orders(id BIGINT PRIMARY KEY, customer_id BIGINT NOT NULL, order_date TEXT NOT NULL, "
                 "status INTEGER NOT NULL, total_cents BIGINT NOT NULL);"),
          PGRES_COMMAND_OK, "CREATE TABLE");
    copy_rows(c, "COPY customers FROM STDIN", kCustomers, [](int64_t i, std::string& out) {
      Customer k = make_customer(i);
      out += std::to_string(k.id);
      for (const std::string* t : {&k.name, &k.company, &k.email, &k.phone, &k.address, &k.city, &k.country}) {
        out += '\t';
        append_field(out, *t);
      }
      out += '\t' + std::to_string(k.balance_cents) + '\n';
    });
    copy_rows(c, "COPY orders FROM STDIN", kOrders, [](int64_t i, std::string& out) {
      OrderRow o = make_order(i);
      out += std::to_string(o.id) + '\t' + std::to_string(o.customer_id) + '\t';
      append_field(out, o.order_date);
      out += '\t' + std::to_string(o.status) + '\t' + std::to_string(o.total_cents) + '\n';
    });
    check(c, PQexec(c, "COMMIT"), PGRES_COMMAND_OK, "COMMIT");
  } catch (...) {
    PQfinish(c);
    throw;
  }
  PQfinish(c);
  return true;
}

struct PgConnection::Impl {
  PGconn* c = nullptr;
};

PgConnection::PgConnection(const std::string& conninfo) : impl_(new Impl) {
  impl_->c = connect(conninfo);
  try {
    check(impl_->c, PQprepare(impl_->c, "status", kStatusSql, 1, nullptr), PGRES_COMMAND_OK, "prepare");
    check(impl_->c, PQprepare(impl_->c, "customers", kCustomersSql, 2, nullptr), PGRES_COMMAND_OK, "prepare");
  } catch (...) {
    PQfinish(impl_->c);
    throw;
  }
}

PgConnection::~PgConnection() { PQfinish(impl_->c); }

Response PgConnection::run(const Request& req) {
  Response resp;
  PGconn* c = impl_->c;
  if (req.method == Method::GetOrderStatus) {
    std::string id = std::to_string(req.order_id);
    const char* params[] = {id.c_str()};
    ResultGuard g{PQexecPrepared(c, "status", 1, params, nullptr, nullptr, 0)};
    if (!g.r || PQresultStatus(g.r) != PGRES_TUPLES_OK) {
      resp.code = Code::Error;
      resp.error = g.r ? PQresultErrorMessage(g.r) : PQerrorMessage(c);
    } else if (PQntuples(g.r) == 0) {
      resp.code = Code::NotFound;
      resp.error = "no order " + id;
    } else {
      resp.status = std::atoi(PQgetvalue(g.r, 0, 0));
    }
    return resp;
  }
  std::string after = std::to_string(req.customer_id), n = std::to_string(req.n);
  const char* params[] = {after.c_str(), n.c_str()};
  ResultGuard g{PQexecPrepared(c, "customers", 2, params, nullptr, nullptr, 0)};
  if (!g.r || PQresultStatus(g.r) != PGRES_TUPLES_OK) {
    resp.code = Code::Error;
    resp.error = g.r ? PQresultErrorMessage(g.r) : PQerrorMessage(c);
    return resp;
  }
  int rows = PQntuples(g.r);
  resp.customers.reserve(rows);
  for (int i = 0; i < rows; ++i) {
    Customer k;
    k.id = std::strtoll(PQgetvalue(g.r, i, 0), nullptr, 10);
    std::string* texts[] = {&k.name, &k.company, &k.email, &k.phone, &k.address, &k.city, &k.country};
    for (int f = 0; f < 7; ++f) texts[f]->assign(PQgetvalue(g.r, i, 1 + f), PQgetlength(g.r, i, 1 + f));
    k.balance_cents = std::strtoll(PQgetvalue(g.r, i, 8), nullptr, 10);
    resp.customers.push_back(std::move(k));
  }
  return resp;
}

}  // namespace txray::samples::orders
