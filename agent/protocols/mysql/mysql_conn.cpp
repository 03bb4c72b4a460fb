#include "protocols/mysql/mysql_conn.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <utility>

#include "core/counters.h"
#include "protocols/sql/sql_config.h"
#include "protocols/sql/sql_normalizer.h"

namespace txray::mysql {

namespace {

constexpr std::string_view kNotFollowed = "wire protocol not followed";
constexpr size_t kErrCap = 1024;  // an ERR's message is short; a longer one is cut here
constexpr size_t kRowCap = 32;    // a row's head: enough to tell an EOF / OK terminator and read its status

// MYSQL_TIME's layout, which mysql_param_raw reads a date or time parameter as (the hooks hand it the
// program's MYSQL_TIME; the wire has the same fields packed).
struct MysqlTime {
  unsigned int year, month, day, hour, minute, second;
  unsigned long second_part;
  bool neg;
  int time_type;
};

uint32_t u32(std::string_view s, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4 && at + i < s.size(); ++i) v |= uint32_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
uint16_t u16(std::string_view s, size_t at) {
  uint16_t v = 0;
  for (size_t i = 0; i < 2 && at + i < s.size(); ++i) v |= uint16_t(static_cast<unsigned char>(s[at + i]) << (8 * i));
  return v;
}

// A binary date/time value (length 0, 4, 7 or 11; TIME: 0, 8 or 12) as MYSQL_TIME.
MysqlTime wire_time(uint8_t type, std::string_view v) {
  MysqlTime t{};
  auto b = [&](size_t i) { return i < v.size() ? static_cast<unsigned char>(v[i]) : 0u; };
  if (type == 11) {  // TIME: sign, days, hours, minutes, seconds, microseconds
    t.neg = b(0) != 0;
    t.hour = u32(v, 1) * 24 + b(5);
    t.minute = b(6);
    t.second = b(7);
    t.second_part = v.size() >= 12 ? u32(v, 8) : 0;
    return t;
  }
  t.year = u16(v, 0);
  t.month = b(2);
  t.day = b(3);
  t.hour = b(4);
  t.minute = b(5);
  t.second = b(6);
  t.second_part = v.size() >= 11 ? u32(v, 7) : 0;
  return t;
}

// A parameter's value as raw mode shows it (the hooks' format: sql::mysql_param_raw).
std::string raw_value(const WireParam& w, sql::MysqlParam& mp, size_t max_bind) {
  if (w.is_null) return "NULL";
  if (w.long_data) return "long data";
  if (!w.have_value) return "...";
  int width = binary_width(w.type);
  if (width > 0) {
    if constexpr (std::endian::native != std::endian::little) return "?";
    alignas(8) unsigned char buf[8] = {};
    std::memcpy(buf, w.value.data(), std::min<size_t>(w.value.size(), sizeof buf));
    mp.buffer = buf;
    return sql::mysql_param_raw(mp, max_bind);
  }
  if (width == -2) {
    MysqlTime t = wire_time(w.type, w.value);
    mp.buffer = &t;
    return sql::mysql_param_raw(mp, max_bind);
  }
  mp.buffer = w.value.data();
  mp.length = static_cast<unsigned long>(w.value.size());
  return sql::mysql_param_raw(mp, max_bind);
}

sql::Normalized normalized(std::string_view text, sql::Dialect d) {
  const sql::Settings& cfg = sql::settings();
  return sql::normalize(text, cfg.mode, cfg.max_text, d);
}

}  // namespace

Conn::Conn(const WireEnv& env, TxOf tx_of)
    : slot_(env.slot), peer_(env.peer ? env.peer : ""), owner_(env.owner), tx_of_(tx_of) {
  client_side_.c = server_side_.c = this;
  client_side_.client = true;
}

Conn::~Conn() { end_all({}); }

size_t Conn::Side::begin(uint8_t seq, uint32_t len, int first) {
  return client ? c->client_begin(seq, len, first) : c->server_begin(seq, len, first);
}
bool Conn::Side::packet(const Packet& p) { return client ? c->client_packet(p) : c->server_packet(p); }

void Conn::on_sent(const char* p, size_t n) {
  if (stopped_ || !p || n == 0) return;
  if (!from_client_.feed(p, n, client_side_)) stop();
}

void Conn::on_received(const char* p, size_t n) {
  if (stopped_ || !p || n == 0) return;
  if (!from_server_.feed(p, n, server_side_)) stop();
}

void Conn::on_end(std::string_view why) {
  end_all(why);
  // Ready for the slot's next connection, which begins with its own greeting.
  from_client_.reset();
  from_server_.reset();
  stmts_.clear();
  phase_ = Phase::greeting;
  stopped_ = tls_ = no_backslash_ = false;
  seq_ = 0;
  server_caps_ = caps_ = 0;
  server_version_.clear();
  last_prepared_ = 0;
}

// --- rows ---

void Conn::open_row(Row& r, bool nested_ok) {
  r = Row{};
  ReqRef& owner = owner_ ? *owner_ : no_owner_;
  Transaction* tx = tx_of_ ? tx_of_(owner) : nullptr;
  if (!tx) return;
  // Commands a client pipelines run side by side: none is the parent of the next.
  r.step = nested_ok ? rec::open(tx, StepKind::SQL) : rec::open_unnested(tx, StepKind::SQL);
  if (!r.step) return;
  // The row opens at its command's first byte, which the written counter already holds.
  uint64_t ahead = from_client_.since_packet_start();
  r.read0 = slot_ ? slot_->bytes_read.load(std::memory_order_relaxed) : 0;
  r.written0 = slot_ ? slot_->bytes_written.load(std::memory_order_relaxed) : 0;
  r.written0 = r.written0 >= ahead ? r.written0 - ahead : 0;
}

void Conn::close_row(Row& r, std::string_view error) {
  if (!r.step) return;
  if (!error.empty() && !r.failed && rec::usable(r.step)) {
    rec::set_error(r.step, error);
    rec::mark_failed(r.step.tx, error);
  }
  // The counters hold the whole of the current read or write; the bytes after the packet that closes
  // the row are the next statement's.
  uint64_t rd = slot_ ? slot_->bytes_read.load(std::memory_order_relaxed) : 0;
  uint64_t wr = slot_ ? slot_->bytes_written.load(std::memory_order_relaxed) : 0;
  rd = rd >= from_server_.ahead() ? rd - from_server_.ahead() : 0;
  wr = wr >= from_client_.ahead() ? wr - from_client_.ahead() : 0;
  bool counted = rd >= r.read0 && wr >= r.written0;
  // The bytes go in with the rest, in the one recorder entry that closes the row (a stale ref: none).
  rec::SqlRow row{.text = &r.text,
                  .fingerprint = r.fingerprint,
                  .binds = r.binds.empty() ? nullptr : &r.binds,
                  .rows = r.rows,
                  .changes = r.changes,
                  .bytes_read = counted ? rd - r.read0 : 0,
                  .bytes_written = counted ? wr - r.written0 : 0};
  rec::close_sql(r.step, row);
  r = Row{};
}

// "ERROR 1146 (42S02): Table ? doesn't exist", status 1146, attribute sqlstate: as mysql_hooks.cpp.
void Conn::fail_row(Row& r, const Err& e) {
  if (!r.step || r.failed || !rec::usable(r.step)) return;
  r.failed = true;
  std::string_view state = e.sqlstate.empty() ? std::string_view("HY000") : e.sqlstate;
  char head[48];
  std::snprintf(head, sizeof head, "ERROR %u (%.*s): ", unsigned(e.code), int(state.size()), state.data());
  std::string text = std::string(head) + sql::mask_error_message(e.message.empty() ? "unknown error" : e.message,
                                                                  sql::settings().mode);
  rec::set_error(r.step, text);
  rec::set_status(r.step, int32_t(e.code));
  rec::add_attr(r.step, "sqlstate", state);
  rec::mark_failed(r.step.tx, text);
}

void Conn::close_connect(std::string_view error) {
  if (!connect_.step) return;
  if (rec::usable(connect_.step)) {
    if (!error.empty() && !connect_.failed) {
      rec::set_error(connect_.step, error);
      rec::mark_failed(connect_.step.tx, error);
    }
    rec::close(connect_.step);
  }
  connect_ = Row{};
}

void Conn::end_cursor(Stmt& s) {
  if (!s.cursor_open) return;
  s.cursor_open = false;
  rec::end_fetch(s.cursor_step, s.fingerprint, s.cursor_rows, s.cursor_fetch_ns);
  s.cursor_step = StepRef{};
  s.cursor_rows = 0;
  s.cursor_fetch_ns = 0;
}

void Conn::remember(uint32_t id, Stmt s) {
  auto it = stmts_.find(id);
  if (it != stmts_.end()) {
    end_cursor(it->second);
    it->second = std::move(s);
    return;
  }
  if (stmts_.size() >= kMaxStatements) {
    // A program that prepares without ever closing: the oldest bucket's statement goes (its executions
    // are rows without text from then on).
    auto victim = stmts_.begin();
    end_cursor(victim->second);
    stmts_.erase(victim);
    ++evicted_;
  }
  stmts_.emplace(id, std::move(s));
}

Conn::Stmt* Conn::stmt(uint32_t id) {
  auto it = stmts_.find(id);
  return it == stmts_.end() ? nullptr : &it->second;
}

bool Conn::stop() {
  if (!stopped_) {
    stopped_ = true;
    counters().streams_unparsed.fetch_add(1, std::memory_order_relaxed);
    end_all(kNotFollowed);
  }
  return false;
}

void Conn::end_all(std::string_view why) {
  if (cur_active_) close_row(cur_.row, why);
  cur_active_ = false;
  for (Command& c : queue_) close_row(c.row, why);
  queue_.clear();
  close_connect(why);
  for (auto& [id, s] : stmts_) end_cursor(s);
}

// --- what the program writes ---

size_t Conn::client_begin(uint8_t seq, uint32_t len, int first) {
  switch (phase_) {
    case Phase::response:
      // 32 bytes is the SSL request; the HandshakeResponse itself is longer (it names a user). The
      // connection's row starts with the response that carries the user.
      if (len > 32 && !connect_.step) {
        ReqRef& owner = owner_ ? *owner_ : no_owner_;
        Transaction* tx = tx_of_ ? tx_of_(owner) : nullptr;
        connect_ = Row{};
        if (tx) connect_.step = rec::open(tx, StepKind::DB_CONNECT);
      }
      return 4096;
    case Phase::command: {
      if (!queue_.empty() && queue_.front().reply == Reply::infile) return 0;
      if (seq != 0 || cur_active_) return 0;  // not a command: client_packet stops
      cur_ = Command{};
      cur_active_ = true;
      cur_.code = first < 0 ? 0 : uint8_t(first);
      switch (cur_.code) {
        case cmd::kQuery: case cmd::kStmtPrepare: case cmd::kInitDb:
          open_row(cur_.row, queue_.empty());
          return sql::settings().max_text + 64;
        case cmd::kStmtExecute:
          open_row(cur_.row, queue_.empty());
          return kExecuteCap;
        case cmd::kChangeUser: return 1024;
        default: return 16;
      }
    }
    default: return 0;
  }
}

bool Conn::client_packet(const Packet& p) {
  switch (phase_) {
    case Phase::greeting: return stop();  // the client spoke first: not this protocol
    case Phase::ended: return true;
    case Phase::auth:
      if (p.seq != uint8_t(seq_ + 1)) return stop();
      seq_ = p.last_seq;
      return true;
    case Phase::response: {
      if (p.seq != uint8_t(seq_ + 1)) return stop();
      seq_ = p.last_seq;
      HandshakeResponse r;
      if (!parse_response(p.head, &r)) return stop();
      if (r.ssl_request) {
        if (!(server_caps_ & cap::kSsl)) return stop();
        // TLS from the next byte: the dispatch feeds what the OpenSSL hooks see, the full response next.
        tls_ = true;
        return true;
      }
      caps_ = r.caps & server_caps_;
      if (!(caps_ & cap::kProtocol41)) return stop();
      phase_ = Phase::auth;
      if (connect_.step) {
        std::string host, port;
        bool tcp = false;
        size_t colon = peer_.rfind(':');
        if (colon != std::string::npos && colon + 1 < peer_.size()) {
          tcp = true;
          host = peer_.substr(0, colon);
          if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
          port = peer_.substr(colon + 1);
        } else {
          host = "localhost";
          port = peer_.empty() ? "(unix socket)" : peer_;
        }
        std::string_view user = r.user.substr(0, 256), db = r.database.substr(0, 256);
        std::string label = "mysql://";
        label.append(user).append("@").append(host).append(":").append(port).append("/").append(db);
        rec::set_text(connect_.step, label);
        rec::add_attr(connect_.step, "database", db);
        rec::add_attr(connect_.step, "host", host);
        rec::add_attr(connect_.step, tcp ? "port" : "socket", port);
        rec::add_attr(connect_.step, "user", user);
        rec::add_attr(connect_.step, "db.system",
                      server_version_.find("MariaDB") != std::string::npos ? "mariadb" : "mysql");
        if (!server_version_.empty()) rec::add_attr(connect_.step, "server_version", server_version_);
      }
      return true;
    }
    case Phase::command:
      if (!queue_.empty() && queue_.front().reply == Reply::infile) {
        Command& c = queue_.front();
        if (p.seq != c.expect_seq) return stop();
        c.expect_seq = uint8_t(p.last_seq + 1);
        if (p.len == 0) c.reply = Reply::first;  // the file's end: the server's OK or ERR follows
        return true;
      }
      return command_packet(p);
  }
  return stop();
}

bool Conn::command_packet(const Packet& p) {
  if (p.seq != 0 || !cur_active_ || p.head.empty()) return stop();
  cur_active_ = false;
  // Filled in place and moved into the queue once (client_begin makes cur_ new for the next command).
  Command& c = cur_;
  std::string_view body = p.head.substr(1);
  const sql::TextMode mode = sql::settings().mode;
  switch (c.code) {
    case cmd::kQuery: {
      if (caps_ & cap::kQueryAttributes) {  // MySQL 8: parameter count, parameter set count first
        uint64_t count = 0, sets = 0;
        if (!take_lenenc(body, &count) || !take_lenenc(body, &sets) || count != 0) {
          close_row(c.row, kNotFollowed);
          return stop();
        }
      }
      sql::Normalized n = normalized(body, dialect());
      c.row.text = SharedText(n.text);
      c.row.fingerprint = n.fingerprint;
      break;
    }
    case cmd::kStmtPrepare: {
      sql::Normalized n = normalized(body, dialect());
      c.prepared = SharedText(n.text);
      c.prepared_fp = n.fingerprint;
      c.row.text = SharedText(mode == sql::TextMode::off ? std::string() : "PREPARE " + n.text);
      c.row.fingerprint = sql::fnv1a("PREPARE", n.fingerprint);
      break;
    }
    case cmd::kStmtExecute:
      if (!execute_packet(c, p)) {
        close_row(c.row, kNotFollowed);
        return stop();
      }
      break;
    case cmd::kStmtFetch:
      if (p.head.size() < 9) return stop();
      c.stmt = u32(p.head, 1);
      c.reply = Reply::rows;
      c.t0 = rec::now_ns();
      break;
    case cmd::kInitDb: {
      c.name.assign(body.substr(0, 256));
      sql::Normalized n = normalized("USE " + c.name, dialect());
      c.row.text = SharedText(n.text);
      c.row.fingerprint = n.fingerprint;
      c.reply = Reply::simple;
      break;
    }
    case cmd::kStmtReset:
      if (p.head.size() < 5) return stop();
      c.stmt = u32(p.head, 1);
      if (Stmt* s = stmt(c.stmt)) {
        end_cursor(*s);
        s->long_data.clear();
      }
      c.reply = Reply::simple;
      break;
    case cmd::kPing: case cmd::kResetConnection: case cmd::kSetOption: case cmd::kProcessKill:
    case cmd::kDebug: case cmd::kRefresh:
      c.reply = Reply::simple;
      break;
    case cmd::kStatistics:
      c.reply = Reply::any;
      break;
    case cmd::kStmtClose:  // no reply
      if (p.head.size() < 5) return stop();
      if (Stmt* s = stmt(u32(p.head, 1))) {
        end_cursor(*s);
        stmts_.erase(u32(p.head, 1));
      }
      return true;
    case cmd::kStmtSendLongData: {  // no reply; the parameter has no value in the next execute
      if (p.head.size() < 7) return stop();
      if (Stmt* s = stmt(u32(p.head, 1))) {
        uint16_t param = u16(p.head, 5);
        if (param < s->params) {
          s->long_data.resize((size_t(s->params) + 7) / 8, '\0');
          s->long_data[param / 8] = char(static_cast<unsigned char>(s->long_data[param / 8]) | (1u << (param % 8)));
        }
      }
      return true;
    }
    case cmd::kQuit:  // no reply: the server closes the connection
      return true;
    case cmd::kChangeUser: {
      // Authentication again, then a fresh session: no prepared statements survive it.
      std::string_view user, db;
      if (!queue_.empty() || !parse_change_user(p.head, caps_, &user, &db)) return stop();
      for (auto& [id, s] : stmts_) end_cursor(s);
      stmts_.clear();
      phase_ = Phase::auth;
      seq_ = p.last_seq;
      return true;
    }
    default:  // COM_FIELD_LIST, the replication commands, MariaDB's bulk execute…: not followed
      close_row(c.row, kNotFollowed);
      return stop();
  }
  if (queue_.size() >= kMaxPipelined) {
    close_row(c.row, kNotFollowed);
    return stop();
  }
  queue_.push_back(std::move(c));
  return true;
}

bool Conn::execute_packet(Command& c, const Packet& p) {
  if (p.head.size() < 10) return false;
  uint32_t id = u32(p.head, 1);
  uint8_t flags = static_cast<uint8_t>(p.head[5]);
  if (id == 0xffffffffu) id = last_prepared_;  // MariaDB: the statement prepared last on the connection
  c.stmt = id;
  c.cursor = (flags & 0x07) != 0;
  Stmt* s = stmt(id);
  if (!s) {
    // Prepared before it could be followed, or evicted: the row has no text.
    c.row.text = SharedText(std::string_view("EXECUTE (statement not seen)"));
    c.row.fingerprint = sql::fnv1a("EXECUTE (statement not seen)");
    return true;
  }
  end_cursor(*s);  // a new execution ends the statement's open cursor
  c.row.text = s->text;
  c.row.fingerprint = s->fingerprint;
  const sql::Settings& cfg = sql::settings();
  bool ok = true;
  if (cfg.mode == sql::TextMode::off) {
    ok = decode_execute(p.head, s->params, s->types, s->long_data, caps_ & cap::kQueryAttributes,
                        [](uint16_t, const WireParam&) {});
  } else {
    ok = decode_execute(p.head, s->params, s->types, s->long_data, caps_ & cap::kQueryAttributes,
                        [&](uint16_t i, const WireParam& w) {
                          sql::MysqlParam mp{.type = w.type, .is_null = w.is_null, .is_unsigned = w.is_unsigned};
                          std::string raw;
                          if (cfg.mode == sql::TextMode::raw) raw = raw_value(w, mp, cfg.max_bind);
                          s->binds.set(int(i) + 1, sql::mysql_bind_type(mp), raw, cfg.mode);
                        });
    if (ok && !s->binds.empty()) c.row.binds = s->binds.shared();
  }
  s->long_data.clear();
  // A packet cut at the kept head still gives the types; only a packet that contradicts the statement
  // (too short for its own null bitmap and types) is not followed.
  return ok || !p.whole();
}

// --- what the server sends ---

size_t Conn::server_begin(uint8_t, uint32_t, int first) {
  if (first == 0xff) return kErrCap;
  switch (phase_) {
    case Phase::greeting: return 1024;
    case Phase::auth: return first == 0 ? 64 : 0;
    case Phase::command: {
      if (queue_.empty()) return 0;
      switch (queue_.front().reply) {
        case Reply::first: case Reply::simple: return 64;
        case Reply::rows: case Reply::columns_eof: case Reply::prepare_params_eof: case Reply::prepare_columns_eof:
          return kRowCap;
        default: return 0;
      }
    }
    default: return 0;
  }
}

bool Conn::server_packet(const Packet& p) {
  switch (phase_) {
    case Phase::greeting: {
      Greeting g;
      if (p.seq != 0 || !parse_greeting(p.head, &g)) return stop();
      server_version_.assign(g.version.substr(0, 64));
      server_caps_ = g.caps;
      seq_ = p.last_seq;
      phase_ = Phase::response;
      return true;
    }
    case Phase::response: return stop();  // the server spoke before the client answered its greeting
    case Phase::ended: return true;
    case Phase::auth: {
      if (p.seq != uint8_t(seq_ + 1)) return stop();
      seq_ = p.last_seq;
      switch (p.first()) {
        case 0x00: {
          Ok ok;
          if (parse_ok(p.head, &ok)) no_backslash_ = (ok.status & status::kNoBackslashEscapes) != 0;
          close_connect({});
          phase_ = Phase::command;
          // Compression starts with the next packet: not followed (the connection stays a socket).
          if (caps_ & (cap::kCompress | cap::kZstdCompress)) return stop();
          return true;
        }
        case 0xff: {
          Err e;
          if (parse_err(p.head, &e)) fail_row(connect_, e);
          close_connect({});
          phase_ = Phase::ended;
          return true;
        }
        case 0xfe: case 0x01: return true;  // AuthSwitchRequest, AuthMoreData: the exchange goes on
        default: return stop();
      }
    }
    case Phase::command: {
      if (queue_.empty()) {
        // A server says why it drops a connection (idle timeout, shutdown) in an ERR nobody asked for.
        return p.first() == 0xff ? true : stop();
      }
      Command& c = queue_.front();
      if (p.seq != c.expect_seq) return stop();
      c.expect_seq = uint8_t(p.last_seq + 1);
      return reply_packet(c, p);
    }
  }
  return stop();
}

bool Conn::end_of_results(Command& c, uint16_t st) {
  no_backslash_ = (st & status::kNoBackslashEscapes) != 0;
  if (c.code == cmd::kStmtFetch) {
    if (Stmt* s = stmt(c.stmt); s && s->cursor_open) {
      s->cursor_rows += int64_t(c.left);
      s->cursor_fetch_ns += rec::now_ns() - c.t0;
      if (st & 0x0080) end_cursor(*s);  // SERVER_STATUS_LAST_ROW_SENT
    }
    return true;
  }
  if (c.code == cmd::kStmtExecute && c.cursor && (st & status::kCursorExists)) {
    if (Stmt* s = stmt(c.stmt)) {
      s->cursor_open = true;
      s->cursor_step = c.row.step;
      s->cursor_rows = 0;
      s->cursor_fetch_ns = 0;
    }
    return true;
  }
  if (st & status::kMoreResults) {
    c.reply = Reply::first;
    return false;
  }
  return true;
}

void Conn::done(Command& c) {
  close_row(c.row, {});
  queue_.pop_front();
}

bool Conn::reply_packet(Command& c, const Packet& p) {
  const int f = p.first();
  const bool deprecate_eof = (caps_ & cap::kDeprecateEof) != 0;
  if (f == 0xff && c.reply != Reply::any && c.reply != Reply::infile) {
    Err e;
    if (!parse_err(p.head, &e)) return stop();
    if (e.code == 0xffff) return true;  // MariaDB's progress report: the statement goes on
    fail_row(c.row, e);
    done(c);
    return true;
  }
  switch (c.reply) {
    case Reply::first: {
      if (c.code == cmd::kStmtPrepare) {
        PrepareOk ok;
        if (f != 0 || !parse_prepare_ok(p.head, &ok)) return stop();
        Stmt s;
        s.text = c.prepared;
        s.fingerprint = c.prepared_fp;
        s.params = ok.params;
        remember(ok.id, std::move(s));
        last_prepared_ = ok.id;
        c.stmt = ok.id;
        c.columns = ok.columns;
        c.left = ok.params;
        c.reply = ok.params ? Reply::prepare_params : ok.columns ? Reply::prepare_columns : Reply::simple;
        if (c.reply == Reply::prepare_columns) c.left = ok.columns;
        if (c.reply == Reply::simple) done(c);
        return true;
      }
      if (f == 0x00) {
        Ok ok;
        if (!parse_ok(p.head, &ok)) return stop();
        if (c.code == cmd::kQuery || c.code == cmd::kStmtExecute)
          c.row.changes = (c.row.changes < 0 ? 0 : c.row.changes) + int64_t(ok.affected);
        if (!end_of_results(c, ok.status)) return true;
        done(c);
        return true;
      }
      if (f == 0xfb) {  // LOAD DATA LOCAL INFILE: the client sends the file, then the server answers
        if (c.code != cmd::kQuery || queue_.size() != 1) return stop();
        c.reply = Reply::infile;
        return true;
      }
      std::string_view s = p.head;
      uint64_t columns = 0;
      if (f < 0 || !take_lenenc(s, &columns) || columns == 0) return stop();
      if (c.row.rows < 0) c.row.rows = 0;
      c.left = columns;
      c.skip_metadata = false;
      if ((caps_ & cap::kMariaCacheMetadata) && c.code == cmd::kStmtExecute) {
        if (s.empty()) return stop();
        c.skip_metadata = s[0] == 0;  // the client has the columns from an earlier execution
      }
      c.reply = c.skip_metadata ? (deprecate_eof ? Reply::rows : Reply::columns_eof) : Reply::columns;
      return true;
    }
    case Reply::columns:
      if (--c.left == 0) c.reply = deprecate_eof ? Reply::rows : Reply::columns_eof;
      return true;
    case Reply::columns_eof: {
      uint16_t st = 0;
      if (!is_terminator(p, false) || !parse_eof(p.head, &st)) return stop();
      if (c.cursor && (st & status::kCursorExists)) {
        end_of_results(c, st);
        done(c);
        return true;
      }
      c.reply = Reply::rows;
      c.left = 0;
      return true;
    }
    case Reply::rows: {
      if (is_terminator(p, deprecate_eof)) {
        uint16_t st = 0;
        Ok ok;
        if (deprecate_eof ? !parse_ok(p.head, &ok) : !parse_eof(p.head, &st)) return stop();
        if (deprecate_eof) st = ok.status;
        if (end_of_results(c, st)) done(c);
        return true;
      }
      if (c.code == cmd::kStmtFetch) {
        ++c.left;
      } else {
        c.row.rows = (c.row.rows < 0 ? 0 : c.row.rows) + 1;
      }
      return true;
    }
    case Reply::infile: return stop();  // the server spoke while the client sent its file
    case Reply::prepare_params:
      if (--c.left == 0) {
        if (!deprecate_eof) {
          c.reply = Reply::prepare_params_eof;
        } else if (c.columns) {
          c.reply = Reply::prepare_columns;
          c.left = c.columns;
        } else {
          done(c);
        }
      }
      return true;
    case Reply::prepare_params_eof:
      if (!is_terminator(p, false)) return stop();
      if (c.columns) {
        c.reply = Reply::prepare_columns;
        c.left = c.columns;
      } else {
        done(c);
      }
      return true;
    case Reply::prepare_columns:
      if (--c.left == 0) {
        if (deprecate_eof) {
          done(c);
        } else {
          c.reply = Reply::prepare_columns_eof;
        }
      }
      return true;
    case Reply::prepare_columns_eof:
      if (!is_terminator(p, false)) return stop();
      done(c);
      return true;
    case Reply::simple:
      if (f == 0x00) {
        Ok ok;
        if (parse_ok(p.head, &ok)) no_backslash_ = (ok.status & status::kNoBackslashEscapes) != 0;
        if (c.code == cmd::kResetConnection) {
          for (auto& [id, s] : stmts_) end_cursor(s);
          stmts_.clear();
        }
      } else if (f != 0xfe) {
        return stop();
      }
      done(c);
      return true;
    case Reply::any:
      done(c);
      return true;
  }
  return stop();
}

}  // namespace txray::mysql
