// txray-test-mysql-client: a MySQL/MariaDB C API client for tests/e2e/test_mariadb.py. It runs one fixed
// script against a server through every entry point the agent hooks and prints what the library said, so
// that a run under the agent can be compared with a bare run and with the rows the agent recorded.
//
//   txray-test-mysql-client HOST PORT USER DATABASE
//
// Literal values that must never reach the store contain "secret".
#include <mariadb/mysql.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

MYSQL* g_db = nullptr;

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "mysql_client: %s: %s\n", what, g_db ? mysql_error(g_db) : "?");
  std::exit(2);
}

// A query whose result (if any) is read whole with mysql_store_result. Prints rows / changes / error.
void run(const char* label, const char* q) {
  if (mysql_query(g_db, q) != 0) {
    std::printf("%s: error %u %s\n", label, mysql_errno(g_db), mysql_sqlstate(g_db));
    return;
  }
  if (mysql_field_count(g_db) == 0) {
    std::printf("%s: changes %llu\n", label, (unsigned long long)mysql_affected_rows(g_db));
    return;
  }
  MYSQL_RES* res = mysql_store_result(g_db);
  if (!res) die(label);
  unsigned long n = 0;
  while (mysql_fetch_row(res)) ++n;
  std::printf("%s: rows %lu\n", label, n);
  mysql_free_result(res);
}

// The same query read row by row (mysql_use_result), sent with mysql_real_query.
void run_use(const char* label, const char* q) {
  if (mysql_real_query(g_db, q, std::strlen(q)) != 0) die(label);
  MYSQL_RES* res = mysql_use_result(g_db);
  if (!res) die(label);
  unsigned long n = 0;
  while (mysql_fetch_row(res)) ++n;
  std::printf("%s: rows %lu\n", label, n);
  mysql_free_result(res);
}

