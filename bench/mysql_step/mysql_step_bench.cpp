// txray-bench-mysql-step: the cost of one MySQL/MariaDB statement as a program sees it.
//
//   txray-bench-mysql-step HOST PORT USER DATABASE N BATCH prepared|text
//
// A table of 1,000 rows on a real server; each statement is a primary-key lookup returning one row:
//   prepared: "SELECT v FROM kv WHERE id = ?" prepared once; per statement the parameter is set,
//             mysql_stmt_execute + mysql_stmt_store_result + mysql_stmt_fetch to the end + free_result;
//   text:     mysql_real_query("SELECT v FROM kv WHERE id = <n>") + mysql_store_result + mysql_fetch_row
//             to the end + mysql_free_result (the agent masks the text of every one of them).
// With BATCH = 0 the statements simply run (under TXRAY_MODE=process the run is one transaction: past
// the step limit they are folded into the summary); with BATCH > 0 a transaction is begun and ended
// through the C API around every BATCH statements, so each statement is a full profile row. Only the
// statements are timed, inside run_statements() (callgrind counts that function: --toggle-collect).
// Prints "ns_per_stmt WALL CPU": wall-clock and thread-CPU ns per statement (the server's time is in
// the wall figure only; CPU is the client's own work, which is where the agent adds).
#include <mariadb/mysql.h>
#include <txray/txray.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRows = 1000;

MYSQL* g_db = nullptr;

long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "txray-bench-mysql-step: %s: %s\n", what, g_db ? mysql_error(g_db) : "?");
  std::exit(1);
}

void exec(const char* q) {
  if (mysql_query(g_db, q) != 0) die(q);
}

void fill() {
  exec("CREATE TABLE IF NOT EXISTS kv (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)");
  MYSQL_RES* r = nullptr;
  exec("SELECT COUNT(*) FROM kv");
  if (!(r = mysql_store_result(g_db))) die("count");
  MYSQL_ROW row = mysql_fetch_row(r);
  bool full = row && row[0] && std::atoi(row[0]) == kRows;
  mysql_free_result(r);
  if (full) return;
  exec("DELETE FROM kv");
  char q[128];
  for (int i = 0; i < kRows; ++i) {
    std::snprintf(q, sizeof q, "INSERT INTO kv VALUES (%d, 'value-%d')", i, i);
    exec(q);
  }
}

struct Prepared {
  MYSQL_STMT* st = nullptr;
  int id = 0;
  char out[33];
  unsigned long out_len = 0;
  MYSQL_BIND param{}, result{};
};

void prepare(Prepared& p) {
  p.st = mysql_stmt_init(g_db);
  const char* q = "SELECT v FROM kv WHERE id = ?";
  if (!p.st || mysql_stmt_prepare(p.st, q, std::strlen(q))) die("prepare");
  p.param.buffer_type = MYSQL_TYPE_LONG;
  p.param.buffer = &p.id;
  p.result.buffer_type = MYSQL_TYPE_STRING;
  p.result.buffer = p.out;
  p.result.buffer_length = sizeof p.out;
  p.result.length = &p.out_len;
  if (mysql_stmt_bind_param(p.st, &p.param) || mysql_stmt_bind_result(p.st, &p.result)) die("bind");
}

long lookup_prepared(Prepared& p, int id) {
  p.id = id;
  if (mysql_stmt_execute(p.st) || mysql_stmt_store_result(p.st)) die("execute");
  long n = 0;
  while (mysql_stmt_fetch(p.st) == 0) n += long(p.out_len);
  mysql_stmt_free_result(p.st);
  return n;
}

long lookup_text(int id) {
  char q[64];
  int len = std::snprintf(q, sizeof q, "SELECT v FROM kv WHERE id = %d", id);
  if (mysql_real_query(g_db, q, (unsigned long)len)) die("query");
  MYSQL_RES* r = mysql_store_result(g_db);
  if (!r) die("store");
  long n = 0;
  while (MYSQL_ROW row = mysql_fetch_row(r)) n += row[0] ? long(std::strlen(row[0])) : 0;
  mysql_free_result(r);
  return n;
}

// The measured loop (callgrind: --toggle-collect=*run_statements*).
__attribute__((noinline)) long run_statements(bool text, Prepared& p, long first, long count) {
  long sink = 0;
  for (long i = first; i < first + count; ++i) {
    int id = int(i * 7919 % kRows);
    sink += text ? lookup_text(id) : lookup_prepared(p, id);
  }
  return sink;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: txray-bench-mysql-step HOST PORT USER DATABASE N BATCH prepared|text\n");
    return 2;
  }
  long n = std::atol(argv[5]), batch = std::atol(argv[6]);
  bool text = std::strcmp(argv[7], "text") == 0;
  if (n <= 0 || batch < 0) {
    std::fprintf(stderr, "txray-bench-mysql-step: N must be > 0 and BATCH >= 0\n");
    return 2;
  }
  g_db = mysql_init(nullptr);
  if (!mysql_real_connect(g_db, argv[1], argv[3], "", argv[4], unsigned(std::atoi(argv[2])), nullptr, 0))
    die("connect");
  fill();
  Prepared p;
  prepare(p);
  long sink = run_statements(text, p, 0, 200);  // warm-up

  Clock::duration spent{};
  long cpu = 0;
  long done = 0;
  while (done < n) {
    long chunk = batch ? std::min(batch, n - done) : n;
    if (batch) txray_begin("mysql-step batch");
    long c0 = thread_cpu_ns();
    auto t0 = Clock::now();
    sink += run_statements(text, p, done, chunk);
    spent += Clock::now() - t0;
    cpu += thread_cpu_ns() - c0;
    if (batch) txray_end(0, nullptr);
    done += chunk;
  }
  mysql_stmt_close(p.st);
  mysql_close(g_db);
  double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) / double(n);
  std::printf("ns_per_stmt %.0f %.0f\n", ns, double(cpu) / double(n));
  return sink > 0 ? 0 : 1;
}
