#include "dataset.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <stdexcept>

namespace txray::samples::orders {

namespace {

const char* const kFirst[] = {"James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda",
                              "David", "Elizabeth", "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica",
                              "Thomas", "Sarah", "Minjun", "Seoyeon", "Hiroshi", "Yuki", "Lukas", "Anna"};
const char* const kLast[] = {"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis",
                             "Rodriguez", "Martinez", "Hernandez", "Lopez", "Kim", "Lee", "Park", "Choi",
                             "Tanaka", "Suzuki", "Mueller", "Schmidt", "Rossi", "Dubois", "Nowak", "Silva"};
const char* const kCoA[] = {"Northwind", "Contoso", "Fabrikam", "Adventure", "Tailspin", "Wingtip", "Litware",
                            "Proseware", "Fourth", "Coho", "Lucerne", "Margie"};
const char* const kCoB[] = {"Traders", "Ltd", "Inc", "Works", "Toys", "Winery", "Airlines", "Publishing",
                            "Coffee", "Vineyard", "Systems", "Travel"};
const char* const kStreet[] = {"Main St", "Oak Ave", "Pine Rd", "Maple Dr", "Cedar Ln", "Elm St", "Lake View",
                               "Hill Rd", "Park Ave", "River Rd", "Sunset Blvd", "Harbor Way"};
const char* const kCity[] = {"Seattle", "Portland", "Seoul", "Busan", "Tokyo", "Osaka", "Berlin", "Munich",
                             "Paris", "Lyon", "Madrid", "Lisbon", "London", "Dublin", "Oslo", "Warsaw"};
const char* const kCountry[] = {"USA", "USA", "Korea", "Korea", "Japan", "Japan", "Germany", "Germany",
                                "France", "France", "Spain", "Portugal", "UK", "Ireland", "Norway", "Poland"};

template <size_t N>
const char* pick(const char* const (&arr)[N], uint64_t h) {
  return arr[h % N];
}

uint64_t h(int64_t id, int k) { return splitmix64(static_cast<uint64_t>(id) * 16 + static_cast<uint64_t>(k)); }
uint64_t ho(int64_t id, int k) { return h(id + 1000000000, k); }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(std::string("sqlite: ") + msg + " in: " + sql);
  }
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Customer make_customer(int64_t id) {
  Customer c;
  c.id = id;
  std::string first = pick(kFirst, h(id, 0)), last = pick(kLast, h(id, 1));
  c.name = first + " " + last;
  c.company = std::string(pick(kCoA, h(id, 2))) + " " + pick(kCoB, h(id, 3));
  c.email = lower(first) + "." + lower(last) + std::to_string(id) + "@example.com";
  char phone[32];
  std::snprintf(phone, sizeof phone, "+1-555-%04u", static_cast<unsigned>(h(id, 4) % 10000));
  c.phone = phone;
  c.address = std::to_string(1 + h(id, 5) % 9999) + " " + pick(kStreet, h(id, 6));
  uint64_t city = h(id, 7) % 16;
  c.city = kCity[city];
  c.country = kCountry[city];
  c.balance_cents = static_cast<int64_t>(h(id, 8) % 10000000);
  return c;
}

OrderRow make_order(int64_t id) {
  char date[16];
  std::snprintf(date, sizeof date, "2025-%02u-%02u", static_cast<unsigned>(1 + ho(id, 1) % 12),
                static_cast<unsigned>(1 + ho(id, 2) % 28));
  return OrderRow{id, 1 + static_cast<int64_t>(ho(id, 0) % kCustomers), date, static_cast<int32_t>(ho(id, 3) % 5),
                  static_cast<int64_t>(ho(id, 4) % 1000000)};
}

bool ensure_database(const std::string& path) {
  if (::access(path.c_str(), F_OK) == 0) return false;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  sqlite3* db = nullptr;
  if (sqlite3_open(tmp.c_str(), &db) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error("cannot create " + tmp + ": " + msg);
  }
  try {
    exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
    exec(db,
         "CREATE TABLE customers(id INTEGER PRIMARY KEY, name TEXT NOT NULL, company TEXT NOT NULL, "
         "email TEXT NOT NULL, phone TEXT NOT NULL, address TEXT NOT NULL, city TEXT NOT NULL, "
         "country TEXT NOT NULL, balance_cents INTEGER NOT NULL);"
         "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, order_date TEXT NOT NULL, "
         "status INTEGER NOT NULL, total_cents INTEGER NOT NULL);");
    exec(db, "BEGIN");
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO customers VALUES(?,?,?,?,?,?,?,?,?)", -1, &st, nullptr);
    for (int64_t i = 1; i <= kCustomers; ++i) {
      Customer c = make_customer(i);
      sqlite3_bind_int64(st, 1, c.id);
      const std::string* texts[] = {&c.name, &c.company, &c.email, &c.phone, &c.address, &c.city, &c.country};
      for (int k = 0; k < 7; ++k) sqlite3_bind_text(st, 2 + k, texts[k]->c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 9, c.balance_cents);
      if (sqlite3_step(st) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db));
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_prepare_v2(db, "INSERT INTO orders VALUES(?,?,?,?,?)", -1, &st, nullptr);
    for (int64_t i = 1; i <= kOrders; ++i) {
      OrderRow o = make_order(i);
      sqlite3_bind_int64(st, 1, o.id);
      sqlite3_bind_int64(st, 2, o.customer_id);
      sqlite3_bind_text(st, 3, o.order_date.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(st, 4, o.status);
      sqlite3_bind_int64(st, 5, o.total_cents);
      if (sqlite3_step(st) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db));
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    exec(db, "CREATE INDEX orders_customer ON orders(customer_id); COMMIT;");
  } catch (...) {
    sqlite3_close(db);
    ::unlink(tmp.c_str());
    throw;
  }
  sqlite3_close(db);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
  return true;
}

const char* method_name(Method m) { return m == Method::GetOrderStatus ? "GetOrderStatus" : "GetCustomers"; }

}  // namespace txray::samples::orders
