#include "store_writer.h"

#include <stdexcept>

#include "txray/schema_sql.h"

namespace txray::gen {

namespace {
constexpr int64_t kRowsPerCommit = 50000;

void bind_text(sqlite3_stmt* st, int i, const std::string& s) {
  if (s.empty())
    sqlite3_bind_null(st, i);
  else
    sqlite3_bind_text(st, i, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
}
void bind_opt(sqlite3_stmt* st, int i, const std::optional<int64_t>& v) {
  if (v)
    sqlite3_bind_int64(st, i, *v);
  else
    sqlite3_bind_null(st, i);
}
}  // namespace

StoreWriter::StoreWriter(const std::string& path, const Catalog& catalog, Mode mode) : mode_(mode) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 5000);
  if (mode_ == Mode::kBulk) {
    exec("PRAGMA journal_mode=OFF");
    exec("PRAGMA synchronous=OFF");
  } else {
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
  }
  exec("PRAGMA cache_size=-262144");  // 256 MiB
  exec(kSchemaSql);
  if (mode_ == Mode::kBulk) {
    // Built once at the end from sorted data instead of row by row (the schema recreates them).
    exec("DROP INDEX IF EXISTS transactions_txid");
    exec("DROP INDEX IF EXISTS transactions_trace");
  }

  exec("BEGIN");
  sqlite3_stmt* ins = prepare("INSERT OR IGNORE INTO texts(hash, text) VALUES (?, ?)");
  sqlite3_stmt* get = prepare("SELECT id FROM texts WHERE hash = ?");
  for (const auto& t : catalog.texts) {
    const auto h = static_cast<int64_t>(fnv1a64(t));
    sqlite3_bind_int64(ins, 1, h);
    bind_text(ins, 2, t);
    step(ins);
    sqlite3_bind_int64(get, 1, h);
    if (sqlite3_step(get) != SQLITE_ROW) throw std::runtime_error("texts: lookup failed");
    text_ids_.push_back(sqlite3_column_int64(get, 0));
    sqlite3_reset(get);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(get);

  ins = prepare(
      "INSERT OR IGNORE INTO agents(instance_id, host, pid, ppid, program, app, agent_version, start_unix_ns, "
      "mode, command_line, first_seen_unix_ns, last_seen_unix_ns, batches) "
      "VALUES (?, ?, ?, 1, 'gen-store', ?, 'gen', 0, 'http', 'txray-gen-store', 0, 0, 0)");
  get = prepare("SELECT id FROM agents WHERE instance_id = ?");
  for (const auto& a : catalog.agents) {
    sqlite3_bind_int64(ins, 1, a.instance_id);
    bind_text(ins, 2, a.host);
    sqlite3_bind_int(ins, 3, a.pid);
    bind_text(ins, 4, a.app);
    step(ins);
    sqlite3_bind_int64(get, 1, a.instance_id);
    if (sqlite3_step(get) != SQLITE_ROW) throw std::runtime_error("agents: lookup failed");
    agent_ids_.push_back(sqlite3_column_int64(get, 0));
    sqlite3_reset(get);
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(get);
  exec("COMMIT");

  ins_tx_ = prepare(
      "INSERT INTO transactions(id, txid, trace_id, parent_span_id, agent_id, app, name, kind, start_unix_ns, "
      "end_unix_ns, elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, sql_count, call_count, status, error, "
      "client_addr, bytes_read, bytes_written, tid, step_count, attributes) "
      "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  ins_step_ = prepare(
      "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, bytes_read, "
      "bytes_written, text_id, error, ref_id, rows, fetch_ns, fingerprint, status, changes, attributes, "
      "callee_tx_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
}

StoreWriter::~StoreWriter() {
  sqlite3_finalize(ins_tx_);
  sqlite3_finalize(ins_step_);
  if (db_) {
    if (in_tx_) sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
}

void StoreWriter::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(std::string("sqlite: ") + msg);
  }
}

sqlite3_stmt* StoreWriter::prepare(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db_));
  return st;
}

void StoreWriter::step(sqlite3_stmt* st) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) throw std::runtime_error(std::string("sqlite insert: ") + sqlite3_errmsg(db_));
}

