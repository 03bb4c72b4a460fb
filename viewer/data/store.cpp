#include "store.h"

#include <sqlite3.h>

#include <algorithm>
#include <stdexcept>

namespace txray::viewer {

namespace {

// Finalizes a statement when it goes out of scope.
struct Stmt {
  sqlite3_stmt* st = nullptr;
  ~Stmt() { sqlite3_finalize(st); }
  operator sqlite3_stmt*() const { return st; }
};

std::string text_of(sqlite3_stmt* st, int col) {
  const auto* p = sqlite3_column_text(st, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st, col)))
           : std::string();
}
std::optional<int64_t> opt_of(sqlite3_stmt* st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(st, col);
}

}  // namespace

Store::Store(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("cannot open " + path + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 2000);
  // A file that is not SQLite fails here; a SQLite file without our tables fails on the table check.
  int tables = 0;
  sqlite3_stmt* st = nullptr;
  const int rc = sqlite3_prepare_v2(db_, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                                    "('transactions', 'steps', 'texts', 'agents')", -1, &st, nullptr);
  std::string why = rc == SQLITE_OK ? "" : sqlite3_errmsg(db_);
  if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) tables = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (tables != 4) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(path + " is not a txray store" + (why.empty() ? " (no transactions/steps/texts/agents tables)" : ": " + why));
  }
}

Store::~Store() {
  sqlite3_finalize(count_unattributed_);
  sqlite3_close(db_);
}

sqlite3_stmt* Store::prepare(const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK)
    throw std::runtime_error(path_ + ": " + sqlite3_errmsg(db_));
  return st;
}

int Store::intern(Dict& dict, std::vector<std::string>& list, const unsigned char* text, int len, int max) {
  std::string_view key = text ? std::string_view(reinterpret_cast<const char*>(text), static_cast<size_t>(len))
                              : std::string_view();
  if (auto it = dict.find(key); it != dict.end()) return it->second;
  // Past the dictionary's capacity everything else shares the last slot.
  if (static_cast<int>(list.size()) >= max) return max - 1;
  int index = static_cast<int>(list.size());
  list.emplace_back(key);
  dict.emplace(std::string(key), index);
  return index;
}

int Store::app_index(const std::string& app) {
  return intern(app_index_, apps_, reinterpret_cast<const unsigned char*>(app.data()), static_cast<int>(app.size()), 256);
}

int Store::name_index(const std::string& name) {
  return intern(name_index_, names_, reinterpret_cast<const unsigned char*>(name.data()), static_cast<int>(name.size()), 65536);
}

int64_t Store::max_id() {
  Stmt st{prepare("SELECT COALESCE(MAX(id), 0) FROM transactions")};
  return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

PointBatch Store::load_points(int64_t after_id, int64_t limit, int64_t until_id) {
  Stmt st{prepare("SELECT id, end_unix_ns, elapsed_ns, status, error IS NOT NULL, app, name, kind IS 'unattributed' "
                  "FROM transactions WHERE id > ? AND id <= ? ORDER BY id LIMIT ?")};
  sqlite3_bind_int64(st, 1, after_id);
  sqlite3_bind_int64(st, 2, until_id);
  sqlite3_bind_int64(st, 3, limit + 1);
  PointBatch batch;
  batch.last_id = after_id;
  batch.points.reserve(static_cast<size_t>(std::min<int64_t>(limit, 1 << 20)));
  std::vector<int64_t> containers;
  int64_t rows = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (rows == limit) {
      batch.more = true;
      break;
    }
    ++rows;
    const int64_t id = sqlite3_column_int64(st, 0);
    batch.last_id = id;
    if (sqlite3_column_int(st, 7)) {  // a container: steps to count, not a dot
      containers.push_back(id);
      continue;
    }
    TxPoint p;
    p.id = id;
    p.end_ns = sqlite3_column_int64(st, 1);
    p.elapsed_ns = sqlite3_column_int64(st, 2);
    p.error = (sqlite3_column_int(st, 3) >= 500 || sqlite3_column_int(st, 4)) ? 1 : 0;
    p.app = static_cast<uint8_t>(intern(app_index_, apps_, sqlite3_column_text(st, 5), sqlite3_column_bytes(st, 5), 256));
    p.name = static_cast<uint16_t>(
        intern(name_index_, names_, sqlite3_column_text(st, 6), sqlite3_column_bytes(st, 6), 65536));
    batch.points.push_back(p);
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) throw std::runtime_error(path_ + ": " + sqlite3_errmsg(db_));
  for (int64_t id : containers) count_unattributed(id, batch.unattributed);
  batch.apps = apps_;
  batch.names = names_;
  return batch;
}

