#include "writer.h"

#include "attributes_json.h"

#include <cstdio>
#include "ids.h"

#include <string>

namespace txray {

namespace {

constexpr size_t kMaxCachedTexts = 1 << 20;  // the cache is dropped when it grows past this

std::string drop_reason_name(int reason) {
  switch (reason) {
    case v1::QUEUE_FULL: return "queue_full";
    case v1::SEND_FAILED: return "send_failed";
    case v1::ENCODE_FAILED: return "encode_failed";
  }
  return "reason_" + std::to_string(reason);  // a newer agent's reason: kept, under its number
}

const char* kind_name(int kind) {
  static const char* const kNames[] = {"UNSPECIFIED", "START", "END", "SOCKET", "SOCKET_CLOSE", "MESSAGE",
                                       "SQL", "DB_CONNECT", "HTTP_CALL", "DNS", "REDIS", "MEMCACHED"};
  if (kind < 0 || kind >= static_cast<int>(std::size(kNames))) return "UNSPECIFIED";
  return kNames[kind];
}

template <typename Repeated>
void attributes_json(std::string& out, const Repeated& attrs) {
  out.clear();
  if (attrs.empty()) return;
  out += '{';
  bool first = true;
  for (const auto& a : attrs) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, a.key());
    out += ':';
    append_json_string(out, a.value());
  }
  out += '}';
}

}  // namespace

