// Moves SQLite's WAL checkpoints off the writer thread. In WAL mode with synchronous=NORMAL a commit
// never waits for the disk, but a checkpoint (copying the WAL back into the database file) calls
// fdatasync twice; run by the committing thread (SQLite's default, wal_autocheckpoint) that stalls the
// writer for as long as the disk takes. Here a thread of its own, with its own connection, runs a
// PASSIVE checkpoint (never blocks the writer) every interval, and a TRUNCATE one at the end so the
// file is left with an empty WAL.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace txray::ingest {

class Checkpointer {
 public:
  // The writer's connection must have wal_autocheckpoint=0. Throws StoreError when the file cannot be opened.
  Checkpointer(const std::string& db_path, std::chrono::milliseconds interval);
  ~Checkpointer();  // stop(), if not done

  // Ends the thread after a last, complete checkpoint. Call once the writer has committed its last rows.
  void stop();

 private:
  void run();
  bool checkpoint(const char* mode);

  std::string path_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace txray::ingest
