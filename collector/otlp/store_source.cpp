#include "store_source.h"

#include <unordered_map>

#include "attributes_json.h"

#include <cstdlib>

namespace txray::otlp {

namespace {

std::string where(const StoreSelection& sel) {
  std::string w = " WHERE (t.kind IS NULL OR t.kind != 'unattributed')";
  if (sel.since_ns) w += " AND t.end_unix_ns >= ?1";
  if (sel.until_ns) w += " AND t.end_unix_ns <= ?2";
  if (!sel.app.empty()) w += " AND t.app = ?3";
  return w;
}

void bind(Stmt& st, const StoreSelection& sel) {
  if (sel.since_ns) st.bind(1, *sel.since_ns);
  if (sel.until_ns) st.bind(2, *sel.until_ns);
  if (!sel.app.empty()) st.bind(3, sel.app);
}

void to_wire(const Attributes& in, google::protobuf::RepeatedPtrField<v1::Attribute>& out) {
  for (const auto& [k, v] : in) {
    auto* a = out.Add();
    a->set_key(k);
    a->set_value(v);
  }
}

v1::StepKind kind_of(const std::string& name) {
  v1::StepKind k = v1::STEP_KIND_UNSPECIFIED;
  v1::StepKind_Parse(name, &k);
  return k;
}

std::string hex_to_bytes(const std::string& hex) {
  if (hex.size() != 32) return {};
  std::string out(16, '\0');
  for (size_t i = 0; i < 16; ++i) out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

}  // namespace

std::vector<int64_t> select_transactions(const Db& db, const StoreSelection& sel) {
  Stmt st(db, "SELECT t.id FROM transactions t" + where(sel) + " ORDER BY t.start_unix_ns, t.id");
  bind(st, sel);
  std::vector<int64_t> ids;
  while (st.step()) ids.push_back(st.i64(0));
  return ids;
}

std::vector<v1::Batch> db_connect_batches(const Db& db, const StoreSelection& sel) {
  // Agents of the selection, then each one's DB_CONNECT rows in the order they were opened.
  Stmt st(db,
          "SELECT a.instance_id, s.start_offset_ns + t.start_unix_ns, x.text, s.attributes FROM steps s"
          " JOIN transactions t ON t.id = s.tx_id JOIN agents a ON a.id = t.agent_id"
          " LEFT JOIN texts x ON x.id = s.text_id"
          " WHERE s.kind = 'DB_CONNECT' AND t.agent_id IN (SELECT DISTINCT t.agent_id FROM transactions t" +
              where(sel) + ") ORDER BY t.start_unix_ns, s.no");
  bind(st, sel);
  std::unordered_map<uint64_t, size_t> index;
  std::vector<v1::Batch> out;
  while (st.step()) {
    auto instance = static_cast<uint64_t>(st.i64(0));
    auto [it, fresh] = index.try_emplace(instance, out.size());
    if (fresh) {
      out.emplace_back();
      out.back().mutable_agent()->set_instance_id(instance);
      auto* c = out.back().add_transactions();
      c->set_kind("unattributed");
    }
    auto* step = out[it->second].mutable_transactions(0)->add_steps();
    step->set_kind(v1::DB_CONNECT);
    step->set_parent(-1);
    step->set_text(st.is_null(2) ? std::string() : st.text(2));
    if (!st.is_null(3)) to_wire(parse_attributes_json(st.text(3)), *step->mutable_attributes());
  }
  return out;
}

v1::AgentInfo to_wire(const Agent& a) {
  v1::AgentInfo w;
  w.set_instance_id(a.instance_id);
  w.set_host(a.host);
  w.set_pid(static_cast<uint32_t>(a.pid));
  w.set_ppid(static_cast<uint32_t>(a.ppid));
  w.set_program(a.program);
  w.set_app(a.app);
  w.set_agent_version(a.agent_version);
  w.set_start_unix_ns(static_cast<uint64_t>(a.start_unix_ns));
  w.set_mode(a.mode);
  w.set_command_line(a.command_line);
  return w;
}

v1::Transaction to_wire(const Transaction& t) {
  v1::Transaction w;
  w.set_txid(t.txid);
  w.set_trace_id(hex_to_bytes(t.trace_id));
  w.set_parent_span_id(t.parent_span_id);
  w.set_name(t.name);
  w.set_start_unix_ns(static_cast<uint64_t>(t.start_unix_ns));
  w.set_elapsed_ns(static_cast<uint64_t>(t.elapsed_ns));
  w.set_cpu_ns(static_cast<uint64_t>(t.cpu_ns));
  w.set_sql_ns(static_cast<uint64_t>(t.sql_ns));
  w.set_fetch_ns(static_cast<uint64_t>(t.fetch_ns));
  w.set_call_ns(static_cast<uint64_t>(t.call_ns));
  w.set_sql_count(static_cast<uint32_t>(t.sql_count));
  w.set_call_count(static_cast<uint32_t>(t.call_count));
  w.set_client_addr(t.client_addr);
  w.set_status(static_cast<int32_t>(t.status));
  w.set_error(t.error);
  w.set_bytes_read(static_cast<uint64_t>(t.bytes_read));
  w.set_bytes_written(static_cast<uint64_t>(t.bytes_written));
  w.set_tid(static_cast<uint32_t>(t.tid));
  w.set_kind(t.kind);
  // The W3C tracestate and flags are stored as attributes (writer.cpp): back into their fields.
  Attributes attrs;
  for (const auto& kv : t.attributes) {
    if (kv.first == "tracestate") w.set_tracestate(kv.second);
    else if (kv.first == "trace_flags") w.set_trace_flags(static_cast<uint32_t>(std::strtoul(kv.second.c_str(), nullptr, 16)) & 0xffu);
    else attrs.push_back(kv);
  }
  to_wire(attrs, *w.mutable_attributes());
  for (const Step& s : t.steps) {
    auto* o = w.add_steps();
    o->set_kind(kind_of(s.kind));
    o->set_parent(s.parent);
    o->set_start_offset_ns(static_cast<uint64_t>(s.start_offset_ns));
    o->set_gap_ns(static_cast<uint64_t>(s.gap_ns));
    o->set_cpu_ns(static_cast<uint64_t>(s.cpu_ns));
    o->set_elapsed_ns(static_cast<uint64_t>(s.elapsed_ns));
    o->set_bytes_read(static_cast<uint64_t>(s.bytes_read));
    o->set_bytes_written(static_cast<uint64_t>(s.bytes_written));
    o->set_text(s.text);
    o->set_error(s.error);
    to_wire(s.attributes, *o->mutable_attributes());
    o->set_id(s.id.value_or(0));
    o->set_rows(s.rows.value_or(-1));
    o->set_fetch_ns(static_cast<uint64_t>(s.fetch_ns.value_or(0)));
    o->set_fingerprint(s.fingerprint.value_or(0));
    o->set_status(static_cast<int32_t>(s.status.value_or(0)));
    o->set_changes(s.changes.value_or(-1));
  }
  for (const Summary& s : t.summary) {
    auto* o = w.add_summary();
    o->set_kind(kind_of(s.kind));
    o->set_fingerprint(s.fingerprint);
    o->set_text(s.text);
    o->set_count(static_cast<uint64_t>(s.count));
    o->set_elapsed_ns(static_cast<uint64_t>(s.elapsed_ns));
    o->set_rows(s.rows.value_or(-1));
    o->set_errors(static_cast<uint64_t>(s.errors));
    o->set_bytes_read(static_cast<uint64_t>(s.bytes_read));
    o->set_bytes_written(static_cast<uint64_t>(s.bytes_written));
  }
  return w;
}

}  // namespace txray::otlp
