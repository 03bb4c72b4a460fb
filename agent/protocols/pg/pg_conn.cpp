#include "protocols/pg/pg_conn.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/counters.h"
#include "core/recorder.h"
#include "protocols/sql/sql_binds.h"
#include "protocols/sql/sql_config.h"

namespace txray::pg {

namespace {
constexpr std::string_view kNotFollowed = "wire protocol not followed";
constexpr std::string_view kSkipped = "not run: an earlier statement failed";

// An Execute of a portal whose Bind the client did not see: normalized once per process.
const sql::StatementText& unknown_portal() {
  static const sql::StatementText t = sql::statement_text("EXECUTE");
  return t;
}
}  // namespace

PgConn::PgConn(const WireEnv& env, TxSource tx_of) : env_(env), tx_of_(tx_of) {
  front_.expect_untyped(true);
  if (!env_.peer) env_.peer = "";
}

PgConn::~PgConn() { close_all("connection closed"); }

// --- feeding -----------------------------------------------------------------------------------------

void PgConn::on_sent(const char* p, size_t n) {
  if (stopped_ || !p || n == 0) return;
  in_front_ = true;
  if (!front_.feed(p, n, [this](const Message& m) { return on_front(m); }) && !stopped_) stop();
}

void PgConn::on_received(const char* p, size_t n) {
  if (stopped_ || !p || n == 0) return;
  in_front_ = false;
  if (!back_.feed(p, n, [this](const Message& m) { return on_back(m); }) && !stopped_) stop();
}

// The counters a row opens or closes with: the stream's positions at this message (its first byte, when
// it opens a row), not the socket's, which already count the rest of the program's call.
sql::StreamPos PgConn::bytes_here(bool at_message_start) const {
  uint64_t w = front_.pos(), r = back_.pos();
  if (in_front_ && at_message_start) w -= std::min(w, front_.last_size());
  return {r, w};
}

void PgConn::on_end(std::string_view why) { close_all(why); }

bool PgConn::stop() {
  if (stopped_) return false;
  stopped_ = true;
  counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
  close_all(kNotFollowed);
  stmts_.clear();
  hot_ = nullptr;
  order_.clear();
  portals_.clear();
  have_unnamed_portal_ = false;
  unnamed_portal_ = {};
  return false;
}

// --- rows --------------------------------------------------------------------------------------------

Transaction* PgConn::next_tx() { return tx_of_ ? tx_of_(env_.owner ? *env_.owner : no_owner_) : nullptr; }

int PgConn::open(Transaction* tx, const sql::StatementText& t, std::string_view params) {
  if (!tx) return -1;
  int idx;
  if (!free_rows_.empty()) {
    idx = free_rows_.back();
    free_rows_.pop_back();
  } else {
    if (rows_.size() >= kMaxRows) return -1;
    rows_.emplace_back();
    idx = int(rows_.size() - 1);
  }
  Row& r = rows_[size_t(idx)];
  r.data_rows = 0;
  r.notices = 0;
  r.gen = next_gen_++;
  r.used = true;
  sql::open_row(r.w, tx, t, params, bytes_here(true));
  if (!r.w) {
    r.used = false;
    free_rows_.push_back(idx);
    return -1;
  }
  return idx;
}

void PgConn::close_row(int idx, uint32_t gen, std::string_view error) {
  Row* r = row_of(idx, gen);
  if (!r) return;
  if ((r->notices || notifications_unreported_) && rec::usable(r->w.step)) {
    if (r->notices) rec::add_attr(r->w.step, "notices", std::to_string(r->notices));
    if (notifications_unreported_) {
      rec::add_attr(r->w.step, "notifications", std::to_string(notifications_unreported_));
      notifications_unreported_ = 0;
    }
  }
  sql::close_row(r->w, bytes_here(false), error);
  r->used = false;
  free_rows_.push_back(idx);
  if (unit_.row == idx && unit_.gen == gen) clear_unit();
}

void PgConn::close_all(std::string_view error) {
  if (connecting_) {
    connecting_ = false;
    if (!error.empty() && rec::usable(connect_)) {
      rec::set_error(connect_, error);
      rec::mark_failed(connect_.tx, error);
    }
    if (rec::usable(connect_)) rec::close(connect_);
    connect_ = StepRef{};
  }
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].used) close_row(int(i), rows_[i].gen, error);
  ops_.clear();
  clear_unit();
  skipping_ = false;
}