Writer::Writer(Db& db)
    : db_(db),
      begin_(db, "BEGIN"),
      commit_(db, "COMMIT"),
      rollback_(db, "ROLLBACK"),
      agent_upsert_(db,
                    "INSERT INTO agents(instance_id, host, pid, ppid, program, app, agent_version, start_unix_ns,"
                    " mode, command_line, first_seen_unix_ns, last_seen_unix_ns, batches, drops_queue_full,"
                    " drops_send_failed, drops_encode_failed, steps_summarized, internal_errors)"
                    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?11,1,?12,?13,?14,?15,?16)"
                    " ON CONFLICT(instance_id) DO UPDATE SET last_seen_unix_ns=excluded.last_seen_unix_ns,"
                    " batches=batches+1,"
                    " drops_queue_full=max(drops_queue_full, excluded.drops_queue_full),"
                    " drops_send_failed=max(drops_send_failed, excluded.drops_send_failed),"
                    " drops_encode_failed=max(drops_encode_failed, excluded.drops_encode_failed),"
                    " steps_summarized=max(steps_summarized, excluded.steps_summarized),"
                    " internal_errors=max(internal_errors, excluded.internal_errors)"
                    " RETURNING id"),
      drop_window_upsert_(db,
                          "INSERT INTO drop_windows(agent_id, seq, reason, count, first_unix_ns, last_unix_ns,"
                          " closed, reported_unix_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)"
                          " ON CONFLICT(agent_id, seq) DO UPDATE SET count=max(count, excluded.count),"
                          " first_unix_ns=CASE WHEN first_unix_ns = 0 THEN excluded.first_unix_ns"
                          "   WHEN excluded.first_unix_ns = 0 THEN first_unix_ns"
                          "   ELSE min(first_unix_ns, excluded.first_unix_ns) END,"
                          " last_unix_ns=max(last_unix_ns, excluded.last_unix_ns),"
                          " closed=max(closed, excluded.closed)"),
      received_select_(db, "SELECT transactions, last_sent_unix_ns FROM agent_received WHERE agent_id = ?1"),
      received_upsert_(db,
                       "INSERT INTO agent_received(agent_id, transactions, last_sent_unix_ns) VALUES(?1,?2,?3)"
                       " ON CONFLICT(agent_id) DO UPDATE SET transactions=excluded.transactions,"
                       " last_sent_unix_ns=excluded.last_sent_unix_ns"),
      lost_seq_(db, "SELECT min(0, coalesce(min(seq), 0)) - 1 FROM drop_windows WHERE agent_id = ?1"),
      tx_insert_(db,
                 "INSERT INTO transactions(txid, trace_id, parent_span_id, agent_id, app, name, kind,"
                 " start_unix_ns, end_unix_ns, elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, sql_count,"
                 " call_count, status, error, client_addr, bytes_read, bytes_written, tid, step_count, attributes)"
                 " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)"),
      step_insert_(db,
                   "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns,"
                   " bytes_read, bytes_written, text_id, error, ref_id, rows, fetch_ns, fingerprint, status,"
                   " changes, attributes, callee_tx_id)"
                   " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)"),
      summary_insert_(db,
                      "INSERT INTO step_summaries(tx_id, kind, fingerprint, text_id, count, elapsed_ns, rows,"
                      " errors, bytes_read, bytes_written) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"),
      shed_upsert_(db,
                   "INSERT INTO shed_counts(app, name, kind, minute_unix_ns, origin, bucket, count, elapsed_ns)"
                   " VALUES(?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT(app, name, kind, minute_unix_ns, origin, bucket)"
                   " DO UPDATE SET count=count+excluded.count, elapsed_ns=elapsed_ns+excluded.elapsed_ns"),
      text_insert_(db, "INSERT INTO texts(hash, text) VALUES(?1, ?2) ON CONFLICT(hash) DO NOTHING"),
      text_select_(db, "SELECT id FROM texts WHERE hash = ?1"),
      frame_insert_(db,
                    "INSERT INTO step_frames(tx_id, step_no, depth, function, module, offset)"
                    " VALUES(?1,?2,?3,?4,?5,?6)"),
      link_callee_(db,
                   "UPDATE steps SET callee_tx_id = ?1"
                   " WHERE kind = 'HTTP_CALL' AND ref_id = ?2 AND callee_tx_id IS NULL"),
      cost_insert_(db, "INSERT OR REPLACE INTO agent_cost(tx_id, cost_ns, agent_thread_ns) VALUES(?1,?2,?3)"),
      cost_units_insert_(db,
                         "INSERT OR IGNORE INTO agent_cost_units(agent_id, tx_ps, row_ps, folded_ps, io_ps,"
                         " syscall_ps, encode_tx_ps, encode_row_ps, cpu_clock_ps, calibration_ns)"
                         " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"),
      find_callee_(db,
                   "SELECT id FROM transactions WHERE parent_span_id = ?1 AND parent_span_id != 0"
                   " ORDER BY id LIMIT 1"),
      agent_cpu_upsert_(db,
                        "INSERT INTO agent_cpu(agent_id, sampler, samples_dropped) VALUES(?1,?2,?3)"
                        " ON CONFLICT(agent_id) DO UPDATE SET sampler=excluded.sampler,"
                        " samples_dropped=max(samples_dropped, excluded.samples_dropped)"),
      agent_losses_upsert_(db,
                           "INSERT INTO agent_losses(agent_id, cpu_samples_lost, stacks_missed) VALUES(?1,?2,?3)"
                           " ON CONFLICT(agent_id) DO UPDATE SET"
                           " cpu_samples_lost=max(cpu_samples_lost, excluded.cpu_samples_lost),"
                           " stacks_missed=max(stacks_missed, excluded.stacks_missed)"),
      cpu_rows_insert_(db, "INSERT OR REPLACE INTO cpu_rows(tx_id, no, samples) VALUES(?1,?2,?3)"),
      cpu_hot_insert_(db,
                      "INSERT OR REPLACE INTO cpu_hot(tx_id, no, rank, function, module, samples)"
                      " VALUES(?1,?2,?3,?4,?5,?6)"),
      cpu_stacks_insert_(db, "INSERT INTO cpu_stacks(tx_id, folded, samples) VALUES(?1,?2,?3)"),
      cpu_tx_insert_(db, "INSERT OR REPLACE INTO cpu_tx(tx_id, samples, dropped) VALUES(?1,?2,?3)") {
  Stmt any(db, "SELECT EXISTS(SELECT 1 FROM transactions WHERE parent_span_id != 0)");
  any.step();
  any_callee_ = any.i64(0) != 0;
}

void Writer::begin() {
  begin_.run();
  in_tx_ = true;
}

void Writer::commit() {
  commit_.run();
  in_tx_ = false;
}

void Writer::rollback() {
  if (in_tx_) {
    try {
      rollback_.run();
    } catch (const StoreError&) {
      // SQLite may already have rolled back by itself (e.g. SQLITE_FULL); nothing left to undo.
    }
  }
  in_tx_ = false;
  text_ids_.clear();
  received_.clear();
}

