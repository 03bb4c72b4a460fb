// One PostgreSQL connection followed on the wire: the frontend messages the program writes and the
// backend messages it reads (pg_messages.h frames them), matched in order, recorded as SQL rows through
// protocols/sql/sql_wire_row.h exactly as the libpq hooks record theirs.
//
// How statements become rows:
//  - a simple Query is one row per statement (split on ';' outside quotes, comments and dollar quotes):
//    the first opens when the Query is written, each next one when the server completes the one before
//    (its CommandComplete), so rows never overlap; the server's replies close them in order. A Query
//    the server answers with fewer results than the split found closes the rest at its ReadyForQuery;
//    more results than statements add to the last row;
//  - extended protocol: a row opens at the statement's first message (Parse, else Bind, else Execute)
//    and closes at the reply that completes its Execute (CommandComplete, EmptyQueryResponse,
//    PortalSuspended: a portal run in several Executes of a row limit is one row per Execute). A Parse
//    that no Bind of the same statement follows before the next Sync, Query or Parse is a prepare, as
//    libpq's PQprepare: its row reads "PREPARE name AS …" and closes at ParseComplete; a Bind with no
//    Execute closes at BindComplete;
//  - replies are matched to what was written in order (a FIFO of what the server owes): pipelines of
//    many statements before one Sync work; an ErrorResponse fails the statement whose reply was due
//    (sqlstate, error, the transaction marked failed), and the statements written after it up to the
//    Sync, which the server skips, close with the error "not run: an earlier statement failed";
//  - the statement name → text map is per connection (so a statement prepared in one request has its
//    text when another executes it), at most kMaxStatements named ones, the oldest evicted (counted);
//    parameter types come from Parse, or from the server's ParameterDescription, and decode binary
//    parameters for raw mode.
// A row's bytes are the protocol bytes written and read on the connection from the first byte of its
// first message to the last byte of the reply that closed it (the stream's own positions: exact however
// the program's calls group messages; under TLS, the plaintext).
// The StartupMessage makes the DB_CONNECT row (user, database), closed by the first ReadyForQuery or
// failed by an ErrorResponse before it. Passwords and SASL messages are skipped by length, never kept.
// Bytes that break the protocol's framing, or a reply that matches nothing written, stop the client:
// counted once (counters().streams_unparsed), its open rows closed with "wire protocol not followed".
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocols/dispatch/wire_client.h"
#include "protocols/pg/pg_messages.h"
#include "protocols/sql/sql_wire_row.h"

namespace txray::pg {

// Where a statement starting now is recorded: wire::statement_tx in the agent, a test's own otherwise.
using TxSource = Transaction* (*)(ReqRef& owner);

class PgConn final : public WireClient {
 public:
  static constexpr size_t kMaxStatements = 1024;  // named prepared statements kept per connection
  static constexpr size_t kMaxPortals = 64;
  static constexpr size_t kMaxPending = 4096;     // messages written and not yet answered
  static constexpr size_t kMaxRows = 1024;        // rows open at once

  PgConn(const WireEnv& env, TxSource tx_of);
  ~PgConn() override;

  void on_sent(const char* p, size_t n) override;
  void on_received(const char* p, size_t n) override;
  void on_end(std::string_view why) override;
  bool stopped() const override { return stopped_; }
  bool tls_started() const override { return tls_; }

  // What the tests look at.
  size_t statements() const { return stmts_.size(); }
  uint64_t evicted() const { return evicted_; }
  size_t pending() const { return ops_.size(); }
  uint64_t notices() const { return notices_; }
  uint64_t notifications() const { return notifications_; }

 private:
  enum class OpKind : uint8_t { parse, bind, describe_stmt, describe_portal, execute, close, sync, query, fcall };
  struct Op {
    explicit Op(OpKind k, bool c = false) : kind(k), closes(c) {}
    OpKind kind;
    int row = -1;
    uint32_t gen = 0;
    bool closes = false;                 // the reply to this op completes its row
    std::string name;                    // describe_stmt: the statement
    std::vector<sql::StatementText> more;  // query: its statements after the first
    size_t next = 0;
  };
  struct Row {
    sql::WireRow w;
    int64_t data_rows = 0;
    uint32_t notices = 0;
    uint32_t gen = 0;
    bool used = false;
  };
  struct Stmt {
    sql::StatementText text;
    std::vector<uint32_t> oids;
    // The query it was parsed from (up to kMaxRaw bytes): a driver that parses the same text again
    // (JDBC and node-postgres re-Parse the unnamed statement at every execution) reuses `text` rather
    // than normalizing it again.
    std::string raw;
  };
  static constexpr size_t kMaxRaw = 1024;
  // The statement being built: the row its Parse or Bind opened, until an Execute takes it.
  struct Unit {
    Unit() = default;
    Unit(int r, uint32_t g, std::string_view s) : row(r), gen(g), stmt(s) {}
    int row = -1;
    uint32_t gen = 0;
    bool bound = false;
    std::string stmt, portal;
    uint64_t last_seq = 0;  // the op whose reply closes the row if no Execute comes
  };