// The statement being built gets no Execute: a Parse alone is a prepare (closed at its ParseComplete), a
// Bind alone closes at its BindComplete — or now, when that reply was read already.
void PgConn::finish_unit_slow() {
  int row = unit_.row;
  uint32_t gen = unit_.gen;
  uint64_t last_seq = unit_.last_seq;
  Row* r = row_of(row, gen);
  if (r && !unit_.bound) {
    std::string head = "PREPARE " + (unit_.stmt.empty() ? std::string("\"\"") : unit_.stmt) + " AS ";
    const Stmt* st = find_stmt(unit_.stmt);
    if (st && rec::usable(r->w.step)) sql::retext_row(r->w, sql::statement_text(head + std::string(st->text.text.view())));
  }
  clear_unit();
  if (!r) return;
  if (last_seq >= head_seq_ && last_seq - head_seq_ < ops_.size()) ops_[size_t(last_seq - head_seq_)].closes = true;
  else close_row(row, gen);
}

// The names are read only while the unit has a row (stmt) and is bound (portal): they are left as they
// are otherwise, and written only when they change (most drivers repeat the same ones).
void PgConn::start_unit(int row, uint32_t gen, std::string_view stmt) {
  unit_.row = row;
  unit_.gen = gen;
  unit_.bound = false;
  if (unit_.stmt != stmt) unit_.stmt.assign(stmt);
  unit_.last_seq = 0;
}

void PgConn::clear_unit() {
  unit_.row = -1;
  unit_.gen = 0;
  unit_.bound = false;
  unit_.last_seq = 0;
}

const PgConn::Stmt* PgConn::find_stmt(std::string_view name) {
  if (hot_ && hot_name_ == name) return hot_;
  auto it = stmts_.find(std::string(name));
  if (it == stmts_.end()) return nullptr;
  hot_ = &it->second;
  hot_name_.assign(name);
  return hot_;
}

void PgConn::forget_stmt(std::string_view name) {
  auto it = stmts_.find(std::string(name));
  if (it == stmts_.end()) return;
  if (hot_ == &it->second) hot_ = nullptr;
  stmts_.erase(it);
}

const sql::StatementText* PgConn::find_portal(std::string_view name) const {
  if (name.empty()) return have_unnamed_portal_ ? &unnamed_portal_ : nullptr;
  auto it = portals_.find(std::string(name));
  return it == portals_.end() ? nullptr : &it->second;
}

void PgConn::put_portal(std::string_view name, const sql::StatementText& t) {
  if (name.empty()) {
    // The same statement bound again (the usual case): the text it holds is already this one.
    if (!have_unnamed_portal_ || unnamed_portal_.text.view().data() != t.text.view().data()) unnamed_portal_ = t;
    unnamed_portal_.fingerprint = t.fingerprint;
    have_unnamed_portal_ = true;
    return;
  }
  if (portals_.size() >= kMaxPortals && !portals_.count(std::string(name))) portals_.clear();
  portals_[std::string(name)] = t;
}

void PgConn::pop() {
  ops_.pop_front();
  ++head_seq_;
}

// --- statements --------------------------------------------------------------------------------------

void PgConn::put_statement(std::string_view name, sql::StatementText t, std::vector<uint32_t> oids, std::string_view raw) {
  std::string_view kept = raw.size() <= kMaxRaw ? raw : std::string_view();
  auto it = stmts_.find(std::string(name));
  if (it != stmts_.end()) {
    it->second.text = std::move(t);
    it->second.oids = std::move(oids);
    it->second.raw.assign(kept);
    return;
  }
  if (!name.empty()) {
    while (stmts_.size() - stmts_.count(std::string()) >= kMaxStatements && !order_.empty()) {
      auto old = stmts_.find(order_.front());
      order_.pop_front();
      if (old != stmts_.end() && !old->first.empty()) {
        if (hot_ == &old->second) hot_ = nullptr;
        stmts_.erase(old);
        ++evicted_;
      }
    }
    if (order_.size() > 2 * kMaxStatements) {  // names closed meanwhile: keep the ones still present
      std::deque<std::string> keep;
      for (auto& n : order_)
        if (stmts_.count(n)) keep.push_back(std::move(n));
      order_.swap(keep);
    }
    order_.emplace_back(name);
  }
  stmts_.emplace(std::string(name), Stmt{std::move(t), std::move(oids), std::string(kept)});
}