WriteCounts Writer::write(const v1::Batch& batch, int64_t now) {
  WriteCounts counts;
  int64_t agent_id = upsert_agent(batch, now);
  for (const auto& w : batch.drop_windows()) upsert_drop_window(w, agent_id, now);
  account_received(batch, agent_id, now);
  if (batch.agent().has_cost_units()) {
    const auto& u = batch.agent().cost_units();
    cost_units_insert_.bind(1, agent_id)
        .bind(2, u.tx_ps())
        .bind(3, u.row_ps())
        .bind(4, u.folded_ps())
        .bind(5, u.io_ps())
        .bind(6, u.syscall_ps())
        .bind(7, u.encode_tx_ps())
        .bind(8, u.encode_row_ps())
        .bind(9, u.cpu_clock_ps())
        .bind(10, u.calibration_ns())
        .run();
  }
  const std::string& app = batch.agent().app().empty() ? batch.agent().program() : batch.agent().app();
  if (batch.sampled_out_size() > 0) counts.shed += add_shed_counts(batch, app);
  for (const auto& tx : batch.transactions()) {
    int64_t row = insert_transaction(tx, agent_id, app);
    ++counts.transactions;
    if (tx.agent_cost_ns() != 0) cost_insert_.bind(1, row).bind(2, tx.agent_cost_ns()).bind(3, tx.agent_thread_ns()).run();
    for (int i = 0; i < tx.steps_size(); ++i) insert_step(row, i, tx.steps(i), counts);
    insert_cpu(row, tx);
    for (const auto& s : tx.summary()) {
      insert_summary(row, s);
      ++counts.summaries;
    }
    if (tx.parent_span_id() != 0) {
      any_callee_ = true;
      // The caller's HTTP_CALL may have arrived first: link it now.
      link_callee_.bind(1, row).bind(2, tx.parent_span_id()).run();
      counts.links += static_cast<uint64_t>(sqlite3_changes(db_.get()));
    }
  }
  return counts;
}

int64_t Writer::upsert_agent(const v1::Batch& b, int64_t now) {
  const auto& a = b.agent();
  const auto& d = b.drops();
  Stmt& s = agent_upsert_;
  s.bind(1, a.instance_id())
      .bind_static(2, a.host())
      .bind(3, a.pid())
      .bind(4, a.ppid())
      .bind_static(5, a.program())
      .bind_static(6, a.app().empty() ? a.program() : a.app())
      .bind_static(7, a.agent_version())
      .bind(8, a.start_unix_ns())
      .bind_static(9, a.mode())
      .bind_static(10, a.command_line())
      .bind(11, now)
      .bind(12, d.queue_full())
      .bind(13, d.send_failed())
      .bind(14, d.encode_failed())
      .bind(15, d.steps_summarized())
      .bind(16, d.internal_errors());
  s.step();
  int64_t id = s.i64(0);
  s.reset();
  if (!a.cpu_sampler().empty() || d.cpu_samples_dropped() != 0)
    agent_cpu_upsert_.bind(1, id).bind_text_or_null(2, a.cpu_sampler()).bind(3, d.cpu_samples_dropped()).run();
  if (d.cpu_samples_lost() != 0 || d.stacks_missed() != 0)
    agent_losses_upsert_.bind(1, id).bind(2, d.cpu_samples_lost()).bind(3, d.stacks_missed()).run();
  return id;
}

void Writer::insert_cpu(int64_t tx_row, const v1::Transaction& tx) {
  uint64_t total = 0;
  for (int i = 0; i < tx.steps_size(); ++i) {
    const auto& st = tx.steps(i);
    if (st.cpu_samples() == 0 && st.hot_size() == 0) continue;
    total += st.cpu_samples();
    cpu_rows_insert_.bind(1, tx_row).bind(2, i).bind(3, st.cpu_samples()).run();
    for (int r = 0; r < st.hot_size(); ++r) {
      const auto& h = st.hot(r);
      cpu_hot_insert_.bind(1, tx_row)
          .bind(2, i)
          .bind(3, r)
          .bind_static(4, h.function())
          .bind_text_or_null(5, h.module())
          .bind(6, h.samples())
          .run();
    }
  }
  for (const auto& c : tx.cpu_stacks())
    cpu_stacks_insert_.bind(1, tx_row).bind_static(2, c.folded()).bind(3, c.samples()).run();
  if (total != 0 || tx.cpu_samples_dropped() != 0)
    cpu_tx_insert_.bind(1, tx_row).bind(2, total).bind(3, tx.cpu_samples_dropped()).run();
}

void Writer::upsert_drop_window(const v1::DropWindow& w, int64_t agent_id, int64_t now) {
  drop_window_upsert_.bind(1, agent_id)
      .bind(2, w.seq())
      .bind(3, drop_reason_name(w.reason()))
      .bind(4, w.count())
      .bind(5, w.first_unix_ns())
      .bind(6, w.last_unix_ns())
      .bind(7, w.closed() ? 1 : 0)
      .bind(8, now)
      .run();
}

