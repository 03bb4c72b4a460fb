// Encodes batches in the txray.v1 wire format (proto/txray/v1/txray.proto) with pb::Writer. The field
// numbers below are that file's; keep them in step with it (tests/agent/transport/transport_test.cpp decodes
// the result with the generated code).
#include "transport/encode.h"

#include "cpu/clock.h"
#include "cpu/cpu_sampler.h"
#include "cpu/stack_capture.h"
#include "core/config.h"
#include "protocols/tracecontext/context.h"
#include "transport/perf_drain.h"
#include "transport/pb_writer.h"
#include "transport/self_cost.h"

#include <cstring>
#include "transport/stack_encode.h"

namespace txray {
namespace {

void write_attr(pb::Writer& w, int field, std::string_view key, std::string_view value) {
  size_t m;
  {
    pb::Writer::Run r(w, pb::Writer::kBegin + pb::Writer::room_for(key) + pb::Writer::room_for(value));
    m = r.begin(field, 1);
    r.str(1, key);
    r.str(2, value);
  }
  w.end(m, 1);
}
void write_attr(pb::Writer& w, int field, const Attr& a) { write_attr(w, field, a.key, a.value); }

// Step.hot (19) and Step.cpu_samples (20): the CPU samples in the row's GAP (transport/cpu_profile.h).
void write_row_hot(pb::Writer& w, const cpu::RowHot& r) {
  for (const auto& f : r.top) {
    size_t m = w.begin(19);
    w.str(1, f.function);
    w.str(2, f.module);
    w.u64(3, f.samples);
    w.end(m);
  }
  w.u64(20, r.samples);
}

using Run = pb::Writer::Run;
constexpr size_t kField = pb::Writer::kField;
constexpr size_t kBegin = pb::Writer::kBegin;
using pb::Writer;

void write_step(pb::Writer& w, const Step& s, const cpu::RowHot* hot) {
  std::string_view text = s.text, error = s.error;
  size_t m;
  {
    // Runs of fields under one room check each (pb::Writer::Run): the fields before the attributes, and
    // those after them.
    Run r(w, kBegin + 8 * kField + Writer::room_for(text) + Writer::room_for(error));
    m = r.begin(19, 1);  // Transaction.steps
    r.u64(1, uint64_t(s.kind));
    r.i32(2, s.parent);
    r.u64(3, s.start_offset_ns);
    r.u64(4, s.gap_ns);
    r.u64(5, s.cpu_ns);
    r.u64(6, s.elapsed_ns);
    r.u64(7, s.bytes_read);
    r.u64(8, s.bytes_written);
    r.str(9, text);
    r.str(10, error);
  }
  if (!s.binds.empty()) write_attr(w, 11, "binds", s.binds);
  for (const auto& a : s.attrs) write_attr(w, 11, a);
  {
    Run r(w, 6 * kField);
    r.fixed64(12, s.id);
    r.i64(13, s.rows);
    r.u64(14, s.fetch_ns);
    r.fixed64(15, s.fingerprint);
    r.i32(16, s.status);
    r.i64(17, s.changes);
  }
  if (hot) write_row_hot(w, *hot);
  if (s.stack) wire::write_stack(w, 18, s.stack->ip, s.stack->n);
  w.end(m, 1);
}

void write_summary(pb::Writer& w, const StepSummary& s) {
  size_t m = w.begin(20);  // Transaction.summary
  w.u64(1, uint64_t(s.kind));
  w.fixed64(2, s.fingerprint);
  w.str(3, s.text);
  w.u64(4, s.count);
  w.u64(5, s.elapsed_ns);
  w.i64(6, s.rows);
  w.u64(7, s.errors);
  w.u64(8, s.bytes_read);
  w.u64(9, s.bytes_written);
  w.end(m);
}

void write_transaction(pb::Writer& w, const Transaction& t) {
  std::string_view name = t.name, client = t.client_addr, error = t.error;
  std::string_view trace(reinterpret_cast<const char*>(t.trace_id), 16);
  size_t m;
  {
    Run r(w, kBegin + 15 * kField + Writer::room_for(trace) + Writer::room_for(name) + Writer::room_for(client) +
                 Writer::room_for(error));
    m = r.begin(5, 2);  // Batch.transactions
    r.fixed64(1, t.txid);
    r.bytes(2, trace);
    r.fixed64(3, t.parent_span_id);
    r.str(4, name);
    r.u64(5, t.start_unix_ns);
    r.u64(6, t.elapsed_ns);
    r.u64(7, t.cpu_ns);
    r.u64(8, t.totals.sql_ns);
    r.u64(9, t.totals.fetch_ns);
    r.u64(10, t.totals.call_ns);
    r.u64(11, t.totals.sql_count);
    r.u64(12, t.totals.call_count);
    r.str(13, client);
    r.i32(14, t.status);
    r.str(15, error);
    r.u64(16, t.bytes_read);
    r.u64(17, t.bytes_written);
    r.u64(18, t.tid);
  }
  const auto& hot = t.cpu_profile.rows;  // sorted by row
  size_t h = 0;
  for (size_t i = 0; i < t.steps.size(); ++i) {
    while (h < hot.size() && hot[h].row < i) ++h;
    write_step(w, t.steps[i], h < hot.size() && hot[h].row == i ? &hot[h] : nullptr);
  }
  for (const auto& s : t.summary) write_summary(w, s);
  for (const auto& a : t.attrs) write_attr(w, 21, a);
  {
    std::string_view kind = t.kind, tracestate = t.tracestate;
    Run r(w, Writer::room_for(kind) + Writer::room_for(tracestate) + 3 * kField);
    r.str(22, kind);
    r.u64(26, t.agent_cost_ns);
    r.u64(27, t.agent_thread_ns);
    r.str(28, tracestate);
    // The flags its outbound calls carry: received, else the agent's own (tracecontext/context.h).
    r.u64(29, t.trace_flags >= 0 ? uint64_t(t.trace_flags) : own_trace_flags(t.trace_id, config().sample_rate));
  }
  for (const auto& st : t.cpu_profile.stacks) {
    size_t k = w.begin(24);  // Transaction.cpu_stacks
    w.str(1, st.folded);
    w.u64(2, st.samples);
    w.end(k);
  }
  w.u64(25, t.cpu.samples_dropped);
  w.end(m, 2);
}


void encode_agent_info(std::string& out, const Identity& id, const selfcost::Units& u, uint64_t rate_bits,
                       const std::string& status);

bool same_identity(const Identity& a, const Identity& b) {
  return a.instance_id == b.instance_id && a.pid == b.pid && a.ppid == b.ppid && a.start_unix_ns == b.start_unix_ns &&
         a.host == b.host && a.program == b.program && a.app == b.app && a.agent_version == b.agent_version &&
         a.mode == b.mode && a.command_line == b.command_line;
}

// Batch.agent (AgentInfo) as encoded bytes. Every batch carries it (the collector upserts its agents
// table from each one), but it changes only with the sampler's status, the calibrated units or (in tests)
// the identity: encoded again then, else copied (~1,500 instructions a batch before, mostly
// UTF-8 checks of strings that never change). One cache per thread (the agent thread; the exit flush).
std::string_view agent_info(const Identity& id, double sample_rate) {
  struct Cache {
    bool valid = false;
    Identity id;
    selfcost::Units units;
    uint64_t rate_bits = 0;
    std::string cpu_status;
    std::string bytes;
  };
  // Never destroyed: the exit flush may encode after this thread's thread_local destructors ran.
  static thread_local Cache* cache = new Cache;
  Cache& c = *cache;
  const selfcost::Units& u = selfcost::units();
  uint64_t rate_bits = 0;
  if (sample_rate > 0) std::memcpy(&rate_bits, &sample_rate, sizeof rate_bits);
  const std::string& status = cpu::status_now();
  if (c.valid && c.rate_bits == rate_bits && std::memcmp(&c.units, &u, sizeof u) == 0 && c.cpu_status == status &&
      same_identity(c.id, id))
    return c.bytes;
  c.valid = true;
  c.id = id;
  std::memcpy(&c.units, &u, sizeof u);
  c.rate_bits = rate_bits;
  c.cpu_status = status;
  c.bytes.clear();
  encode_agent_info(c.bytes, id, u, rate_bits, status);
  return c.bytes;
}

void encode_agent_info(std::string& out, const Identity& id, const selfcost::Units& u, uint64_t rate_bits,
                       const std::string& status) {
  pb::Writer w(out);
  size_t a = w.begin(1);  // Batch.agent
  w.fixed64(1, id.instance_id);
  w.str(2, id.host);
  w.u64(3, id.pid);
  w.u64(4, id.ppid);
  w.str(5, id.program);
  w.str(6, id.app);
  w.str(7, id.agent_version);
  w.u64(8, id.start_unix_ns);
  w.str(9, id.mode);
  w.str(10, id.command_line);
  if (u.valid()) {
    auto ps = [](double ns) { return uint64_t(ns * 1000 + 0.5); };
    size_t cu = w.begin(13);  // AgentInfo.cost_units
    w.u64(1, ps(u.tx_ns));
    w.u64(2, ps(u.row_ns));
    w.u64(3, ps(u.folded_ns));
    w.u64(4, ps(u.io_ns));
    w.u64(5, ps(u.syscall_ns));
    w.u64(6, ps(u.encode_tx_ns));
    w.u64(7, ps(u.encode_row_ns));
    w.u64(8, ps(u.cpu_clock_ns));
    w.u64(9, u.calibration_ns);
    w.end(cu);
  }
  w.fixed64(16, rate_bits);  // AgentInfo.sample_rate (a double: wire type 1)
  w.str(12, status);         // AgentInfo.cpu_sampler
  w.end(a);
}

}  // namespace

namespace {
bool encode_into(pb::Writer& w, const Identity& id, const Counters& c, uint64_t seq,
                 const std::vector<Transaction*>& txs, const std::vector<transport::DropWindow>& windows,
                 uint64_t sent_transactions, const std::vector<transport::SampledCount>* sampled_out,
                 double sample_rate) {
  w.raw(agent_info(id, sample_rate));
  size_t d = w.begin(2);  // Batch.drops
  w.u64(1, c.queue_full.load(std::memory_order_relaxed));
  w.u64(2, c.send_failed.load(std::memory_order_relaxed));
  w.u64(3, c.encode_failed.load(std::memory_order_relaxed));
  w.u64(4, c.steps_summarized.load(std::memory_order_relaxed));
  w.u64(5, c.internal_errors.load(std::memory_order_relaxed));
  w.u64(8, c.sampled_out.load(std::memory_order_relaxed));
  w.u64(6, cpu::dropped_total());  // DropCounters.cpu_samples_dropped
  w.u64(9, cpu::perfdrain::lost_total());  // DropCounters.cpu_samples_lost
  w.u64(10, stacks::missed());             // DropCounters.stacks_missed
  w.u64(11, c.streams_unparsed.load(std::memory_order_relaxed));  // DropCounters.streams_unparsed
  w.end(d);
  w.u64(3, seq);
  w.u64(4, clock::unix_ns());
  for (const Transaction* t : txs) write_transaction(w, *t);
  for (const auto& dw : windows) {
    size_t m = w.begin(6);  // Batch.drop_windows
    w.u64(1, dw.seq);
    w.u64(2, uint64_t(dw.reason) + 1);  // DropReason: QUEUE_FULL = 1, SEND_FAILED, ENCODE_FAILED
    w.u64(3, dw.count);
    w.u64(4, dw.first_unix_ns);
    w.u64(5, dw.last_unix_ns);
    w.u64(6, dw.closed ? 1 : 0);
    w.end(m);
  }
  w.u64(7, sent_transactions);
  if (sampled_out) {
    for (const auto& sc : *sampled_out) {
      size_t m = w.begin(10);  // Batch.sampled_out (ShedCount)
      w.str(1, sc.name);
      w.u64(2, sc.minute_unix_ns);
      w.u64(3, sc.bucket);
      w.u64(4, sc.count);
      w.u64(5, sc.elapsed_ns);
      w.str(7, sc.kind);
      w.end(m);
    }
  }
  return true;
}
}  // namespace

bool encode_batch(const Identity& id, const Counters& c, uint64_t seq,
                  const std::vector<Transaction*>& txs, std::string* out,
                  const std::vector<transport::DropWindow>& windows, uint64_t sent_transactions,
                  const std::vector<transport::SampledCount>* sampled_out, double sample_rate) {
  out->clear();
  pb::Writer w(*out);
  return encode_into(w, id, c, seq, txs, windows, sent_transactions, sampled_out, sample_rate);
}

bool encode_batch(const Identity& id, const Counters& c, uint64_t seq,
                  const std::vector<Transaction*>& txs, BatchBuffer* out,
                  const std::vector<transport::DropWindow>& windows, uint64_t sent_transactions,
                  const std::vector<transport::SampledCount>* sampled_out, double sample_rate) {
  pb::Writer w(out->buf, pb::Writer::KeepSize{});
  bool ok = encode_into(w, id, c, seq, txs, windows, sent_transactions, sampled_out, sample_rate);
  out->len = ok ? w.size() : 0;
  return ok;
}

}  // namespace txray
