#include "store_fixture.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace txray::test {

TxSpec reference_tx(int64_t id, int64_t end_ns, int64_t callee) {
  TxSpec tx;
  tx.id = id;
  tx.app = "portal";
  tx.name = "GET /reports/{id}";
  tx.end_ns = end_ns;
  tx.elapsed_ns = 2942 * kMs;
  tx.cpu_ns = 1356 * kMs;
  tx.trace_id = "0123456789abcdef0123456789abcdef";
  tx.steps = {
      {"START"},
      {"HTTP_CALL", -1, 12 * kMs, 12 * kMs, 0, 2929 * kMs, "http://reports:8082/export/7", callee, 777, 51612, 222},
      {"SOCKET", 1, 12 * kMs, 0, 0, 0, "", std::nullopt, 34069859, 0, 0,
       R"({"addr":"192.168.50.2","port":"8005","localport":"13192"})"},
      {"SOCKET_CLOSE", 1, 1478 * kMs, 1466 * kMs, 0, 0, "", std::nullopt, 34069859, 51612, 222},
      {"END", -1, 2942 * kMs, 1464 * kMs, 1356 * kMs},
  };
  return tx;
}

TxSpec unattributed_container(int64_t id, int64_t end_ns, std::vector<StepSpec> steps) {
  TxSpec tx;
  tx.id = id;
  tx.name = "unattributed steps";
  tx.kind = "unattributed";
  tx.end_ns = end_ns;
  tx.elapsed_ns = 1000 * kMs;
  tx.status = 0;
  tx.steps.push_back({"START"});
  for (auto& s : steps) tx.steps.push_back(std::move(s));
  tx.steps.push_back({"END", -1, tx.elapsed_ns, tx.elapsed_ns});
  return tx;
}

StoreFixture::StoreFixture() {
  path_ = dir_.filePath("store.db").toStdString();
  if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot create test store");
  std::ifstream schema(TXRAY_SCHEMA_FILE);
  std::stringstream sql;
  sql << schema.rdbuf();
  exec("PRAGMA journal_mode=WAL");
  exec(sql.str());
  exec("INSERT INTO agents(id, instance_id, host, pid, program, app) VALUES (1, 42, 'test-host', 4242, 'svc', 'shop')");
}

StoreFixture::~StoreFixture() { sqlite3_close(db_); }

void StoreFixture::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("test store: " + msg);
  }
}

void StoreFixture::insert(const TxSpec& tx) { insert(std::vector<TxSpec>{tx}); }

void StoreFixture::insert(const std::vector<TxSpec>& txs) {
  exec("BEGIN");
  sqlite3_stmt* t = nullptr;
  sqlite3_stmt* s = nullptr;
  sqlite3_stmt* x = nullptr;
  sqlite3_prepare_v2(db_,
                     "INSERT INTO transactions(id, txid, trace_id, parent_span_id, agent_id, app, name, kind, "
                     "start_unix_ns, end_unix_ns, elapsed_ns, cpu_ns, status, error, client_addr, step_count) "
                     "VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, '10.0.0.1:5000', ?)",
                     -1, &t, nullptr);
  sqlite3_prepare_v2(db_,
                     "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, "
                     "text_id, callee_tx_id, ref_id, bytes_read, bytes_written, attributes) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, (SELECT id FROM texts WHERE text = ?), ?, ?, ?, ?, ?)",
                     -1, &s, nullptr);
  sqlite3_prepare_v2(db_, "INSERT OR IGNORE INTO texts(hash, text) VALUES (?, ?)", -1, &x, nullptr);
  for (const auto& tx : txs) {
    std::vector<StepSpec> steps = tx.steps;
    if (steps.empty()) {
      steps.push_back({"START"});
      steps.push_back({"END", -1, tx.elapsed_ns, tx.elapsed_ns, tx.cpu_ns});
    }
    sqlite3_bind_int64(t, 1, tx.id);
    sqlite3_bind_int64(t, 2, tx.id * 7919);
    if (tx.trace_id.empty()) sqlite3_bind_null(t, 3); else sqlite3_bind_text(t, 3, tx.trace_id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(t, 4, tx.parent_span_id);
    sqlite3_bind_text(t, 5, tx.app.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(t, 6, tx.name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(t, 7, tx.kind.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(t, 8, tx.end_ns - tx.elapsed_ns);
    sqlite3_bind_int64(t, 9, tx.end_ns);
    sqlite3_bind_int64(t, 10, tx.elapsed_ns);
    sqlite3_bind_int64(t, 11, tx.cpu_ns);
    sqlite3_bind_int(t, 12, tx.status);
    if (tx.error.empty()) sqlite3_bind_null(t, 13); else sqlite3_bind_text(t, 13, tx.error.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(t, 14, static_cast<int64_t>(steps.size()));
    if (sqlite3_step(t) != SQLITE_DONE) throw std::runtime_error(std::string("insert tx: ") + sqlite3_errmsg(db_));
    sqlite3_reset(t);
    int no = 0;
    for (const auto& st : steps) {
      if (!st.text.empty()) {
        sqlite3_bind_int64(x, 1, static_cast<int64_t>(std::hash<std::string>{}(st.text)));
        sqlite3_bind_text(x, 2, st.text.c_str(), -1, SQLITE_TRANSIENT);
        sqlite3_step(x);
        sqlite3_reset(x);
      }
      sqlite3_bind_int64(s, 1, tx.id);
      sqlite3_bind_int(s, 2, no++);
      sqlite3_bind_int(s, 3, st.parent);
      sqlite3_bind_text(s, 4, st.kind.c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(s, 5, st.start_offset_ns);
      sqlite3_bind_int64(s, 6, st.gap_ns);
      sqlite3_bind_int64(s, 7, st.cpu_ns);
      sqlite3_bind_int64(s, 8, st.elapsed_ns);
      sqlite3_bind_text(s, 9, st.text.c_str(), -1, SQLITE_TRANSIENT);
      if (st.callee_tx_id) sqlite3_bind_int64(s, 10, *st.callee_tx_id); else sqlite3_bind_null(s, 10);
      if (st.ref_id) sqlite3_bind_int64(s, 11, *st.ref_id); else sqlite3_bind_null(s, 11);
      sqlite3_bind_int64(s, 12, st.bytes_read);
      sqlite3_bind_int64(s, 13, st.bytes_written);
      if (st.attributes.empty()) sqlite3_bind_null(s, 14); else sqlite3_bind_text(s, 14, st.attributes.c_str(), -1, SQLITE_TRANSIENT);
      if (sqlite3_step(s) != SQLITE_DONE) throw std::runtime_error(std::string("insert step: ") + sqlite3_errmsg(db_));
      sqlite3_reset(s);
      sqlite3_clear_bindings(s);
    }
  }
  sqlite3_finalize(t);
  sqlite3_finalize(s);
  sqlite3_finalize(x);
  exec("COMMIT");
}

}  // namespace txray::test