uint64_t Writer::add_shed_counts(const v1::Batch& b, std::string_view app) {
  uint64_t n = 0;
  for (const auto& c : b.sampled_out()) {
    if (c.count() == 0) continue;
    shed_upsert_.bind_static(1, app)
        .bind_static(2, c.name())
        .bind_static(3, c.kind())
        .bind(4, c.minute_unix_ns())
        .bind(5, c.by_collector() ? "collector" : "agent")
        .bind(6, static_cast<int64_t>(c.bucket()))
        .bind(7, c.count())
        .bind(8, c.elapsed_ns())
        .run();
    n += c.count();
  }
  return n;
}

void Writer::account_received(const v1::Batch& b, int64_t agent_id, int64_t now) {
  auto sent = static_cast<int64_t>(b.sent_transactions());
  auto it = received_.find(agent_id);
  if (it == received_.end()) {
    Received r;
    received_select_.bind(1, agent_id);
    if (received_select_.step()) {
      r.transactions = received_select_.i64(0);
      r.last_sent_unix_ns = received_select_.i64(1);
    } else {
      // First batch of this agent in this store. Transactions it sent before went elsewhere (another
      // store, or a collector before this table existed): nothing to claim lost.
      r.transactions = sent;
    }
    received_select_.reset();
    it = received_.emplace(agent_id, r).first;
  }
  Received& r = it->second;
  auto sent_at = static_cast<int64_t>(b.sent_unix_ns());
  if (sent > r.transactions) {
    // Lost after the last batch received and before this one was sent.
    lost_seq_.bind(1, agent_id);
    lost_seq_.step();
    int64_t seq = lost_seq_.i64(0);
    lost_seq_.reset();
    drop_window_upsert_.bind(1, agent_id)
        .bind(2, seq)
        .bind(3, "lost_in_flight")
        .bind(4, sent - r.transactions)
        .bind(5, r.last_sent_unix_ns ? r.last_sent_unix_ns : sent_at)
        .bind(6, sent_at)
        .bind(7, 1)
        .bind(8, now)
        .run();
    r.transactions = sent;
  }
  r.transactions += b.transactions_size();
  // Transactions the collector shed from this batch were received too (they are counted in shed_counts).
  for (const auto& c : b.sampled_out())
    if (c.by_collector()) r.transactions += static_cast<int64_t>(c.count());
  if (sent_at > r.last_sent_unix_ns) r.last_sent_unix_ns = sent_at;
  received_upsert_.bind(1, agent_id).bind(2, r.transactions).bind(3, r.last_sent_unix_ns).run();
}

int64_t Writer::insert_transaction(const v1::Transaction& tx, int64_t agent_id, std::string_view app) {
  std::string trace = trace_hex(tx.trace_id());
  attributes_json(json_buf_, tx.attributes());
  // The W3C tracestate and trace flags are kept as two more attributes of the transaction, not columns:
  // stores of every age read them alike (absent before), and `show` and the viewer print them as any
  // other attribute. store_source.cpp turns them back into the wire fields for OTLP.
  if (!tx.tracestate().empty() || tx.trace_flags()) {
    if (json_buf_.empty()) json_buf_ = "{";
    else json_buf_.back() = ',';
    bool comma = false;
    if (!tx.tracestate().empty()) {
      append_json_string(json_buf_, "tracestate");
      json_buf_ += ':';
      append_json_string(json_buf_, tx.tracestate());
      comma = true;
    }
    if (tx.trace_flags()) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", tx.trace_flags() & 0xffu);
      if (comma) json_buf_ += ',';
      append_json_string(json_buf_, "trace_flags");
      json_buf_ += ':';
      append_json_string(json_buf_, hex);
    }
    json_buf_ += '}';
  }
  Stmt& s = tx_insert_;
  s.bind(1, tx.txid())
      .bind_text_or_null(2, trace)
      .bind(3, tx.parent_span_id())
      .bind(4, agent_id)
      .bind_static(5, app)
      .bind_static(6, tx.name())
      .bind_text_or_null(7, tx.kind())
      .bind(8, tx.start_unix_ns())
      .bind(9, tx.start_unix_ns() + tx.elapsed_ns())
      .bind(10, tx.elapsed_ns())
      .bind(11, tx.cpu_ns())
      .bind(12, tx.sql_ns())
      .bind(13, tx.fetch_ns())
      .bind(14, tx.call_ns())
      .bind(15, tx.sql_count())
      .bind(16, tx.call_count())
      .bind(17, tx.status())
      .bind_text_or_null(18, tx.error())
      .bind_text_or_null(19, tx.client_addr())
      .bind(20, tx.bytes_read())
      .bind(21, tx.bytes_written())
      .bind(22, tx.tid())
      .bind(23, tx.steps_size())
      .bind_text_or_null(24, json_buf_);
  s.run();
  return sqlite3_last_insert_rowid(db_.get());
}

