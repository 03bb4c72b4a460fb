#include "span_builder.h"

#include <cctype>
#include <cstdio>
#include <string_view>

namespace txray::otlp {

namespace {

using otpb::common::v1::KeyValue;
using otpb::trace::v1::Span;
using otpb::trace::v1::Span_Event;
using Attrs = google::protobuf::RepeatedPtrField<KeyValue>;

// W3C trace flags "sampled", and the OTLP flags saying whether the parent is remote (another process).
constexpr uint32_t kSampled = 0x01;
constexpr uint32_t kHasIsRemote = 0x100;
constexpr uint32_t kIsRemote = 0x200;

void put(Attrs& a, std::string_view key, std::string_view value) {
  KeyValue* kv = a.Add();
  kv->set_key(key.data(), key.size());
  kv->mutable_value()->set_string_value(value.data(), value.size());
}
void put(Attrs& a, std::string_view key, int64_t value) {
  KeyValue* kv = a.Add();
  kv->set_key(key.data(), key.size());
  kv->mutable_value()->set_int_value(value);
}
void put_hex(Attrs& a, std::string_view key, uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  put(a, key, std::string_view(buf, 16));
}

// Every wire attribute not mapped to a semantic convention keeps its name under txray.attr.
void put_wire_attrs(Attrs& a, const google::protobuf::RepeatedPtrField<v1::Attribute>& wire) {
  for (const auto& w : wire) put(a, "txray.attr." + w.key(), w.value());
}

const std::string* wire_attr(const google::protobuf::RepeatedPtrField<v1::Attribute>& wire, std::string_view key) {
  for (const auto& w : wire)
    if (w.key() == key) return &w.value();
  return nullptr;
}

int64_t to_int(std::string_view s) {
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "ip:port", "[v6]:port", "host:port" -> host and port (0 when none).
void split_host_port(std::string_view hp, std::string& host, int64_t& port) {
  port = 0;
  if (!hp.empty() && hp[0] == '[') {
    auto close = hp.find(']');
    host.assign(hp.substr(1, close == std::string_view::npos ? std::string_view::npos : close - 1));
    if (close != std::string_view::npos && close + 1 < hp.size() && hp[close + 1] == ':') port = to_int(hp.substr(close + 2));
    return;
  }
  auto colon = hp.rfind(':');
  if (colon != std::string_view::npos && hp.find(':') == colon) {
    host.assign(hp.substr(0, colon));
    port = to_int(hp.substr(colon + 1));
  } else {
    host.assign(hp);
  }
}

struct Url {
  std::string scheme, host;
  int64_t port = 0;
};

Url parse_url(std::string_view u) {
  Url out;
  auto sep = u.find("://");
  if (sep == std::string_view::npos) return out;
  out.scheme.assign(u.substr(0, sep));
  for (auto& c : out.scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view rest = u.substr(sep + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  split_host_port(rest, out.host, out.port);
  if (out.port == 0) out.port = out.scheme == "https" ? 443 : out.scheme == "http" ? 80 : 0;
  return out;
}

// The facts every span and event carries so the profile can be rebuilt: row number, GAP, CPU_T.
void put_row(Attrs& a, const v1::Step& s, int row) {
  put(a, "txray.row", row);
  put(a, "txray.gap_ns", static_cast<int64_t>(s.gap_ns()));
  put(a, "txray.cpu_ns", static_cast<int64_t>(s.cpu_ns()));
  if (s.bytes_read()) put(a, "txray.bytes_read", static_cast<int64_t>(s.bytes_read()));
  if (s.bytes_written()) put(a, "txray.bytes_written", static_cast<int64_t>(s.bytes_written()));
}

bool is_span_kind(v1::StepKind k) {
  return k == v1::SQL || k == v1::HTTP_CALL || k == v1::DNS || k == v1::SOCKET || k == v1::DB_CONNECT ||
         k == v1::REDIS || k == v1::MEMCACHED;
}

void set_error(Span& span, const std::string& message) {
  span.mutable_status()->set_code(otpb::trace::v1::Status::STATUS_CODE_ERROR);
  span.mutable_status()->set_message(message);
}

// SQL rows: which database. See DbMemory in the header for the order of evidence.
DbMemory::Db sql_db(const v1::Step& s, const DbMemory::Db* in_tx, DbMemory& dbs, uint64_t instance) {
  std::string own;  // evidence only one library leaves on its rows
  if (s.error().rfind("SQLite error", 0) == 0 || wire_attr(s.attributes(), "binds")) own = "sqlite";
  else if (wire_attr(s.attributes(), "sqlstate") || wire_attr(s.attributes(), "params")) own = "postgresql";
  if (!own.empty()) dbs.note_system(instance, own);
  const DbMemory::Db* process = dbs.only(instance);
  for (const DbMemory::Db* known : {in_tx, process}) {
    if (known && !known->system.empty() && (own.empty() || own == known->system)) return *known;
  }
  DbMemory::Db db;
  db.system = own.empty() ? "other_sql" : own;
  return db;
}

void add_step_span(Span& span, const v1::Step& s, int row, const DbMemory::Db* in_tx, DbMemory& dbs,
                   uint64_t instance) {
  Attrs& a = *span.mutable_attributes();
  using SK = Span::SpanKind;
  switch (s.kind()) {
    case v1::SQL: {
      DbMemory::Db db = sql_db(s, in_tx, dbs, instance);
      std::string op = sql_operation(s.text());
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name(op.empty() ? db.system : op);
      put(a, "db.system.name", db.system);
      put(a, "db.query.text", s.text());
      if (!op.empty()) put(a, "db.operation.name", op);
      if (!db.nspace.empty()) put(a, "db.namespace", db.nspace);
      if (!db.host.empty()) put(a, "server.address", db.host);
      if (db.port) put(a, "server.port", db.port);
      if (s.rows() >= 0) put(a, "db.response.returned_rows", s.rows());
      if (!s.error().empty()) {
        const std::string* state = wire_attr(s.attributes(), "sqlstate");
        std::string code = state ? *state : std::to_string(s.status());
        put(a, "db.response.status_code", code);
        put(a, "error.type", code);
      }
      put(a, "txray.rows", s.rows());
      if (s.changes() >= 0) put(a, "txray.changes", s.changes());
      put(a, "txray.fetch_ns", static_cast<int64_t>(s.fetch_ns()));
      break;
    }
    case v1::HTTP_CALL: {
      const std::string* method = wire_attr(s.attributes(), "method");
      Url u = parse_url(s.text());
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name(method ? *method : "HTTP");
      if (method) put(a, "http.request.method", *method);
      put(a, "url.full", s.text());
      if (!u.host.empty()) put(a, "server.address", u.host);
      if (u.port) put(a, "server.port", u.port);
      if (s.status() > 0) put(a, "http.response.status_code", s.status());
      if (s.status() >= 400) put(a, "error.type", std::to_string(s.status()));
      break;
    }
    case v1::REDIS:
    case v1::MEMCACHED: {
      // OpenTelemetry's database conventions: the command is the operation, the text (command and key
      // pattern, values never kept) the query summary.
      const std::string* cmd = wire_attr(s.attributes(), "command");
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name(cmd ? *cmd : s.text());
      put(a, "db.system.name", s.kind() == v1::REDIS ? "redis" : "memcached");
      if (cmd) put(a, "db.operation.name", *cmd);
      put(a, "db.query.text", s.text());
      break;
    }
    case v1::DNS:
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name("DNS " + s.text());
      put(a, "dns.question.name", s.text());
      break;
    case v1::SOCKET: {
      std::string host;
      int64_t port = 0;
      if (const std::string* addr = wire_attr(s.attributes(), "addr")) host = *addr;
      if (const std::string* p = wire_attr(s.attributes(), "port")) port = to_int(*p);
      if (host.empty()) split_host_port(s.text(), host, port);
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name("connect");
      put(a, "network.transport", "tcp");
      if (!host.empty()) put(a, "network.peer.address", host);
      if (port) put(a, "network.peer.port", port);
      if (const std::string* lp = wire_attr(s.attributes(), "localport")) put(a, "network.local.port", to_int(*lp));
      put_hex(a, "txray.socket_uid", s.id());
      break;
    }
    case v1::DB_CONNECT: {
      DbMemory::Db db;
      DbMemory::parse_connect(s, db);
      span.set_kind(SK::Span_SpanKind_SPAN_KIND_CLIENT);
      span.set_name("connect " + (db.system.empty() ? std::string("database") : db.system));
      if (!db.system.empty()) put(a, "db.system.name", db.system);
      if (!db.nspace.empty()) put(a, "db.namespace", db.nspace);
      if (!db.host.empty()) put(a, "server.address", db.host);
      if (db.port) put(a, "server.port", db.port);
      put(a, "txray.text", s.text());
      break;
    }
    default:
      break;
  }
  put_row(a, s, row);
  if (s.fingerprint()) put_hex(a, "txray.fingerprint", s.fingerprint());
  if (s.status() && s.kind() != v1::HTTP_CALL) put(a, "txray.status", s.status());
  put_wire_attrs(a, s.attributes());
  if (!s.error().empty()) {
    if (s.kind() != v1::SQL && s.kind() != v1::HTTP_CALL) put(a, "error.type", "_OTHER");
    set_error(span, s.error());
  } else if (s.kind() == v1::HTTP_CALL && s.status() >= 400) {
    set_error(span, "HTTP " + std::to_string(s.status()));
  }
}

void add_event(Span& span, const v1::Step& s, int row, uint64_t tx_start) {
  Span_Event* ev = span.add_events();
  ev->set_time_unix_nano(tx_start + s.start_offset_ns());
  ev->set_name(v1::StepKind_Name(s.kind()));
  Attrs& a = *ev->mutable_attributes();
  put_row(a, s, row);
  if (!s.text().empty()) put(a, "txray.text", s.text());
  if (s.id()) put_hex(a, "txray.socket_uid", s.id());
  if (s.elapsed_ns()) put(a, "txray.elapsed_ns", static_cast<int64_t>(s.elapsed_ns()));
  if (s.fingerprint()) put_hex(a, "txray.fingerprint", s.fingerprint());
  if (s.status()) put(a, "txray.status", s.status());
  if (!s.error().empty()) put(a, "txray.error", s.error());
  put_wire_attrs(a, s.attributes());
}

void add_summary_event(Span& span, const v1::StepSummary& sm, uint64_t at) {
  Span_Event* ev = span.add_events();
  ev->set_time_unix_nano(at);
  ev->set_name("txray.summary");
  Attrs& a = *ev->mutable_attributes();
  put(a, "txray.kind", v1::StepKind_Name(sm.kind()));
  if (sm.fingerprint()) put_hex(a, "txray.fingerprint", sm.fingerprint());
  if (!sm.text().empty()) put(a, "txray.text", sm.text());
  put(a, "txray.count", static_cast<int64_t>(sm.count()));
  put(a, "txray.elapsed_ns", static_cast<int64_t>(sm.elapsed_ns()));
  put(a, "txray.rows", sm.rows());
  put(a, "txray.errors", static_cast<int64_t>(sm.errors()));
  if (sm.bytes_read()) put(a, "txray.bytes_read", static_cast<int64_t>(sm.bytes_read()));
  if (sm.bytes_written()) put(a, "txray.bytes_written", static_cast<int64_t>(sm.bytes_written()));
}

void fill_tx_span(Span& span, const v1::Transaction& tx, const std::string& trace) {
  span.set_trace_id(trace);
  span.set_span_id(span_id_bytes(tx.txid()));
  // The span's W3C flags are those the transaction's trace carried (an older agent's: sampled).
  uint32_t w3c = tx.trace_flags() ? (tx.trace_flags() & 0xffu) : kSampled;
  if (tx.parent_span_id()) {
    span.set_parent_span_id(span_id_bytes(tx.parent_span_id()));
    span.set_flags(w3c | kHasIsRemote | kIsRemote);
  } else {
    span.set_flags(w3c | kHasIsRemote);
  }
  if (!tx.tracestate().empty()) span.set_trace_state(tx.tracestate());
  bool process = tx.kind() == "process";
  span.set_kind(process ? Span::SPAN_KIND_INTERNAL : Span::SPAN_KIND_SERVER);
  span.set_name(tx.name());
  span.set_start_time_unix_nano(tx.start_unix_ns());
  span.set_end_time_unix_nano(tx.start_unix_ns() + tx.elapsed_ns());
  Attrs& a = *span.mutable_attributes();
  const auto& wa = tx.attributes();
  if (tx.kind() == "http") {
    std::string_view name = tx.name();
    auto sp = name.find(' ');
    const std::string* method = wire_attr(wa, "method");
    if (method) put(a, "http.request.method", *method);
    else if (sp != std::string_view::npos) put(a, "http.request.method", name.substr(0, sp));
    if (sp != std::string_view::npos) put(a, "url.path", name.substr(sp + 1));
    put(a, "url.scheme", "http");  // inbound transactions are plain HTTP (TLS servers make none)
    if (const std::string* q = wire_attr(wa, "query")) put(a, "url.query", *q);
    if (const std::string* ua = wire_attr(wa, "user_agent")) put(a, "user_agent.original", *ua);
    if (const std::string* host = wire_attr(wa, "host")) {
      std::string h;
      int64_t port = 0;
      split_host_port(*host, h, port);
      put(a, "server.address", h);
      if (port) put(a, "server.port", port);
    }
    if (tx.status() > 0) put(a, "http.response.status_code", tx.status());
  } else if (process) {
    put(a, "process.exit.code", tx.status());
  }
  if (!tx.client_addr().empty()) {
    std::string h;
    int64_t port = 0;
    split_host_port(tx.client_addr(), h, port);
    put(a, "client.address", h);
    if (port) put(a, "client.port", port);
  }
  put(a, "txray.kind", tx.kind());
  put(a, "txray.elapsed_ns", static_cast<int64_t>(tx.elapsed_ns()));
  put(a, "txray.cpu_ns", static_cast<int64_t>(tx.cpu_ns()));
  put(a, "txray.sql_ns", static_cast<int64_t>(tx.sql_ns()));
  put(a, "txray.fetch_ns", static_cast<int64_t>(tx.fetch_ns()));
  put(a, "txray.call_ns", static_cast<int64_t>(tx.call_ns()));
  put(a, "txray.sql_count", tx.sql_count());
  put(a, "txray.call_count", tx.call_count());
  put(a, "txray.bytes_read", static_cast<int64_t>(tx.bytes_read()));
  put(a, "txray.bytes_written", static_cast<int64_t>(tx.bytes_written()));
  put(a, "txray.status", tx.status());
  put(a, "thread.id", tx.tid());
  put_wire_attrs(a, wa);
  bool failed = !tx.error().empty() || (tx.kind() == "http" && tx.status() >= 500);
  if (failed) {
    put(a, "error.type", tx.kind() == "http" && tx.status() >= 500 ? std::to_string(tx.status()) : "_OTHER");
    set_error(span, tx.error().empty() ? "HTTP " + std::to_string(tx.status()) : tx.error());
  }
}

void fill_resource(otpb::resource::v1::Resource& r, const v1::AgentInfo& ag) {
  Attrs& a = *r.mutable_attributes();
  put(a, "service.name", ag.app().empty() ? ag.program() : ag.app());
  put_hex(a, "service.instance.id", ag.instance_id());
  put(a, "host.name", ag.host());
  put(a, "process.pid", static_cast<int64_t>(ag.pid()));
  put(a, "process.parent_pid", static_cast<int64_t>(ag.ppid()));
  put(a, "process.executable.name", ag.program());
  if (!ag.command_line().empty()) put(a, "process.command_line", ag.command_line());
  put(a, "telemetry.sdk.name", "txray");
  put(a, "telemetry.sdk.language", "cpp");
  put(a, "telemetry.sdk.version", ag.agent_version());
  put(a, "txray.agent.mode", ag.mode().empty() ? std::string("http") : ag.mode());
}

// The last DB_CONNECT row before `row` in the transaction, if any.
bool connect_before(const v1::Transaction& tx, int row, DbMemory::Db& out) {
  for (int i = row - 1; i >= 0; --i)
    if (tx.steps(i).kind() == v1::DB_CONNECT && DbMemory::parse_connect(tx.steps(i), out)) return true;
  return false;
}

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t derived_span_id(uint64_t txid, int row) {
  uint64_t id = mix64(txid ^ mix64(static_cast<uint64_t>(row) + 1));
  return id ? id : 1;
}

std::string span_id_bytes(uint64_t id) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i, id >>= 8) out[i] = static_cast<char>(id & 0xff);
  return out;
}

std::string trace_id_bytes(const v1::Transaction& tx) {
  if (tx.trace_id().size() == 16) return tx.trace_id();
  return span_id_bytes(mix64(tx.txid())) + span_id_bytes(tx.txid());
}

std::string sql_operation(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {  // skip blanks, "--" comments, "/* */" comments and opening parentheses
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '(') ++i;
    else if (text.compare(i, 2, "--") == 0) i = text.find('\n', i) == std::string::npos ? text.size() : text.find('\n', i) + 1;
    else if (text.compare(i, 2, "/*") == 0) i = text.find("*/", i) == std::string::npos ? text.size() : text.find("*/", i) + 2;
    else break;
  }
  std::string op;
  for (; i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])); ++i)
    op += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  return op;
}