void Store::count_unattributed(int64_t id, KindCounts& out) {
  if (!count_unattributed_)
    count_unattributed_ = prepare("SELECT kind, count(*) FROM steps WHERE tx_id = ?1 AND kind NOT IN ('START', 'END') "
                                  "GROUP BY kind UNION ALL SELECT kind, sum(count) FROM step_summaries "
                                  "WHERE tx_id = ?1 AND kind NOT IN ('START', 'END') GROUP BY kind");
  sqlite3_stmt* st = count_unattributed_;
  sqlite3_bind_int64(st, 1, id);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) out[text_of(st, 0)] += sqlite3_column_int64(st, 1);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) throw std::runtime_error(path_ + ": " + sqlite3_errmsg(db_));
}

std::vector<TxSummary> Store::query_box(const Box& box, int64_t min_id, int64_t max_id) {
  // The unary + keeps SQLite on the id range (a contiguous walk of the table) rather than the end index.
  Stmt st{prepare("SELECT id, end_unix_ns, app, name, elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, status, "
                  "error, client_addr FROM transactions WHERE id BETWEEN ? AND ? "
                  "AND +end_unix_ns BETWEEN ? AND ? AND +elapsed_ns BETWEEN ? AND ? "
                  "AND kind IS NOT 'unattributed' ORDER BY id")};
  sqlite3_bind_int64(st, 1, min_id);
  sqlite3_bind_int64(st, 2, max_id);
  sqlite3_bind_int64(st, 3, box.t0);
  sqlite3_bind_int64(st, 4, box.t1);
  sqlite3_bind_int64(st, 5, box.e0);
  sqlite3_bind_int64(st, 6, box.e1);
  std::vector<TxSummary> rows;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    TxSummary r;
    r.id = sqlite3_column_int64(st, 0);
    r.end_ns = sqlite3_column_int64(st, 1);
    r.app = text_of(st, 2);
    r.name = text_of(st, 3);
    r.elapsed_ns = sqlite3_column_int64(st, 4);
    r.cpu_ns = sqlite3_column_int64(st, 5);
    r.sql_ns = sqlite3_column_int64(st, 6);
    r.fetch_ns = sqlite3_column_int64(st, 7);
    r.call_ns = sqlite3_column_int64(st, 8);
    r.status = sqlite3_column_int(st, 9);
    r.error = text_of(st, 10);
    r.client = text_of(st, 11);
    rows.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) throw std::runtime_error(path_ + ": " + sqlite3_errmsg(db_));
  return rows;
}

// The agent's own cost of the transaction and, over the latest kAppCostWindow transactions of its
// application that have one, the mean (walked backwards by agent_cost's key: bounded on any store).
constexpr int kAppCostWindow = 10000;
void Store::load_agent_cost(Profile& p) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, "SELECT cost_ns FROM agent_cost WHERE tx_id = ?", -1, &raw, nullptr) != SQLITE_OK) {
    sqlite3_finalize(raw);
    return;  // a store from before the table
  }
  Stmt one{raw};
  sqlite3_bind_int64(one, 1, p.tx.id);
  if (sqlite3_step(one) != SQLITE_ROW) return;
  p.agent_cost_ns = sqlite3_column_int64(one, 0);
  Stmt app{prepare("SELECT count(*), avg(cost_ns), sum(cost_ns), sum(elapsed_ns) FROM ("
                   "SELECT c.cost_ns, t.elapsed_ns FROM agent_cost c JOIN transactions t ON t.id = c.tx_id "
                   "WHERE t.app = ? AND t.kind IS NOT 'unattributed' ORDER BY c.tx_id DESC LIMIT ?)")};
  sqlite3_bind_text(app, 1, p.tx.app.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(app, 2, kAppCostWindow);
  if (sqlite3_step(app) == SQLITE_ROW && sqlite3_column_int64(app, 0) > 0) {
    Profile::AppAgentCost a;
    a.transactions = sqlite3_column_int64(app, 0);
    a.mean_cost_ns = sqlite3_column_double(app, 1);
    double elapsed = sqlite3_column_double(app, 3);
    a.share = elapsed > 0 ? sqlite3_column_double(app, 2) / elapsed : 0;
    p.app_agent_cost = a;
  }
}

std::optional<int64_t> Store::find_txid(uint64_t txid) {
  // 64-bit ids are stored as the signed integer of the same bits (schema.sql).
  Stmt s{prepare("SELECT id FROM transactions WHERE txid = ? ORDER BY id DESC LIMIT 1")};
  sqlite3_bind_int64(s, 1, static_cast<int64_t>(txid));
  if (sqlite3_step(s) != SQLITE_ROW) return std::nullopt;
  return sqlite3_column_int64(s, 0);
}