MYSQL_STMT* prepare(const char* q) {
  MYSQL_STMT* st = mysql_stmt_init(g_db);
  if (!st) die("stmt_init");
  if (mysql_stmt_prepare(st, q, std::strlen(q)) != 0) {
    std::printf("prepare: error %u %s\n", mysql_stmt_errno(st), mysql_stmt_sqlstate(st));
    mysql_stmt_close(st);
    return nullptr;
  }
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s HOST PORT USER DATABASE\n", argv[0]);
    return 2;
  }
  const char* host = argv[1];
  unsigned port = unsigned(std::atoi(argv[2]));
  const char* user = argv[3];
  const char* dbname = argv[4];

  // A connection that fails: a user the server does not know.
  MYSQL* bad = mysql_init(nullptr);
  if (mysql_real_connect(bad, host, "nobody", "pw-secret-0", dbname, port, nullptr, 0))
    std::printf("bad connect: connected?\n");
  else
    std::printf("bad connect: error %u %s\n", mysql_errno(bad), mysql_sqlstate(bad));
  mysql_close(bad);

  g_db = mysql_init(nullptr);
  if (!mysql_real_connect(g_db, host, user, "", dbname, port, nullptr, 0)) die("connect");
  std::printf("connected\n");

  run("create", "CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(64) NOT NULL, "
                "balance DECIMAL(10,2), note TEXT)");
  run("insert", "INSERT INTO accounts VALUES (1, 'o\\'neil-secret-1', 10.50, \"dq-secret-2\"), "
                "(2, 'bob', 20.25, NULL), (3, 'carol', 7.00, 'x'), (4, 'dave', 99.99, 'y')");
  run("select", "SELECT id, owner FROM accounts WHERE balance > 8.5 # comment-secret-3\n ORDER BY id");
  run_use("select use", "SELECT `id`, `owner` FROM `accounts` ORDER BY id");
  run("update", "UPDATE accounts SET balance = balance - 1.25 WHERE id IN (1, 2, 3)");
  run("missing table", "SELECT * FROM no_such_table WHERE k = 'secret-4'");
  run("duplicate", "INSERT INTO accounts (id, owner) VALUES (1, 'dup-secret-5')");

  // Prepared statements: a lookup with an int and a string parameter, stored, then fetched unbuffered.
  if (MYSQL_STMT* st = prepare("SELECT owner FROM accounts WHERE id >= ? AND owner <> ?")) {
    int id = 2;
    char name[32] = "bind-secret-6";
    unsigned long name_len = std::strlen(name);
    MYSQL_BIND p[2];
    std::memset(p, 0, sizeof p);
    p[0].buffer_type = MYSQL_TYPE_LONG;
    p[0].buffer = &id;
    p[1].buffer_type = MYSQL_TYPE_STRING;
    p[1].buffer = name;
    p[1].buffer_length = sizeof name;
    p[1].length = &name_len;
    if (mysql_stmt_bind_param(st, p)) die("bind_param");
    char out[65];
    unsigned long out_len = 0;
    MYSQL_BIND r[1];
    std::memset(r, 0, sizeof r);
    r[0].buffer_type = MYSQL_TYPE_STRING;
    r[0].buffer = out;
    r[0].buffer_length = sizeof out;
    r[0].length = &out_len;
    for (int round = 0; round < 2; ++round) {
      if (mysql_stmt_execute(st)) die("execute");
      if (mysql_stmt_bind_result(st, r)) die("bind_result");
      if (round == 0 && mysql_stmt_store_result(st)) die("store");
      int n = 0;
      while (mysql_stmt_fetch(st) == 0) ++n;
      std::printf("stmt select %d: rows %d\n", round, n);
      mysql_stmt_free_result(st);
      id = 3;  // the next execution reads the new value from the same buffer
    }
    mysql_stmt_close(st);
  }

  // Prepared inserts: an int, a string, a NULL; then one that breaks the primary key.
  if (MYSQL_STMT* st = prepare("INSERT INTO accounts (id, owner, balance) VALUES (?, ?, ?)")) {
    int id = 10;
    char owner[32];
    unsigned long owner_len = 0;
    double balance = 1.5;
    my_bool balance_null = 1;
    MYSQL_BIND p[3];
    std::memset(p, 0, sizeof p);
    p[0].buffer_type = MYSQL_TYPE_LONG;
    p[0].buffer = &id;
    p[1].buffer_type = MYSQL_TYPE_STRING;
    p[1].buffer = owner;
    p[1].buffer_length = sizeof owner;
    p[1].length = &owner_len;
    p[2].buffer_type = MYSQL_TYPE_DOUBLE;
    p[2].buffer = &balance;
    p[2].is_null = &balance_null;
    if (mysql_stmt_bind_param(st, p)) die("bind_param insert");
    for (int i = 0; i < 4; ++i) {
      id = i < 3 ? 10 + i : 1;
      owner_len = std::snprintf(owner, sizeof owner, "stmt-secret-%d", 7 + i);
      if (mysql_stmt_execute(st) != 0)
        std::printf("stmt insert %d: error %u %s\n", i, mysql_stmt_errno(st), mysql_stmt_sqlstate(st));
      else
        std::printf("stmt insert %d: changes %llu\n", i, (unsigned long long)mysql_stmt_affected_rows(st));
    }
    mysql_stmt_close(st);
  }
  prepare("SELEKT owner FROM accounts WHERE id = 'secret-11'");  // a syntax error at prepare

  // The split API: send now, read the answer later.
  const char* q = "SELECT COUNT(*) FROM accounts WHERE owner LIKE 'stmt-%'";
  if (mysql_send_query(g_db, q, std::strlen(q)) != 0) die("send_query");
  if (mysql_read_query_result(g_db) != 0) die("read_query_result");
  MYSQL_RES* res = mysql_store_result(g_db);
  if (!res) die("store after read");
  MYSQL_ROW row = mysql_fetch_row(res);
  std::printf("send/read: count %s\n", row && row[0] ? row[0] : "?");
  mysql_free_result(res);

  mysql_close(g_db);
  std::printf("done\n");
  return 0;
}
