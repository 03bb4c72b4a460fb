// txray-bench-stack-capture: what one captured stack costs the calling thread.
//
//   txray-bench-stack-capture N ok|fail DEPTH BATCH
//
// An in-memory SQLite table; "INSERT INTO kv(id) VALUES (?)" is prepared once and run N times from a
// call chain DEPTH functions deep (so that libunwind walks a stack of a realistic height: past the 32
// frames it keeps). `ok` inserts fresh keys (a successful, quick step: no stack); `fail` inserts a key
// that exists (SQLITE_CONSTRAINT: a failed step, which gets a stack when TXRAY_STACKS is not 0). A
// transaction is begun and ended through the C API around every BATCH statements, so each statement is a
// profile row. Only the statements are timed. Prints "ns_per_stmt WALL CPU" (thread CPU is what to
// compare on a loaded machine). run.sh runs ok, fail with TXRAY_STACKS=0 and fail with stacks on.
#include <sqlite3.h>
#include <txray/txray.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

using Clock = std::chrono::steady_clock;

long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

[[noreturn]] void die(sqlite3* db, const char* what) {
  std::fprintf(stderr, "txray-bench-stack-capture: %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
  std::exit(1);
}

sqlite3* g_db = nullptr;
sqlite3_stmt* g_st = nullptr;

// One execution; returns 1 when it failed as intended.
__attribute__((noinline)) int execute(long key, bool fail) {
  sqlite3_bind_int64(g_st, 1, fail ? 0 : key);
  int rc = sqlite3_step(g_st);
  sqlite3_reset(g_st);
  if (fail != (rc == SQLITE_CONSTRAINT)) die(g_db, fail ? "expected a constraint error" : "insert");
  return fail ? 1 : 0;
}

// DEPTH frames of the program above the statement.
__attribute__((noinline)) int nested(int depth, long key, bool fail) {
  int r = depth > 0 ? nested(depth - 1, key, fail) : execute(key, fail);
  __asm__ volatile("" ::: "memory");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5 || (std::strcmp(argv[2], "ok") && std::strcmp(argv[2], "fail"))) {
    std::fprintf(stderr, "usage: txray-bench-stack-capture N ok|fail DEPTH BATCH\n");
    return 2;
  }
  long n = std::atol(argv[1]), batch = std::atol(argv[4]);
  bool fail = !std::strcmp(argv[2], "fail");
  int depth = std::atoi(argv[3]);
  if (n <= 0 || batch <= 0 || depth < 0 || depth > 200) return 2;
  if (sqlite3_open(":memory:", &g_db) != SQLITE_OK) die(g_db, "open");
  if (sqlite3_exec(g_db, "CREATE TABLE kv(id INTEGER PRIMARY KEY); INSERT INTO kv VALUES (0);", nullptr, nullptr,
                   nullptr) != SQLITE_OK)
    die(g_db, "create");
  if (sqlite3_prepare_v2(g_db, "INSERT INTO kv(id) VALUES (?)", -1, &g_st, nullptr) != SQLITE_OK) die(g_db, "prepare");
  long key = 1, sink = 0;
  txray_begin("warm-up");
  for (int i = 0; i < 200; ++i) sink += nested(depth, key++, fail);  // also loads libunwind (first stack)
  txray_end(0, nullptr);

  Clock::duration spent{};
  long cpu = 0, done = 0;
  while (done < n) {
    long chunk = std::min(batch, n - done);
    txray_begin("stack-capture batch");
    long c0 = thread_cpu_ns();
    auto t0 = Clock::now();
    for (long i = 0; i < chunk; ++i) sink += nested(depth, key++, fail);
    spent += Clock::now() - t0;
    cpu += thread_cpu_ns() - c0;
    txray_end(0, nullptr);
    done += chunk;
  }
  sqlite3_finalize(g_st);
  sqlite3_close(g_db);
  double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) / double(n);
  std::printf("ns_per_stmt %.0f %.0f\n", ns, double(cpu) / double(n));
  return sink >= 0 ? 0 : 1;
}