bool DbMemory::parse_connect(const v1::Step& s, Db& out) {
  std::string_view t = s.text();
  const std::string* database = wire_attr(s.attributes(), "database");
  if (t.rfind("sqlite:", 0) == 0) {
    out = Db{};
    out.system = "sqlite";
    if (database) out.nspace = *database;
    else {
      std::string_view f = t.substr(7);
      if (auto sp = f.find(" ("); sp != std::string_view::npos && f != "(temporary)") f = f.substr(0, sp);
      out.nspace.assign(f);
    }
    return true;
  }
  if (t.rfind("postgresql:", 0) == 0 || t.rfind("postgres:", 0) == 0) {
    out = Db{};
    out.system = "postgresql";
    if (database) out.nspace = *database;
    if (const std::string* h = wire_attr(s.attributes(), "host")) out.host = *h;
    if (const std::string* p = wire_attr(s.attributes(), "port")) out.port = to_int(*p);
    if (out.host.empty() || out.nspace.empty()) {  // from the URL: postgresql://user@host:port/db
      Url u = parse_url(t);
      if (out.host.empty()) out.host = u.host;
      if (!out.port && u.port) out.port = u.port;
      if (out.nspace.empty()) {
        auto slash = t.find('/', t.find("://") + 3);
        if (slash != std::string_view::npos) out.nspace.assign(t.substr(slash + 1, t.find_first_of("? ", slash) - slash - 1));
      }
    }
    return true;
  }
  return false;
}

