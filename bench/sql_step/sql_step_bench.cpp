// txray-bench-sql-step: the cost of one SQL statement execution as a program sees it.
//
//   txray-bench-sql-step N BATCH
//
// An in-memory SQLite table of 10,000 rows; "SELECT v FROM kv WHERE id = ?" is prepared once, then run
// N times (bind + step + step to done + reset, a primary-key lookup returning one row). With BATCH = 0
// the statements simply run (under TXRAY_MODE=process the whole run is one transaction, so past the
// step limit they are folded into the summary); with BATCH > 0 a transaction is begun and ended through
// the C API around every BATCH statements, so each statement is a full profile row. Only the
// statements are timed (not txray_begin/txray_end). Prints "ns_per_stmt WALL CPU": wall-clock and
// thread-CPU nanoseconds per statement (CPU time is what to compare on a loaded machine: time the thread
// spent waiting for a core is not in it).
#include <sqlite3.h>
#include <txray/txray.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using Clock = std::chrono::steady_clock;

long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

[[noreturn]] void die(sqlite3* db, const char* what) {
  std::fprintf(stderr, "txray-bench-sql-step: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  std::exit(1);
}

constexpr int kRows = 10000;

void fill(sqlite3* db) {
  if (sqlite3_exec(db, "CREATE TABLE kv(id INTEGER PRIMARY KEY, v TEXT NOT NULL); BEGIN;", nullptr, nullptr,
                   nullptr) != SQLITE_OK)
    die(db, "create");
  sqlite3_stmt* ins = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO kv(id, v) VALUES (?, ?)", -1, &ins, nullptr) != SQLITE_OK)
    die(db, "prepare insert");
  char v[32];
  for (int i = 0; i < kRows; ++i) {
    std::snprintf(v, sizeof v, "value-%d", i);
    sqlite3_bind_int(ins, 1, i);
    sqlite3_bind_text(ins, 2, v, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(ins) != SQLITE_DONE) die(db, "insert");
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) die(db, "commit");
}

// One lookup; returns the length of the value read (so the work cannot be optimized away).
long lookup(sqlite3* db, sqlite3_stmt* st, int id) {
  sqlite3_bind_int(st, 1, id);
  if (sqlite3_step(st) != SQLITE_ROW) die(db, "lookup");
  long n = sqlite3_column_bytes(st, 0);
  if (sqlite3_step(st) != SQLITE_DONE) die(db, "lookup done");
  sqlite3_reset(st);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: txray-bench-sql-step N BATCH\n");
    return 2;
  }
  long n = std::atol(argv[1]), batch = std::atol(argv[2]);
  if (n <= 0 || batch < 0) {
    std::fprintf(stderr, "txray-bench-sql-step: N must be > 0 and BATCH >= 0\n");
    return 2;
  }
  sqlite3* db = nullptr;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) die(db, "open");
  fill(db);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT v FROM kv WHERE id = ?", -1, &st, nullptr) != SQLITE_OK) die(db, "prepare");
  long sink = 0;
  for (int i = 0; i < 2000; ++i) sink += lookup(db, st, i % kRows);  // warm-up

  Clock::duration spent{};
  long cpu = 0;
  long done = 0;
  while (done < n) {
    long chunk = batch ? std::min(batch, n - done) : n;
    if (batch) txray_begin("sql-step batch");
    long c0 = thread_cpu_ns();
    auto t0 = Clock::now();
    for (long i = 0; i < chunk; ++i) sink += lookup(db, st, int((done + i) * 7919 % kRows));
    spent += Clock::now() - t0;
    cpu += thread_cpu_ns() - c0;
    if (batch) txray_end(0, nullptr);
    done += chunk;
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) / double(n);
  std::printf("ns_per_stmt %.0f %.0f\n", ns, double(cpu) / double(n));
  return sink > 0 ? 0 : 1;
}