// The "params" attribute: format_pg_params' format (sql_binds.h), with binary values of known types
// decoded to their text in raw mode.
std::string_view PgConn::format_params(const BindMsg& b, const std::vector<uint32_t>* oids) {
  const sql::Settings& cfg = sql::settings();
  std::string& out = params_;
  if (cfg.mode == sql::TextMode::off || b.total <= 0) return {};
  bool raw = cfg.mode == sql::TextMode::raw;
  // Masked, a Bind's text is only its parameters' kinds: the same as the last Bind's most of the time
  // (the same statement executed again), kept with its signature (2 bits a parameter, up to 24 of them).
  uint64_t sig = 0;
  if (!raw && b.params.size() <= 24 && size_t(b.total) == b.params.size()) {
    sig = uint64_t(b.total) << 49 | 1;
    for (size_t i = 0; i < b.params.size(); ++i)
      sig |= uint64_t(b.params[i].null ? 1 : b.params[i].binary ? 2 : 3) << (2 * i + 1);
    if (sig == params_sig_) return out;
  }
  params_sig_ = sig;
  if (out.capacity() > 16384) std::string().swap(out);  // a raw mode with long values: not kept for good
  out.clear();
  std::string& t = value_scratch_;
  for (size_t i = 0; i < b.params.size() && i < size_t(sql::BindList::kMaxRecorded); ++i) {
    const BindParam& p = b.params[i];
    if (i) out += ", ";
    if (p.null) {
      out += raw ? "NULL" : "null";
    } else if (!raw) {
      out += p.binary ? "binary" : "text";
    } else if (!p.binary) {
      out += sql::quote_value(p.value, cfg.max_bind);
    } else {
      uint32_t oid = oids && i < oids->size() ? (*oids)[i] : 0;
      t.clear();
      if (!p.cut && oid && binary_to_text(oid, p.value, &t)) out += oid == 17 ? t : sql::quote_value(t, cfg.max_bind);
      else out += "binary(" + std::to_string(p.length) + ")";
    }
  }
  if (b.total > sql::BindList::kMaxRecorded || size_t(b.total) > b.params.size()) out += ", ...";
  return out;
}

// --- frontend ----------------------------------------------------------------------------------------

// The messages every statement writes first, in a function small enough to need few registers (the
// rest, and anything unexpected, in on_front_rest, which checks again).
bool PgConn::on_front(const Message& m) {
  if (__builtin_expect(!skipping_, 1)) {
    switch (m.type) {
      case 'B': return bind(m);
      case 'E': return execute(m);
      case 'S':
        finish_unit();
        return push(OpKind::sync);
      default: break;
    }
  }
  return on_front_rest(m);
}

bool PgConn::on_front_rest(const Message& m) {
  if (m.type == 0) return startup(m);
  if (skipping_ && m.type != 'S' && m.type != 'Q') {
    // The server ignores what follows an error until the Sync; a Parse or Close it ignores changes
    // nothing either.
    return true;
  }
  switch (m.type) {
    case 'Q': skipping_ = false; return query(m);
    case 'P': return parse(m);
    case 'B': return bind(m);
    case 'E': return execute(m);
    case 'D': {
      Reader r{m.body};
      uint8_t kind = r.u8();
      std::string_view name = r.cstr();
      if (!r.ok && !m.cut()) return stop();
      if (kind == 'S') {
        Op* op = push(OpKind::describe_stmt);
        if (op) op->name.assign(name);
        return op;
      }
      if (kind == 'P') return push(OpKind::describe_portal);
      return stop();
    }
    case 'C': {
      Reader r{m.body};
      uint8_t kind = r.u8();
      std::string name(r.cstr());
      if (!r.ok && !m.cut()) return stop();
      if (kind == 'S') {
        forget_stmt(name);
      } else if (kind == 'P') {
        if (name.empty()) have_unnamed_portal_ = false, unnamed_portal_ = {};
        else portals_.erase(name);
      } else {
        return stop();
      }
      return push(OpKind::close);
    }
    case 'S':
      finish_unit();
      skipping_ = false;
      return push(OpKind::sync);
    case 'F':
      return push(OpKind::fcall);
    default:  // Flush, Terminate, PasswordMessage/SASL, CopyData/CopyDone/CopyFail: nothing is owed
      return true;
  }
}