void DbMemory::note(uint64_t instance, const v1::Step& connect) {
  Db db;
  if (!parse_connect(connect, db)) return;
  bound();
  auto [it, fresh] = seen_.try_emplace(instance);
  Seen& s = it->second;
  if (fresh || (s.db.system == db.system && !s.connected && !s.several_systems)) {
    s.db = db;  // the first connection, or the first after a row of the same system told the system only
    s.connected = true;
    return;
  }
  s.connected = true;
  if (s.db.system != db.system) {
    s.several_systems = true;
  } else if (s.db.nspace != db.nspace || s.db.host != db.host || s.db.port != db.port) {
    s.several_namespaces = true;  // the system is still known; which database is not
    s.db.nspace.clear();
    s.db.host.clear();
    s.db.port = 0;
  }
}

void DbMemory::bound() {
  // One entry per process seen: a collector that outlives many short processes forgets them all at
  // once now and then (their rows are then named from their own evidence until a connection is seen).
  if (seen_.size() >= kMaxInstances) seen_.clear();
}

void DbMemory::note_system(uint64_t instance, const std::string& system) {
  bound();
  auto [it, fresh] = seen_.try_emplace(instance);
  if (fresh) it->second.db.system = system;
  else if (it->second.db.system != system) it->second.several_systems = true;
}