int64_t StoreWriter::next_id() const {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT COALESCE(MAX(id), 0) + 1 FROM transactions", -1, &st, nullptr);
  int64_t id = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 1;
  sqlite3_finalize(st);
  return id;
}

void StoreWriter::add(const TxRow& tx) {
  if (!in_tx_) {
    exec("BEGIN");
    in_tx_ = true;
  }
  sqlite3_stmt* t = ins_tx_;
  int i = 1;
  sqlite3_bind_int64(t, i++, tx.id);
  sqlite3_bind_int64(t, i++, tx.txid);
  bind_text(t, i++, tx.trace_id);
  sqlite3_bind_int64(t, i++, tx.parent_span_id);
  sqlite3_bind_int64(t, i++, agent_ids_[static_cast<size_t>(tx.agent)]);
  bind_text(t, i++, tx.app);
  bind_text(t, i++, tx.name);
  bind_text(t, i++, tx.kind);
  sqlite3_bind_int64(t, i++, tx.start_unix_ns);
  sqlite3_bind_int64(t, i++, tx.end_unix_ns);
  sqlite3_bind_int64(t, i++, tx.elapsed_ns);
  sqlite3_bind_int64(t, i++, tx.cpu_ns);
  sqlite3_bind_int64(t, i++, tx.sql_ns);
  sqlite3_bind_int64(t, i++, tx.fetch_ns);
  sqlite3_bind_int64(t, i++, tx.call_ns);
  sqlite3_bind_int(t, i++, tx.sql_count);
  sqlite3_bind_int(t, i++, tx.call_count);
  sqlite3_bind_int(t, i++, tx.status);
  bind_text(t, i++, tx.error);
  bind_text(t, i++, tx.client_addr);
  sqlite3_bind_int64(t, i++, tx.bytes_read);
  sqlite3_bind_int64(t, i++, tx.bytes_written);
  sqlite3_bind_int64(t, i++, tx.tid);
  sqlite3_bind_int64(t, i++, static_cast<int64_t>(tx.steps.size()));
  bind_text(t, i++, tx.attributes);
  step(t);

  sqlite3_stmt* s = ins_step_;
  int no = 0;
  for (const auto& r : tx.steps) {
    i = 1;
    sqlite3_bind_int64(s, i++, tx.id);
    sqlite3_bind_int(s, i++, no++);
    sqlite3_bind_int(s, i++, r.parent);
    sqlite3_bind_text(s, i++, r.kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, i++, r.start_offset_ns);
    sqlite3_bind_int64(s, i++, r.gap_ns);
    sqlite3_bind_int64(s, i++, r.cpu_ns);
    sqlite3_bind_int64(s, i++, r.elapsed_ns);
    sqlite3_bind_int64(s, i++, r.bytes_read);
    sqlite3_bind_int64(s, i++, r.bytes_written);
    if (r.text >= 0)
      sqlite3_bind_int64(s, i++, text_ids_[static_cast<size_t>(r.text)]);
    else
      sqlite3_bind_null(s, i++);
    bind_text(s, i++, r.error);
    bind_opt(s, i++, r.ref_id);
    bind_opt(s, i++, r.rows);
    bind_opt(s, i++, r.fetch_ns);
    bind_opt(s, i++, r.fingerprint);
    bind_opt(s, i++, r.status);
    bind_opt(s, i++, r.changes);
    bind_text(s, i++, r.attributes);
    bind_opt(s, i++, r.callee_tx_id);
    step(s);
  }
  pending_ += 1 + static_cast<int64_t>(tx.steps.size());
  rows_ += 1 + static_cast<int64_t>(tx.steps.size());
  if (pending_ >= kRowsPerCommit) flush();
}

void StoreWriter::flush() {
  if (in_tx_) {
    exec("COMMIT");
    in_tx_ = false;
  }
  pending_ = 0;
}

void StoreWriter::close() {
  flush();
  if (mode_ == Mode::kBulk) {
    exec(kSchemaSql);  // recreates the indexes dropped while filling
    exec("PRAGMA journal_mode=WAL");
  }
}

}  // namespace txray::gen