bool PgConn::startup(const Message& m) {
  if (m.body.size() < 4) return stop();
  uint32_t code = be32(m.body.data());
  if (code == kSslRequest || code == kGssEncRequest) {
    if (m.length != 4) return stop();
    back_.expect_answer_byte(true);
    awaiting_answer_ = true;
    return true;
  }
  if (code != kProtocol3 || m.cut()) return stop();
  Startup s = parse_startup(m.body);
  front_.expect_untyped(false);
  std::string_view peer = env_.peer;
  size_t colon = peer.rfind(':');
  std::string_view host = colon == std::string_view::npos ? peer : peer.substr(0, colon);
  std::string_view port = colon == std::string_view::npos ? std::string_view() : peer.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // An IPv6 socket connected to an IPv4 address (the JVM's sockets): the address the program named.
  if (host.substr(0, 7) == "::ffff:" && host.find('.') != std::string_view::npos) host.remove_prefix(7);
  bool v6 = host.find(':') != std::string_view::npos;
  db_label_ = "postgresql://" + s.user + "@" + (v6 ? "[" : "") + std::string(host) + (v6 ? "]" : "") +
              (port.empty() ? "" : ":") + std::string(port) + "/" + s.database;
  Transaction* tx = next_tx();
  if (!tx) return true;
  connect_ = rec::open(tx, StepKind::DB_CONNECT);
  if (!connect_) return true;
  connecting_ = true;
  rec::set_text(connect_, db_label_);
  rec::add_attr(connect_, "database", s.database);
  rec::add_attr(connect_, "host", host);
  rec::add_attr(connect_, "port", port);
  rec::add_attr(connect_, "user", s.user);
  return true;
}

bool PgConn::parse(const Message& m) {
  ParseMsg& pm = parse_scratch_;
  if (!parse_parse(m.body, &pm) && !m.cut()) return stop();
  finish_unit();
  Op* op = push(OpKind::parse);
  if (!op) return false;
  uint64_t seq = head_seq_ + ops_.size() - 1;
  // The same text parsed again into the same name: its normalized text is the one made last time.
  const Stmt* same = find_stmt(pm.name);
  bool again = same && !m.cut() && !same->raw.empty() && same->raw == pm.query;
  sql::StatementText t = again ? same->text : sql::statement_text(pm.query);
  int row = open(next_tx(), t, {});
  put_statement(pm.name, std::move(t), std::move(pm.oids), m.cut() ? std::string_view() : pm.query);
  pm.oids = {};
  if (row >= 0) {
    start_unit(row, rows_[size_t(row)].gen, pm.name);
    op->row = row;
    op->gen = unit_.gen;
    unit_.last_seq = seq;
  }
  return true;
}

bool PgConn::bind(const Message& m) {
  BindMsg& b = bind_scratch_;
  if (!parse_bind(m.body, &b) && !m.cut()) return stop();
  Op* op = push(OpKind::bind);
  if (!op) return false;
  uint64_t seq = head_seq_ + ops_.size() - 1;
  const Stmt* st = find_stmt(b.statement);
  if (!st) {
    // Prepared before the agent followed the connection (or in a message it could not read whole):
    // named once by what is known, and kept, so that its executions are not normalized again.
    put_statement(b.statement,
                  sql::statement_text("EXECUTE " + (b.statement.empty() ? std::string("\"\"") : std::string(b.statement))),
                  {}, {});
    st = find_stmt(b.statement);
    if (!st) return stop();
  }
  std::string_view params = format_params(b, &st->oids);
  Row* r = row_of(unit_.row, unit_.gen);
  if (r && !unit_.bound && unit_.stmt == b.statement) {
    if (!params.empty() && rec::usable(r->w.step)) rec::add_attr(r->w.step, "params", params);
  } else {
    finish_unit();
    int row = open(next_tx(), st->text, params);
    if (row >= 0) start_unit(row, rows_[size_t(row)].gen, b.statement);
  }
  if (unit_.row >= 0) {
    unit_.bound = true;
    if (unit_.portal != b.portal) unit_.portal.assign(b.portal);
    unit_.last_seq = seq;
    op->row = unit_.row;
    op->gen = unit_.gen;
  }
  put_portal(b.portal, st->text);
  return true;
}