const DbMemory::Db* DbMemory::only(uint64_t instance) const {
  auto it = seen_.find(instance);
  if (it == seen_.end() || it->second.several_systems) return nullptr;
  return &it->second.db;
}

BuildCounts add_batch(const v1::Batch& batch, ExportRequest& req, DbMemory& dbs) {
  BuildCounts counts;
  uint64_t instance = batch.agent().instance_id();
  otpb::trace::v1::ResourceSpans* rs = nullptr;
  otpb::trace::v1::ScopeSpans* scope = nullptr;
  for (const v1::Transaction& tx : batch.transactions()) {
    for (const v1::Step& s : tx.steps())
      if (s.kind() == v1::DB_CONNECT) dbs.note(instance, s);
    if (tx.kind() == "unattributed") continue;
    if (!rs) {
      rs = req.add_resource_spans();
      fill_resource(*rs->mutable_resource(), batch.agent());
      scope = rs->add_scope_spans();
      scope->mutable_scope()->set_name("txray");
      scope->mutable_scope()->set_version(batch.agent().agent_version());
    }
    ++counts.transactions;
    std::string trace = trace_id_bytes(tx);
    Span* root = scope->add_spans();
    fill_tx_span(*root, tx, trace);
    ++counts.spans;
    // span index (into scope->spans) of each row that is a span, -1 for events
    std::vector<int> span_of(static_cast<size_t>(tx.steps_size()), -1);
    std::vector<uint64_t> id_of(static_cast<size_t>(tx.steps_size()), 0);
    int root_index = scope->spans_size() - 1;
    for (int i = 0; i < tx.steps_size(); ++i) {
      const v1::Step& s = tx.steps(i);
      // the innermost enclosing row that is a span
      int parent_span = root_index;
      uint64_t parent_id = tx.txid();
      for (int p = s.parent(), hops = 0; p >= 0 && p < i && hops < 64; p = tx.steps(p).parent(), ++hops) {
        if (span_of[static_cast<size_t>(p)] >= 0) {
          parent_span = span_of[static_cast<size_t>(p)];
          parent_id = id_of[static_cast<size_t>(p)];
          break;
        }
      }
      if (!is_span_kind(s.kind())) {
        add_event(*scope->mutable_spans(parent_span), s, i, tx.start_unix_ns());
        ++counts.events;
        continue;
      }
      uint64_t id = (s.kind() == v1::HTTP_CALL && s.id()) ? s.id() : derived_span_id(tx.txid(), i);
      Span* span = scope->add_spans();
      span->set_trace_id(trace);
      span->set_span_id(span_id_bytes(id));
      span->set_parent_span_id(span_id_bytes(parent_id));
      span->set_flags(kSampled | kHasIsRemote);
      span->set_start_time_unix_nano(tx.start_unix_ns() + s.start_offset_ns());
      span->set_end_time_unix_nano(tx.start_unix_ns() + s.start_offset_ns() + s.elapsed_ns());
      DbMemory::Db in_tx;
      bool have_in_tx = s.kind() == v1::SQL && connect_before(tx, i, in_tx);
      add_step_span(*span, s, i, have_in_tx ? &in_tx : nullptr, dbs, instance);
      span_of[static_cast<size_t>(i)] = scope->spans_size() - 1;
      id_of[static_cast<size_t>(i)] = id;
      ++counts.spans;
    }
    uint64_t end = tx.start_unix_ns() + tx.elapsed_ns();
    for (const auto& sm : tx.summary()) {
      add_summary_event(*scope->mutable_spans(root_index), sm, end);
      ++counts.events;
    }
  }
  return counts;
}

}  // namespace txray::otlp
