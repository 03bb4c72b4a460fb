#include "checkpointer.h"

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>

#include <cstdio>

#include "sqlite_handle.h"

namespace txray::ingest {

namespace {
thread_local sqlite3* t_conn = nullptr;  // the checkpointer thread's own connection
}

Checkpointer::Checkpointer(const std::string& db_path, std::chrono::milliseconds interval)
    : path_(db_path), interval_(interval) {
  // Open here, so that a failure is reported to the caller, then hand the connection to the thread.
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = h ? sqlite3_errmsg(h) : "out of memory";
    sqlite3_close_v2(h);
    throw StoreError("cannot open " + path_ + " for checkpoints: " + msg);
  }
  sqlite3_busy_timeout(h, 2000);
  // A connection learns that the file is in WAL mode only when it first reads it; until then
  // sqlite3_wal_checkpoint_v2 is a silent no-op (it was: the WAL grew without bound while the collector
  // ran, and a collector killed with -9 left all of it behind for the next one to wade through).
  if (sqlite3_exec(h, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(h);
    sqlite3_close_v2(h);
    throw StoreError("cannot read " + path_ + " for checkpoints: " + msg);
  }
  thread_ = std::thread([this, h] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "txray-ckpt");
    t_conn = h;
    run();
    sqlite3_close_v2(h);
  });
}

Checkpointer::~Checkpointer() { stop(); }

void Checkpointer::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Checkpointer::checkpoint(const char* mode) {
  int rc = sqlite3_wal_checkpoint_v2(t_conn, nullptr,
                                     std::string_view(mode) == "TRUNCATE" ? SQLITE_CHECKPOINT_TRUNCATE
                                                                          : SQLITE_CHECKPOINT_PASSIVE,
                                     nullptr, nullptr);
  // SQLITE_BUSY: a reader (txray show, the viewer) still uses old pages; the next round catches up.
  return rc == SQLITE_OK;
}

void Checkpointer::run() {
  std::unique_lock lk(mu_);
  while (!stopping_) {
    cv_.wait_for(lk, interval_, [&] { return stopping_; });
    if (stopping_) break;
    lk.unlock();
    checkpoint("PASSIVE");
    lk.lock();
  }
  lk.unlock();
  if (!checkpoint("TRUNCATE")) checkpoint("PASSIVE");
}

}  // namespace txray::ingest