void Writer::insert_step(int64_t tx_row, int no, const v1::Step& st, WriteCounts& counts) {
  const bool is_sql = st.kind() == v1::SQL;
  const bool is_call = st.kind() == v1::HTTP_CALL;
  attributes_json(json_buf_, st.attributes());
  Stmt& s = step_insert_;
  s.bind(1, tx_row)
      .bind(2, no)
      .bind(3, st.parent())
      .bind_static(4, kind_name(st.kind()))
      .bind(5, st.start_offset_ns())
      .bind(6, st.gap_ns())
      .bind(7, st.cpu_ns())
      .bind(8, st.elapsed_ns())
      .bind(9, st.bytes_read())
      .bind(10, st.bytes_written());
  if (int64_t t = text_id(st.text()); t != 0) s.bind(11, t);
  s.bind_text_or_null(12, st.error());
  if (st.id() != 0) s.bind(13, st.id());
  // rows/changes: -1 means unknown (stored NULL); for other kinds than SQL they are stored only when set.
  if (st.rows() >= 0 && (is_sql || st.rows() != 0)) s.bind(14, st.rows());
  if (is_sql || st.fetch_ns() != 0) s.bind(15, st.fetch_ns());
  if (st.fingerprint() != 0) s.bind(16, st.fingerprint());
  if (st.status() != 0) s.bind(17, st.status());
  if (st.changes() >= 0 && (is_sql || st.changes() != 0)) s.bind(18, st.changes());
  if (!json_buf_.empty()) s.bind_static(19, json_buf_);
  if (is_call && st.id() != 0 && any_callee_) {
    // The callee may have arrived first.
    find_callee_.bind(1, st.id());
    if (find_callee_.step()) {
      s.bind(20, find_callee_.i64(0));
      ++counts.links;
    }
    find_callee_.reset();
  }
  s.run();
  ++counts.steps;
  for (int d = 0; d < st.stack().frames_size(); ++d) {
    const auto& f = st.stack().frames(d);
    frame_insert_.bind(1, tx_row).bind(2, no).bind(3, d);
    frame_insert_.bind_text_or_null(4, f.function());
    frame_insert_.bind_static(5, f.module().empty() ? std::string_view("?") : std::string_view(f.module()));
    frame_insert_.bind(6, f.offset());
    frame_insert_.run();
  }
}

void Writer::insert_summary(int64_t tx_row, const v1::StepSummary& sm) {
  Stmt& s = summary_insert_;
  s.bind(1, tx_row).bind_static(2, kind_name(sm.kind()));
  if (sm.fingerprint() != 0) s.bind(3, sm.fingerprint());
  if (int64_t t = text_id(sm.text()); t != 0) s.bind(4, t);
  s.bind(5, sm.count()).bind(6, sm.elapsed_ns());
  if (sm.rows() >= 0) s.bind(7, sm.rows());
  s.bind(8, sm.errors()).bind(9, sm.bytes_read()).bind(10, sm.bytes_written());
  s.run();
}

int64_t Writer::text_id(std::string_view text) {
  if (text.empty()) return 0;
  // A 64-bit hash collision between two distinct texts would make them share a row; at FNV-1a's
  // 2^-64 per pair this is accepted (documented in docs/schema.md).
  uint64_t h = fnv1a64(text);
  if (auto it = text_ids_.find(h); it != text_ids_.end()) return it->second;
  text_insert_.bind(1, h).bind_static(2, text).run();
  int64_t id;
  if (sqlite3_changes(db_.get()) > 0) {
    id = sqlite3_last_insert_rowid(db_.get());
  } else {
    text_select_.bind(1, h);
    text_select_.step();
    id = text_select_.i64(0);
    text_select_.reset();
  }
  if (text_ids_.size() >= kMaxCachedTexts) text_ids_.clear();
  text_ids_.emplace(h, id);
  return id;
}

}  // namespace txray
