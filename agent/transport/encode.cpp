#include "encode.h"

#include "../core/clock.h"
#include "txray/v1/txray.pb.h"

namespace txray {
namespace {

void fill_step(const Step& s, v1::Step* p) {
  p->set_kind(static_cast<v1::StepKind>(s.kind));
  p->set_parent(s.parent);
  p->set_start_offset_ns(s.start_offset_ns);
  p->set_gap_ns(s.gap_ns);
  p->set_cpu_ns(s.cpu_ns);
  p->set_elapsed_ns(s.elapsed_ns);
  p->set_bytes_read(s.bytes_read);
  p->set_bytes_written(s.bytes_written);
  if (!s.text.empty()) p->set_text(s.text);
  if (!s.error.empty()) p->set_error(s.error);
  for (const auto& a : s.attrs) {
    auto* pa = p->add_attributes();
    pa->set_key(a.key);
    pa->set_value(a.value);
  }
  p->set_id(s.id);
  p->set_rows(s.rows);
  p->set_fetch_ns(s.fetch_ns);
  p->set_fingerprint(s.fingerprint);
  p->set_status(s.status);
  p->set_changes(s.changes);
}

void fill_transaction(const Transaction& t, v1::Transaction* p) {
  p->set_txid(t.txid);
  p->set_trace_id(std::string(reinterpret_cast<const char*>(t.trace_id), 16));
  p->set_parent_span_id(t.parent_span_id);
  p->set_name(t.name);
  p->set_start_unix_ns(t.start_unix_ns);
  p->set_elapsed_ns(t.elapsed_ns);
  p->set_cpu_ns(t.cpu_ns);
  p->set_sql_ns(t.totals.sql_ns);
  p->set_fetch_ns(t.totals.fetch_ns);
  p->set_call_ns(t.totals.call_ns);
  p->set_sql_count(t.totals.sql_count);
  p->set_call_count(t.totals.call_count);
  p->set_client_addr(t.client_addr);
  p->set_status(t.status);
  if (!t.error.empty()) p->set_error(t.error);
  p->set_bytes_read(t.bytes_read);
  p->set_bytes_written(t.bytes_written);
  p->set_tid(t.tid);
  p->set_kind(t.kind);
  for (const auto& s : t.steps) fill_step(s, p->add_steps());
  for (const auto& s : t.summary) {
    auto* ps = p->add_summary();
    ps->set_kind(static_cast<v1::StepKind>(s.kind));
    ps->set_fingerprint(s.fingerprint);
    ps->set_text(s.text);
    ps->set_count(s.count);
    ps->set_elapsed_ns(s.elapsed_ns);
    ps->set_rows(s.rows);
    ps->set_errors(s.errors);
    ps->set_bytes_read(s.bytes_read);
    ps->set_bytes_written(s.bytes_written);
  }
  for (const auto& a : t.attrs) {
    auto* pa = p->add_attributes();
    pa->set_key(a.key);
    pa->set_value(a.value);
  }
}

}  // namespace

bool encode_batch(const Identity& id, const Counters& c, uint64_t seq,
                  const std::vector<Transaction*>& txs, std::string* out) {
  v1::Batch b;
  auto* a = b.mutable_agent();
  a->set_instance_id(id.instance_id);
  a->set_host(id.host);
  a->set_pid(id.pid);
  a->set_ppid(id.ppid);
  a->set_program(id.program);
  a->set_app(id.app);
  a->set_agent_version(id.agent_version);
  a->set_start_unix_ns(id.start_unix_ns);
  a->set_mode(id.mode);
  a->set_command_line(id.command_line);
  auto* d = b.mutable_drops();
  d->set_queue_full(c.queue_full.load(std::memory_order_relaxed));
  d->set_send_failed(c.send_failed.load(std::memory_order_relaxed));
  d->set_encode_failed(c.encode_failed.load(std::memory_order_relaxed));
  d->set_steps_summarized(c.steps_summarized.load(std::memory_order_relaxed));
  d->set_internal_errors(c.internal_errors.load(std::memory_order_relaxed));
  b.set_batch_seq(seq);
  b.set_sent_unix_ns(clock::unix_ns());
  for (Transaction* t : txs) fill_transaction(*t, b.add_transactions());
  out->clear();
  return b.SerializeToString(out);
}

}  // namespace txray