std::optional<Profile> Store::load_profile(int64_t id) {
  Stmt tx{prepare(
      "SELECT t.id, t.end_unix_ns, t.app, t.name, t.elapsed_ns, t.cpu_ns, t.sql_ns, t.fetch_ns, t.call_ns, "
      "t.status, t.error, t.client_addr, t.txid, t.parent_span_id, t.start_unix_ns, t.trace_id, t.kind, "
      "t.attributes, a.host, a.program, a.pid, t.tid, t.bytes_read, t.bytes_written, t.sql_count, t.call_count "
      "FROM transactions t LEFT JOIN agents a ON a.id = t.agent_id WHERE t.id = ?")};
  sqlite3_bind_int64(tx, 1, id);
  if (sqlite3_step(tx) != SQLITE_ROW) return std::nullopt;
  Profile p;
  p.tx.id = sqlite3_column_int64(tx, 0);
  p.tx.end_ns = sqlite3_column_int64(tx, 1);
  p.tx.app = text_of(tx, 2);
  p.tx.name = text_of(tx, 3);
  p.tx.elapsed_ns = sqlite3_column_int64(tx, 4);
  p.tx.cpu_ns = sqlite3_column_int64(tx, 5);
  p.tx.sql_ns = sqlite3_column_int64(tx, 6);
  p.tx.fetch_ns = sqlite3_column_int64(tx, 7);
  p.tx.call_ns = sqlite3_column_int64(tx, 8);
  p.tx.status = sqlite3_column_int(tx, 9);
  p.tx.error = text_of(tx, 10);
  p.tx.client = text_of(tx, 11);
  p.txid = sqlite3_column_int64(tx, 12);
  p.parent_span_id = sqlite3_column_int64(tx, 13);
  p.start_ns = sqlite3_column_int64(tx, 14);
  p.trace_id = text_of(tx, 15);
  p.kind = text_of(tx, 16);
  p.attributes = text_of(tx, 17);
  p.host = text_of(tx, 18);
  p.program = text_of(tx, 19);
  p.pid = sqlite3_column_int64(tx, 20);
  p.tid = sqlite3_column_int64(tx, 21);
  p.bytes_read = sqlite3_column_int64(tx, 22);
  p.bytes_written = sqlite3_column_int64(tx, 23);
  p.sql_count = sqlite3_column_int(tx, 24);
  p.call_count = sqlite3_column_int(tx, 25);

  Stmt steps{prepare(
      "SELECT s.no, s.parent, s.kind, s.start_offset_ns, s.gap_ns, s.cpu_ns, s.elapsed_ns, s.bytes_read, "
      "s.bytes_written, x.text, s.error, s.attributes, s.ref_id, s.rows, s.fetch_ns, s.status, s.changes, "
      "s.callee_tx_id FROM steps s LEFT JOIN texts x ON x.id = s.text_id WHERE s.tx_id = ? ORDER BY s.no")};
  sqlite3_bind_int64(steps, 1, id);
  while (sqlite3_step(steps) == SQLITE_ROW) {
    Step s;
    s.no = sqlite3_column_int(steps, 0);
    s.parent = sqlite3_column_int(steps, 1);
    s.kind = text_of(steps, 2);
    s.start_offset_ns = sqlite3_column_int64(steps, 3);
    s.gap_ns = sqlite3_column_int64(steps, 4);
    s.cpu_ns = sqlite3_column_int64(steps, 5);
    s.elapsed_ns = sqlite3_column_int64(steps, 6);
    s.bytes_read = sqlite3_column_int64(steps, 7);
    s.bytes_written = sqlite3_column_int64(steps, 8);
    s.text = text_of(steps, 9);
    s.error = text_of(steps, 10);
    s.attributes = text_of(steps, 11);
    s.ref_id = opt_of(steps, 12);
    s.rows = opt_of(steps, 13);
    s.fetch_ns = opt_of(steps, 14);
    s.status = opt_of(steps, 15);
    s.changes = opt_of(steps, 16);
    s.callee_tx_id = opt_of(steps, 17);
    // Depth from the parent chain; a parent must come before its children (guard against bad rows).
    if (s.parent >= 0 && s.parent < static_cast<int>(p.steps.size()))
      s.depth = p.steps[static_cast<size_t>(s.parent)].depth + 1;
    p.steps.push_back(std::move(s));
  }

  // Stacks of failed and slow steps (a store written before them has no step_frames table).
  Stmt has_frames{prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'step_frames'")};
  if (sqlite3_step(has_frames) == SQLITE_ROW && sqlite3_column_int(has_frames, 0) > 0) {
    Stmt frames{prepare("SELECT step_no, function, module, offset FROM step_frames WHERE tx_id = ? "
                        "ORDER BY step_no, depth")};
    sqlite3_bind_int64(frames, 1, id);
    while (sqlite3_step(frames) == SQLITE_ROW) {
      int no = sqlite3_column_int(frames, 0);
      auto it = std::lower_bound(p.steps.begin(), p.steps.end(), no, [](const Step& s, int n) { return s.no < n; });
      if (it != p.steps.end() && it->no == no)
        it->stack.push_back({text_of(frames, 1), text_of(frames, 2), sqlite3_column_int64(frames, 3)});
    }
  }

  Stmt sums{prepare("SELECT m.kind, x.text, m.count, m.elapsed_ns, m.errors FROM step_summaries m "
                    "LEFT JOIN texts x ON x.id = m.text_id WHERE m.tx_id = ?")};
  sqlite3_bind_int64(sums, 1, id);
  while (sqlite3_step(sums) == SQLITE_ROW)
    p.summaries.push_back({text_of(sums, 0), text_of(sums, 1), sqlite3_column_int64(sums, 2),
                           sqlite3_column_int64(sums, 3), sqlite3_column_int64(sums, 4)});

  load_agent_cost(p);
  load_cpu(p);

  // The caller: same trace, with an HTTP_CALL whose span id is our parent span (trace_id is indexed).
  if (p.parent_span_id != 0 && !p.trace_id.empty()) {
    Stmt caller{prepare("SELECT s.tx_id FROM transactions t JOIN steps s ON s.tx_id = t.id "
                        "WHERE t.trace_id = ? AND t.id != ? AND s.kind = 'HTTP_CALL' AND s.ref_id = ? LIMIT 1")};
    sqlite3_bind_text(caller, 1, p.trace_id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(caller, 2, id);
    sqlite3_bind_int64(caller, 3, p.parent_span_id);
    if (sqlite3_step(caller) == SQLITE_ROW) p.caller_tx_id = sqlite3_column_int64(caller, 0);
  }
  return p;
}

int64_t Store::shed_count() {
  Stmt has{prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'shed_counts'")};
  if (sqlite3_step(has) != SQLITE_ROW || sqlite3_column_int64(has, 0) == 0) return 0;
  Stmt st{prepare("SELECT coalesce(sum(count), 0) FROM shed_counts")};
  return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

void Store::load_cpu(Profile& p) {
  if (has_cpu_ < 0) {
    Stmt q{prepare("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                   "('cpu_rows', 'cpu_hot', 'cpu_stacks', 'cpu_tx', 'agent_cpu')")};
    has_cpu_ = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 5 ? 1 : 0;
  }
  if (!has_cpu_) return;
  Stmt a{prepare("SELECT c.sampler FROM agent_cpu c JOIN transactions t ON t.agent_id = c.agent_id WHERE t.id = ?")};
  sqlite3_bind_int64(a, 1, p.tx.id);
  if (sqlite3_step(a) == SQLITE_ROW) p.cpu_sampler = text_of(a, 0);
  Stmt c{prepare("SELECT samples, dropped FROM cpu_tx WHERE tx_id = ?")};
  sqlite3_bind_int64(c, 1, p.tx.id);
  if (sqlite3_step(c) != SQLITE_ROW) return;
  p.cpu_samples = sqlite3_column_int64(c, 0);
  p.cpu_samples_dropped = sqlite3_column_int64(c, 1);
  auto row = [&](int64_t no) -> Step* {
    for (auto& s : p.steps)
      if (s.no == no) return &s;
    return nullptr;
  };
  Stmt r{prepare("SELECT no, samples FROM cpu_rows WHERE tx_id = ?")};
  sqlite3_bind_int64(r, 1, p.tx.id);
  while (sqlite3_step(r) == SQLITE_ROW)
    if (Step* s = row(sqlite3_column_int64(r, 0))) s->cpu_samples = sqlite3_column_int64(r, 1);
  Stmt h{prepare("SELECT no, function, module, samples FROM cpu_hot WHERE tx_id = ? ORDER BY no, rank")};
  sqlite3_bind_int64(h, 1, p.tx.id);
  while (sqlite3_step(h) == SQLITE_ROW)
    if (Step* s = row(sqlite3_column_int64(h, 0)))
      s->hot.push_back({text_of(h, 1), text_of(h, 2), sqlite3_column_int64(h, 3)});
  Stmt k{prepare("SELECT folded, samples FROM cpu_stacks WHERE tx_id = ? ORDER BY samples DESC, rowid")};
  sqlite3_bind_int64(k, 1, p.tx.id);
  while (sqlite3_step(k) == SQLITE_ROW) p.cpu_stacks.push_back({text_of(k, 0), sqlite3_column_int64(k, 1)});
}

int64_t Store::count() {
  Stmt st{prepare("SELECT COUNT(*) FROM transactions WHERE kind IS NOT 'unattributed'")};
  return sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
}

}  // namespace txray::viewer
