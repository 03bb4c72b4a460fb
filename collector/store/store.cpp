#include "store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "schema_sql.h"  // generated from schema.sql by CMake: kSchemaSql

namespace txray {

const char* schema_sql() { return kSchemaSql; }

namespace {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Reads meta.schema_version; "" when the table or the key is missing. Also surfaces "file is not a
// database" from SQLite, which only shows up on the first read.
std::string schema_version(const Db& db, const std::string& path) {
  try {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
    has.step();
    if (has.i64(0) == 0) return "";
    Stmt v(db, "SELECT value FROM meta WHERE key='schema_version'");
    return v.step() ? v.text(0) : "";
  } catch (const StoreError& e) {
    throw StoreError(path + " is not a txray store (" + e.what() + ")");
  }
}

// A new store is created readable and writable by its owner only (0600, whatever the umask): it holds
// URLs, SQL, client addresses. SQLite gives the -wal and -shm files the mode of the database file.
// An existing file keeps the mode its owner gave it.
void create_private(const std::string& path) {
  if (path.empty() || path[0] == ':' || path.rfind("file:", 0) == 0) return;  // :memory:, URIs
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) return;
    throw StoreError("cannot create " + path + ": " + std::strerror(errno));
  }
  ::fchmod(fd, 0600);
  ::close(fd);
}

int table_count(const Db& db) {
  Stmt s(db, "SELECT count(*) FROM sqlite_master WHERE type='table'");
  s.step();
  return static_cast<int>(s.i64(0));
}

}  // namespace

Db open_store(const std::string& path, OpenMode mode) {
  if (path.empty()) throw StoreError("no database file given");
  if (mode == OpenMode::kReadOnly && !file_exists(path)) throw StoreError(path + " does not exist");

  if (mode == OpenMode::kCreate) create_private(path);
  int flags = mode == OpenMode::kCreate ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  sqlite3* h = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &h, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(h);
  if (rc != SQLITE_OK) {
    throw StoreError("cannot open " + path + ": " + (h ? sqlite3_errmsg(h) : sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(h, 5000);

  std::string version = schema_version(db, path);
  if (mode == OpenMode::kReadOnly) {
    if (version.empty()) throw StoreError(path + " is not a txray store (no schema_version in table meta)");
  } else {
    // Never write our tables into somebody else's database.
    if (version.empty() && table_count(db) > 0) {
      throw StoreError(path + " is an SQLite database but not a txray store; refusing to write to it");
    }
    db.exec("PRAGMA journal_mode=WAL");
    db.exec("PRAGMA synchronous=NORMAL");
    // The writer inserts into indexes keyed by random ids (txid, trace id): a 64 MiB page cache keeps
    // their pages in memory between commits, and rarer checkpoints rewrite them less often.
    db.exec("PRAGMA cache_size=-65536");
    db.exec("PRAGMA wal_autocheckpoint=4000");
    db.exec(kSchemaSql);
    version = schema_version(db, path);
  }
  if (version != std::to_string(kSchemaVersion)) {
    throw StoreError(path + " has txray schema version " + version + "; this txray reads version " +
                     std::to_string(kSchemaVersion));
  }
  return db;
}

}  // namespace txray