bool PgConn::execute(const Message& m) {
  Reader rd{m.body};
  std::string_view portal = rd.cstr();
  if (!rd.ok) return stop();
  Op* op = push(OpKind::execute, true);
  if (!op) return false;
  if (unit_.row >= 0 && unit_.bound && unit_.portal == portal) {
    op->row = unit_.row;
    op->gen = unit_.gen;
    clear_unit();
  } else {
    finish_unit();
    const sql::StatementText* p = find_portal(portal);
    op->row = open(next_tx(), p ? *p : unknown_portal(), {});
    if (op->row >= 0) op->gen = rows_[size_t(op->row)].gen;
  }
  return true;
}

bool PgConn::query(const Message& m) {
  finish_unit();
  Op* op = push(OpKind::query, true);
  if (!op) return false;
  std::string_view q = m.body.substr(0, m.body.find('\0'));
  std::vector<std::string_view> pieces = split_statements(q);
  sql::StatementText first = sql::statement_text(pieces.empty() ? q : pieces[0]);
  for (size_t i = 1; i < pieces.size(); ++i) op->more.push_back(sql::statement_text(pieces[i]));
  op->row = open(next_tx(), first, {});
  if (op->row >= 0) op->gen = rows_[size_t(op->row)].gen;
  return true;
}

// --- backend -----------------------------------------------------------------------------------------

// A statement's replies, as on_front: the rest in on_back_rest.
bool PgConn::on_back(const Message& m) {
  if (__builtin_expect(!awaiting_answer_, 1)) {
    Op* f = front();
    switch (m.type) {
      case 'D':
        if (!f || (f->kind != OpKind::execute && f->kind != OpKind::query)) break;
        if (Row* r = row_of(f->row, f->gen)) ++r->data_rows;
        return true;
      case 'C':
        return complete(m, false);
      case 'Z':
        return ready();
      case '2':
        if (!f || f->kind != OpKind::bind) break;
        if (f->closes) close_row(f->row, f->gen);
        pop();
        return true;
      case 'T':
        if (!f || (f->kind != OpKind::describe_stmt && f->kind != OpKind::describe_portal)) break;
        pop();
        return true;
      default: break;
    }
  }
  return on_back_rest(m);
}

bool PgConn::on_back_rest(const Message& m) {
  if (awaiting_answer_) {
    awaiting_answer_ = false;
    // The one byte that answers SSLRequest / GSSENCRequest (the framer hands it over as a message of no
    // length): 'S'/'G' the socket carries TLS / GSS records from now, 'N' the StartupMessage follows in
    // the clear. A server too old for the request answers with an ErrorResponse (a real message).
    if (m.type == 'S' || m.type == 'G') return tls_ = true;
    if (m.type == 'N') return true;
    if (m.type != 'E') return stop();
  }
  Op* f = front();
  switch (m.type) {
    case 'S': case 'R': case 'K': case 'v': case 'd': case 'c':  // ParameterStatus, Authentication…
      return true;
    case 'N':
      ++notices_;
      if (f)
        if (Row* r = row_of(f->row, f->gen)) ++r->notices;
      return true;
    case 'G': case 'H': case 'W':  // CopyIn/CopyOut/CopyBoth: the COPY's row lasts until its CommandComplete
      if (!f || (f->kind != OpKind::execute && f->kind != OpKind::query)) return stop();
      return true;
    case 'A':
      ++notifications_;
      ++notifications_unreported_;
      return true;
    case 'E':
      return error(m);
    case 'Z':
      return ready();
    case '1':
      if (!f || f->kind != OpKind::parse) return stop();
      if (f->closes) close_row(f->row, f->gen);
      pop();
      return true;
    case '2':
      if (!f || f->kind != OpKind::bind) return stop();
      if (f->closes) close_row(f->row, f->gen);
      pop();
      return true;
    case '3':
      if (!f || f->kind != OpKind::close) return stop();
      pop();
      return true;
    case 't': {
      if (!f || f->kind != OpKind::describe_stmt) return stop();
      auto it = stmts_.find(f->name);
      if (it != stmts_.end() && !m.cut()) {
        Reader r{m.body};
        int n = r.i16();
        std::vector<uint32_t> oids;
        for (int i = 0; i < n && r.ok; ++i) oids.push_back(uint32_t(r.i32()));
        if (r.ok) it->second.oids = std::move(oids);
      }
      return true;
    }
    case 'T': case 'n':
      if (f && (f->kind == OpKind::describe_stmt || f->kind == OpKind::describe_portal)) {
        pop();
        return true;
      }
      if (m.type == 'T' && f && (f->kind == OpKind::execute || f->kind == OpKind::query)) return true;
      return stop();
    case 'D':
      if (!f || (f->kind != OpKind::execute && f->kind != OpKind::query)) return stop();
      if (Row* r = row_of(f->row, f->gen)) ++r->data_rows;
      return true;
    case 'C': case 'I':
      return complete(m, false);
    case 's':
      return complete(m, true);
    case 'V':
      if (!f || f->kind != OpKind::fcall) return stop();
      pop();
      return true;
    default:
      return stop();
  }
}