  // Inlined into the framer's loop: a read or write of many messages pays one call, not one a message.
  __attribute__((always_inline)) inline bool on_front(const Message& m);
  __attribute__((always_inline)) inline bool on_back(const Message& m);
  __attribute__((noinline)) bool on_front_rest(const Message& m);
  __attribute__((noinline)) bool on_back_rest(const Message& m);
  bool startup(const Message& m);
  bool parse(const Message& m);
  bool bind(const Message& m);
  bool execute(const Message& m);
  bool query(const Message& m);
  bool error(const Message& m);
  bool ready();
  bool complete(const Message& m, bool suspended);

  void start_unit(int row, uint32_t gen, std::string_view stmt);
  void clear_unit();
  const Stmt* find_stmt(std::string_view name);
  void forget_stmt(std::string_view name);
  const sql::StatementText* find_portal(std::string_view name) const;
  void put_portal(std::string_view name, const sql::StatementText& t);

  // The op the server owes next for a message written now; nullptr when too many are owed (stopped).
  Op* push(OpKind k, bool closes = false) {
    if (ops_.size() >= kMaxPending) return stop(), nullptr;
    return &ops_.emplace_back(k, closes);
  }
  Op* front() { return ops_.empty() ? nullptr : &ops_.front(); }
  void pop();
  Transaction* next_tx();
  int open(Transaction* tx, const sql::StatementText& t, std::string_view params);
  Row* row_of(int idx, uint32_t gen) {
    if (idx < 0 || size_t(idx) >= rows_.size()) return nullptr;
    Row& r = rows_[size_t(idx)];
    return r.used && r.gen == gen ? &r : nullptr;
  }
  void close_row(int idx, uint32_t gen, std::string_view error = {});
  void close_all(std::string_view error);
  void finish_unit() {
    if (unit_.row >= 0) finish_unit_slow();
  }
  void finish_unit_slow();
  void put_statement(std::string_view name, sql::StatementText t, std::vector<uint32_t> oids, std::string_view raw);
  // Into params_ (its capacity kept from one Bind to the next).
  std::string_view format_params(const BindMsg& b, const std::vector<uint32_t>* oids);
  bool stop();
  sql::StreamPos bytes_here(bool at_message_start) const;

  WireEnv env_;
  TxSource tx_of_;
  ReqRef no_owner_;
  Framer front_{Side::frontend}, back_{Side::backend};
  bool in_front_ = false;  // inside on_sent's messages (else on_received's)
  bool stopped_ = false, tls_ = false;
  bool awaiting_answer_ = false;  // an SSLRequest / GSSENCRequest was written
  bool skipping_ = false;  // an error with no Sync written yet: the server ignores messages until one

  StepRef connect_;
  bool connecting_ = false;
  std::string db_label_;

  // What the server owes, oldest first: a ring whose elements (and their strings) are reused, since a
  // statement pushes and pops several every time.
  class OpQueue {
   public:
    bool empty() const { return n_ == 0; }
    size_t size() const { return n_; }
    Op& front() { return buf_[head_]; }
    Op& operator[](size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    // A new op at the back, made in place in a reused slot (its strings keep their capacity).
    Op& emplace_back(OpKind kind, bool closes) {
      if (n_ == buf_.size()) grow();
      Op& slot = buf_[(head_ + n_) & (buf_.size() - 1)];
      slot.kind = kind;
      slot.row = -1;
      slot.gen = 0;
      slot.closes = closes;
      slot.name.clear();
      slot.next = 0;  // `more` was emptied when the slot was popped
      ++n_;
      return slot;
    }
    void pop_front() {
      buf_[head_].more.clear();
      head_ = (head_ + 1) & (buf_.size() - 1);
      --n_;
    }
    void clear() {
      while (n_) pop_front();
    }

   private:
    void grow() {
      std::vector<Op> bigger(buf_.empty() ? 16 : 2 * buf_.size(), Op(OpKind::sync));
      for (size_t i = 0; i < n_; ++i) bigger[i] = std::move((*this)[i]);
      buf_.swap(bigger);
      head_ = 0;
    }
    std::vector<Op> buf_;
    size_t head_ = 0, n_ = 0;
  };
  OpQueue ops_;
  uint64_t head_seq_ = 0;  // the sequence number of ops_.front()
  std::vector<Row> rows_;
  std::vector<int> free_rows_;
  uint32_t next_gen_ = 1;
  Unit unit_;

  std::unordered_map<std::string, Stmt> stmts_;
  std::deque<std::string> order_;  // named statements, oldest first (may hold closed names)
  // The statement looked up last (most Binds name the one before): found without hashing its name.
  // Values of the map keep their address until erased; every erase forgets it.
  const Stmt* hot_ = nullptr;
  std::string hot_name_;
  std::unordered_map<std::string, sql::StatementText> portals_;  // named portals
  sql::StatementText unnamed_portal_;  // the one most drivers use, without a map
  bool have_unnamed_portal_ = false;
  uint64_t evicted_ = 0, notices_ = 0, notifications_ = 0;
  uint32_t notifications_unreported_ = 0;
  ParseMsg parse_scratch_;
  BindMsg bind_scratch_;
  std::string params_, value_scratch_;
  uint64_t params_sig_ = 0;  // what params_ holds, when it is a masked text (format_params); 0: nothing kept
};

}  // namespace txray::pg
