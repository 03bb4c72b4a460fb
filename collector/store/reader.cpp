#include "reader.h"

#include <algorithm>
#include <cstdio>

#include "attributes_json.h"
#include "frame_name.h"
#include "ids.h"

namespace txray {

namespace {

constexpr const char* kAgentColumns =
    "id, instance_id, host, pid, ppid, program, app, agent_version, start_unix_ns, mode, command_line,"
    " first_seen_unix_ns, last_seen_unix_ns, batches, drops_queue_full, drops_send_failed,"
    " drops_encode_failed, steps_summarized, internal_errors";

Agent agent_from(const Stmt& s) {
  Agent a;
  int c = 0;
  a.id = s.i64(c++);
  a.instance_id = to_unsigned(s.i64(c++));
  a.host = s.text(c++);
  a.pid = s.i64(c++);
  a.ppid = s.i64(c++);
  a.program = s.text(c++);
  a.app = s.text(c++);
  a.agent_version = s.text(c++);
  a.start_unix_ns = s.i64(c++);
  a.mode = s.text(c++);
  a.command_line = s.text(c++);
  a.first_seen_unix_ns = s.i64(c++);
  a.last_seen_unix_ns = s.i64(c++);
  a.batches = s.i64(c++);
  a.drops_queue_full = s.i64(c++);
  a.drops_send_failed = s.i64(c++);
  a.drops_encode_failed = s.i64(c++);
  a.steps_summarized = s.i64(c++);
  a.internal_errors = s.i64(c++);
  return a;
}

std::optional<uint64_t> opt_u64(const Stmt& s, int col) {
  if (s.is_null(col)) return std::nullopt;
  return to_unsigned(s.i64(col));
}

}  // namespace

Reader::Reader(const Db& db) : db_(db) {}

Stmt& Reader::cached(std::unique_ptr<Stmt>& slot, const char* sql) {
  if (!slot) slot = std::make_unique<Stmt>(db_, sql);
  slot->reset();
  return *slot;
}

namespace {
// Resets a cached statement when a reader function returns (rows left unread keep no read lock).
struct ResetOnExit {
  Stmt& s;
  ~ResetOnExit() { s.reset(); }
};
}  // namespace

std::vector<int64_t> Reader::ids(const std::string& sql, const std::string& app, std::optional<int64_t> p1,
                                 std::optional<std::string> ptext) {
  Stmt s(db_, sql);
  int i = 1;
  if (p1) s.bind(i++, *p1);
  if (ptext) s.bind(i++, *ptext);
  if (!app.empty()) s.bind(i++, app);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

namespace {
// The rows that are transactions, not unattributed containers (kind is NULL for some agents' rows).
const std::string kIsTransaction = "kind IS NOT '" + std::string(kUnattributedKind) + "'";
const std::string kIsContainer = "t.kind = '" + std::string(kUnattributedKind) + "'";
}  // namespace

std::vector<int64_t> Reader::last(int n, const std::string& app) {
  std::string and_app = app.empty() ? "" : " AND app = ?2";
  auto v = ids("SELECT id FROM transactions WHERE " + kIsTransaction + and_app +
                   " ORDER BY end_unix_ns DESC, id DESC LIMIT ?1",
               app, n, std::nullopt);
  std::reverse(v.begin(), v.end());
  return v;
}

std::vector<int64_t> Reader::slowest(int n, const std::string& app) {
  std::string and_app = app.empty() ? "" : " AND app = ?2";
  return ids("SELECT id FROM transactions WHERE " + kIsTransaction + and_app + " ORDER BY elapsed_ns DESC, id LIMIT ?1",
             app, n, std::nullopt);
}

std::vector<int64_t> Reader::by_txid(uint64_t txid, const std::string& app) {
  std::string and_app = app.empty() ? "" : " AND app = ?2";
  return ids("SELECT id FROM transactions WHERE txid = ?1" + and_app + " ORDER BY id", app, to_signed(txid),
             std::nullopt);
}

std::vector<int64_t> Reader::by_trace(const std::string& trace, const std::string& app) {
  std::string and_app = app.empty() ? "" : " AND app = ?2";
  return ids("SELECT id FROM transactions WHERE trace_id = ?1 AND " + kIsTransaction + and_app +
                 " ORDER BY start_unix_ns, id",
             app, std::nullopt, trace);
}

std::vector<UnattributedCount> Reader::unattributed_counts(const std::string& app) {
  const std::string where = " WHERE " + kIsContainer + (app.empty() ? "" : " AND t.app = ?1");
  Stmt s(db_,
         "SELECT agent_id, app, kind, sum(n) FROM ("
         "SELECT t.agent_id, t.app, s.kind, count(*) AS n FROM transactions t JOIN steps s ON s.tx_id = t.id" +
             where + " AND s.kind NOT IN ('START', 'END') GROUP BY 1, 2, 3"
             " UNION ALL SELECT t.agent_id, t.app, m.kind, sum(m.count) FROM transactions t"
             " JOIN step_summaries m ON m.tx_id = t.id" + where + " AND m.kind NOT IN ('START', 'END') GROUP BY 1, 2, 3"
             ") GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
  if (!app.empty()) s.bind(1, app);
  std::vector<UnattributedCount> out;
  while (s.step()) out.push_back({s.i64(0), s.text(1), s.text(2), s.i64(3)});
  return out;
}

bool Reader::has_table(const char* name) {
  Stmt q(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
  q.bind(1, std::string(name));
  q.step();
  return q.i64(0) != 0;
}

std::vector<int64_t> Reader::unattributed_containers(const std::string& app) {
  Stmt s(db_, "SELECT id FROM transactions t WHERE " + kIsContainer + (app.empty() ? "" : " AND app = ?1") +
                  " ORDER BY agent_id, start_unix_ns, id");
  if (!app.empty()) s.bind(1, app);
  std::vector<int64_t> out;
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

void Reader::load_stacks(int64_t tx_id, std::vector<Step>& steps) {
  if (!has_frames_) {
    has_frames_ = has_table("step_frames") ? 1 : -1;
  }
  if (has_frames_ < 0) return;  // a store written before stacks
  Stmt& f = cached(frames_stmt_,
                   "SELECT step_no, function, module, offset FROM step_frames WHERE tx_id = ?1"
                   " ORDER BY step_no, depth");
  ResetOnExit done{f};
  f.bind(1, tx_id);
  size_t at = 0;  // steps are in `no` order, and so are the frames
  while (f.step()) {
    int no = static_cast<int>(f.i64(0));
    while (at < steps.size() && steps[at].no < no) ++at;
    if (at == steps.size()) break;
    if (steps[at].no != no) continue;
    steps[at].stack.push_back(StackFrame{f.text(1), f.text(2), to_unsigned(f.i64(3))});
  }
}

std::string format_frame(const StackFrame& f) {
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
  if (f.function.empty()) return f.module + off;
  return txray::names::short_frame_name(f.function) + " (" + f.module + off + ")";
}

std::vector<DropWindowRow> Reader::drop_windows(const std::string& app) {
  if (!has_table("drop_windows")) return {};
  std::string cols;
  for (const char* p = kAgentColumns; *p;) {  // "id, instance_id, ..." -> "a.id, a.instance_id, ..."
    while (*p == ' ' || *p == ',') cols += *p++;
    cols += "a.";
    while (*p && *p != ',') cols += *p++;
  }
  Stmt s(db_, "SELECT " + cols +
                  ", w.seq, w.reason, w.count, w.first_unix_ns, w.last_unix_ns, w.closed, w.reported_unix_ns"
                  " FROM drop_windows w JOIN agents a ON a.id = w.agent_id" +
                  (app.empty() ? "" : " WHERE a.app = ?1") + " ORDER BY w.first_unix_ns, a.id, w.seq");
  if (!app.empty()) s.bind(1, app);
  std::vector<DropWindowRow> out;
  while (s.step()) {
    DropWindowRow w;
    w.agent = agent_from(s);
    int c = int(std::count(cols.begin(), cols.end(), ',')) + 1;  // after the agent's columns
    w.seq = s.i64(c++);
    w.reason = s.text(c++);
    w.count = s.i64(c++);
    w.first_unix_ns = s.i64(c++);
    w.last_unix_ns = s.i64(c++);
    w.closed = s.i64(c++) != 0;
    w.reported_unix_ns = s.i64(c++);
    out.push_back(std::move(w));
  }
  return out;
}

std::optional<Agent> Reader::agent(int64_t agent_id) {
  static const std::string sql = std::string("SELECT ") + kAgentColumns + " FROM agents WHERE id = ?1";
  Stmt& s = cached(agent_stmt_, sql.c_str());
  ResetOnExit done{s};
  s.bind(1, agent_id);
  if (!s.step()) return std::nullopt;
  return agent_from(s);
}

std::vector<Agent> Reader::agents() {
  Stmt s(db_, std::string("SELECT ") + kAgentColumns + " FROM agents ORDER BY id");
  std::vector<Agent> out;
  while (s.step()) out.push_back(agent_from(s));
  return out;
}

int64_t Reader::transaction_count() {
  Stmt s(db_, "SELECT count(*) FROM transactions WHERE " + kIsTransaction);
  s.step();
  return s.i64(0);
}

std::optional<std::pair<int64_t, int64_t>> Reader::agent_cost(int64_t id) {
  if (!has_cost_table_) {
    has_cost_table_ = has_table("agent_cost");
  }
  if (!*has_cost_table_) return std::nullopt;
  Stmt& s = cached(cost_stmt_, "SELECT cost_ns, agent_thread_ns FROM agent_cost WHERE tx_id = ?1");
  ResetOnExit done{s};
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return std::make_pair(s.i64(0), s.i64(1));
}

std::optional<Transaction> Reader::load(int64_t id) {
  Stmt& s = cached(tx_stmt_,
                   "SELECT id, txid, trace_id, parent_span_id, agent_id, app, name, kind, start_unix_ns, end_unix_ns,"
                   " elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, sql_count, call_count, status, error,"
                   " client_addr, bytes_read, bytes_written, tid, step_count, attributes FROM transactions"
                   " WHERE id = ?1");
  ResetOnExit s_done{s};
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  Transaction t;
  int c = 0;
  t.id = s.i64(c++);
  t.txid = to_unsigned(s.i64(c++));
  t.trace_id = s.text(c++);
  t.parent_span_id = to_unsigned(s.i64(c++));
  int64_t agent_id = s.i64(c++);
  t.app = s.text(c++);
  t.name = s.text(c++);
  t.kind = s.text(c++);
  t.start_unix_ns = s.i64(c++);
  t.end_unix_ns = s.i64(c++);
  t.elapsed_ns = s.i64(c++);
  t.cpu_ns = s.i64(c++);
  t.sql_ns = s.i64(c++);
  t.fetch_ns = s.i64(c++);
  t.call_ns = s.i64(c++);
  t.sql_count = s.i64(c++);
  t.call_count = s.i64(c++);
  t.status = s.i64(c++);
  t.error = s.text(c++);
  t.client_addr = s.text(c++);
  t.bytes_read = s.i64(c++);
  t.bytes_written = s.i64(c++);
  t.tid = s.i64(c++);
  t.step_count = s.i64(c++);
  t.attributes = parse_attributes_json(s.text(c++));
  if (auto a = agent(agent_id)) t.agent = std::move(*a);
  if (auto cost = agent_cost(t.id)) {
    t.agent_cost_ns = cost->first;
    t.agent_thread_ns = cost->second;
  }

  Stmt& st = cached(steps_stmt_,
          "SELECT s.no, s.parent, s.kind, s.start_offset_ns, s.gap_ns, s.cpu_ns, s.elapsed_ns, s.bytes_read,"
          " s.bytes_written, x.text, s.error, s.ref_id, s.rows, s.fetch_ns, s.fingerprint, s.status, s.changes,"
          " s.attributes, s.callee_tx_id, c.txid"
          " FROM steps s LEFT JOIN texts x ON x.id = s.text_id LEFT JOIN transactions c ON c.id = s.callee_tx_id"
          " WHERE s.tx_id = ?1 ORDER BY s.no");
  ResetOnExit st_done{st};
  st.bind(1, id);
  while (st.step()) {
    Step p;
    int k = 0;
    p.no = static_cast<int>(st.i64(k++));
    p.parent = static_cast<int>(st.i64(k++));
    p.kind = st.text(k++);
    p.start_offset_ns = st.i64(k++);
    p.gap_ns = st.i64(k++);
    p.cpu_ns = st.i64(k++);
    p.elapsed_ns = st.i64(k++);
    p.bytes_read = st.i64(k++);
    p.bytes_written = st.i64(k++);
    p.text = st.text(k++);
    p.error = st.text(k++);
    p.id = opt_u64(st, k++);
    p.rows = st.opt_i64(k++);
    p.fetch_ns = st.opt_i64(k++);
    p.fingerprint = opt_u64(st, k++);
    p.status = st.opt_i64(k++);
    p.changes = st.opt_i64(k++);
    p.attributes = parse_attributes_json(st.text(k++));
    p.callee_tx_id = st.opt_i64(k++);
    p.callee_txid = opt_u64(st, k++);
    t.steps.push_back(std::move(p));
  }

  load_stacks(id, t.steps);

  Stmt& sm = cached(summary_stmt_,
          "SELECT m.kind, m.fingerprint, x.text, m.count, m.elapsed_ns, m.rows, m.errors, m.bytes_read,"
          " m.bytes_written FROM step_summaries m LEFT JOIN texts x ON x.id = m.text_id"
          " WHERE m.tx_id = ?1 ORDER BY m.rowid");
  ResetOnExit sm_done{sm};
  sm.bind(1, id);
  while (sm.step()) {
    Summary m;
    m.kind = sm.text(0);
    m.fingerprint = to_unsigned(sm.i64(1));
    m.text = sm.text(2);
    m.count = sm.i64(3);
    m.elapsed_ns = sm.i64(4);
    m.rows = sm.opt_i64(5);
    m.errors = sm.i64(6);
    m.bytes_read = sm.i64(7);
    m.bytes_written = sm.i64(8);
    t.summary.push_back(std::move(m));
  }
  load_cpu(t, agent_id);
  load_losses(t, agent_id);
  return t;
}

void Reader::load_losses(Transaction& t, int64_t agent_id) {
  if (has_losses_ < 0) {
    has_losses_ = has_table("agent_losses") ? 1 : 0;
  }
  if (!has_losses_) return;
  Stmt& l = cached(losses_stmt_, "SELECT cpu_samples_lost, stacks_missed FROM agent_losses WHERE agent_id = ?1");
  ResetOnExit done{l};
  l.bind(1, agent_id);
  if (!l.step()) return;
  t.agent_cpu_samples_lost = l.i64(0);
  t.agent_stacks_missed = l.i64(1);
}

void Reader::load_cpu(Transaction& t, int64_t agent_id) {
  if (has_cpu_ < 0) {
    has_cpu_ = has_table("cpu_rows") && has_table("cpu_hot") && has_table("cpu_stacks") && has_table("cpu_tx") &&
                       has_table("agent_cpu")
                   ? 1
                   : 0;
  }
  if (!has_cpu_) return;
  Stmt& a = cached(agent_cpu_stmt_, "SELECT sampler FROM agent_cpu WHERE agent_id = ?1");
  ResetOnExit a_done{a};
  a.bind(1, agent_id);
  if (a.step()) t.cpu_sampler = a.text(0);
  Stmt& c = cached(cpu_tx_stmt_, "SELECT samples, dropped FROM cpu_tx WHERE tx_id = ?1");
  ResetOnExit c_done{c};
  c.bind(1, t.id);
  if (!c.step()) return;  // no samples: no rows in the other tables either
  t.cpu_samples = c.i64(0);
  t.cpu_samples_dropped = c.i64(1);
  auto step_no = [&](int64_t no) -> Step* {
    if (no >= 0 && size_t(no) < t.steps.size() && t.steps[size_t(no)].no == no) return &t.steps[size_t(no)];
    for (auto& s : t.steps)
      if (s.no == no) return &s;
    return nullptr;
  };
  Stmt& r = cached(cpu_rows_stmt_, "SELECT no, samples FROM cpu_rows WHERE tx_id = ?1");
  ResetOnExit r_done{r};
  r.bind(1, t.id);
  while (r.step())
    if (Step* s = step_no(r.i64(0))) s->cpu_samples = r.i64(1);
  Stmt& h = cached(cpu_hot_stmt_,
                   "SELECT no, function, module, samples FROM cpu_hot WHERE tx_id = ?1 ORDER BY no, rank");
  ResetOnExit h_done{h};
  h.bind(1, t.id);
  while (h.step())
    if (Step* s = step_no(h.i64(0))) s->hot.push_back({h.text(1), h.text(2), h.i64(3)});
  Stmt& k = cached(cpu_stacks_stmt_,
                   "SELECT folded, samples FROM cpu_stacks WHERE tx_id = ?1 ORDER BY samples DESC, rowid");
  ResetOnExit k_done{k};
  k.bind(1, t.id);
  while (k.step()) t.cpu_stacks.push_back({k.text(0), k.i64(1)});
}

}  // namespace txray