bool PgConn::complete(const Message& m, bool suspended) {
  Op* f = front();
  if (!f || (f->kind != OpKind::execute && f->kind != OpKind::query)) return stop();
  if (suspended && f->kind != OpKind::execute) return stop();
  if (Row* r = row_of(f->row, f->gen)) {
    sql::add_rows(r->w, r->data_rows);
    r->data_rows = 0;
    // Only a tag that can change rows is read (most are SELECT's: its rows are the DataRows counted).
    char c0 = m.body.empty() ? 0 : m.body[0];
    if (m.type == 'C' && (c0 == 'I' || c0 == 'U' || c0 == 'D' || c0 == 'M' || c0 == 'C')) {
      Tag t = parse_tag(m.body);
      if (t.write && t.count >= 0) sql::add_changes(r->w, t.count);
    }
  }
  if (f->kind == OpKind::execute) {
    close_row(f->row, f->gen);
    pop();
    return true;
  }
  // A simple Query: its next statement starts now, in the transaction of the one before.
  if (f->next >= f->more.size()) return true;  // more results than statements: they add to the last row
  Row* r = row_of(f->row, f->gen);
  Transaction* tx = r && rec::usable(r->w.step) ? r->w.step.tx : nullptr;
  close_row(f->row, f->gen);
  sql::StatementText t = std::move(f->more[f->next++]);
  f->row = open(tx, t, {});
  f->gen = f->row >= 0 ? rows_[size_t(f->row)].gen : 0;
  return true;
}

bool PgConn::error(const Message& m) {
  ServerError e = parse_error(m.body);
  if (connecting_) {
    connecting_ = false;
    if (rec::usable(connect_)) {
      std::string text = std::string(e.severity.empty() ? "FATAL" : e.severity) + " " +
                         std::string(e.sqlstate.empty() ? "?????" : e.sqlstate) + ": " + std::string(e.message);
      rec::set_error(connect_, text);
      rec::add_attr(connect_, "sqlstate", e.sqlstate.empty() ? std::string_view("?????") : e.sqlstate);
      rec::mark_failed(connect_.tx, text);
      rec::close(connect_);
    }
    connect_ = StepRef{};
    return true;
  }
  Op* f = front();
  if (!f || f->kind == OpKind::sync) return true;  // a FATAL at shutdown, or a failed implicit COMMIT
  if (Row* r = row_of(f->row, f->gen)) sql::fail_row(r->w, e.severity, e.sqlstate, e.message);
  close_row(f->row, f->gen);
  f->row = -1;
  if (f->kind == OpKind::query) {  // the rest of the Query string is not run; ReadyForQuery follows
    f->more.clear();
    return true;
  }
  // Extended protocol: the server skips to the Sync.
  pop();
  while (!ops_.empty() && ops_.front().kind != OpKind::sync) {
    Op& o = ops_.front();
    close_row(o.row, o.gen, kSkipped);
    pop();
  }
  if (ops_.empty()) {
    skipping_ = true;
    if (unit_.row >= 0) close_row(unit_.row, unit_.gen, kSkipped);
  }
  return true;
}

bool PgConn::ready() {
  if (connecting_) {
    connecting_ = false;
    if (rec::usable(connect_)) rec::close(connect_);
    connect_ = StepRef{};
  }
  // What the server owed up to this Sync or Query and did not answer ends here.
  while (!ops_.empty()) {
    Op& o = ops_.front();
    bool last = o.kind == OpKind::sync || o.kind == OpKind::query;
    if (o.closes || last) close_row(o.row, o.gen);
    pop();
    if (last) break;
  }
  return true;
}

}  // namespace txray::pg
