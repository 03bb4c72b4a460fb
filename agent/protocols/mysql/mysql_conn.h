// The client side of one MySQL/MariaDB connection, followed from the server's greeting: the handshake
// (a DB_CONNECT row), every command the program writes and the reply that completes it (SQL rows that
// read as libmariadb's hooks record them: mysql_hooks.cpp), driven by the dispatch through WireClient.
//
// Rows:
//   HandshakeResponse … OK/ERR: DB_CONNECT, text mysql://user@host:port/db, attributes database, host,
//     port (or socket), user, db.system, server_version; an ERR is its error;
//   COM_QUERY: one row per command, from its first byte written to the packet that ends its reply; the
//     results of a multi-statement (or a CALL) add up in that one row: rows of every result set, changes
//     of every OK, the first error;
//   COM_STMT_PREPARE: a row "PREPARE <text>" (as the hooks' mysql_stmt_prepare); the statement id the
//     server answers maps to the text and parameter count;
//   COM_STMT_EXECUTE: a row with the prepared text and attribute "binds" (the null bitmap, the types —
//     remembered for executions that do not resend them — and, with TXRAY_SQL=raw, the binary values);
//     a cursor's rows (COM_STMT_FETCH) are added to it when the cursor ends, as the hooks add fetched rows;
//   COM_INIT_DB: a row "USE <db>" (the hooks see none: libmariadb sends it below mysql_real_query).
// Errors: status = the server's error number, attribute "sqlstate", error "ERROR 1146 (42S02): …" with
// the message's quoted values masked, the transaction marked failed.
// Not followed (counted once in streams_unparsed, open rows closed with "wire protocol not followed"):
// the compressed protocol, MariaDB's bulk execute, commands this parser does not know, a sequence id
// out of order, a reply that does not fit its command.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/recorder.h"
#include "protocols/dispatch/wire_client.h"
#include "protocols/mysql/mysql_wire.h"
#include "protocols/sql/sql_binds.h"
#include "protocols/sql/sql_lexer.h"

namespace txray::mysql {

// Who a statement starting now belongs to (wire::statement_tx; tests give their own).
using TxOf = Transaction* (*)(ReqRef& owner);

class Conn final : public WireClient {
 public:
  static constexpr size_t kMaxStatements = 1024;  // prepared statements remembered per connection
  static constexpr size_t kMaxPipelined = 64;     // commands written and not answered yet
  static constexpr size_t kExecuteCap = 16384;    // bytes of a COM_STMT_EXECUTE kept (its binds)

  Conn(const WireEnv& env, TxOf tx_of);
  ~Conn() override;

  void on_sent(const char* p, size_t n) override;
  void on_received(const char* p, size_t n) override;
  void on_end(std::string_view why) override;
  bool stopped() const override { return stopped_; }
  bool tls_started() const override { return tls_; }

  // What tests look at.
  size_t statements() const { return stmts_.size(); }
  uint64_t evicted() const { return evicted_; }
  size_t pipelined() const { return queue_.size(); }

 private:
  enum class Phase : uint8_t { greeting, response, auth, command, ended };
  enum class Reply : uint8_t {
    first,            // OK, ERR, a result set's column count (or LOCAL INFILE)
    columns,          // column definitions to come: left
    columns_eof,      // the EOF after them (no CLIENT_DEPRECATE_EOF)
    rows,             // rows until EOF / OK(0xfe) / ERR
    infile,           // the client sends a file for LOAD DATA LOCAL INFILE, until an empty packet
    prepare_params,   // prepare OK's parameter definitions: left
    prepare_params_eof,
    prepare_columns,  // then its column definitions: left
    prepare_columns_eof,
    simple,           // one OK / ERR / EOF
    any,              // one packet of any content (COM_STATISTICS)
  };

  struct Row {
    StepRef step;
    uint64_t read0 = 0, written0 = 0;
    int64_t rows = -1, changes = -1;
    bool failed = false;
    SharedText text;
    uint64_t fingerprint = 0;
    SharedText binds;
  };

  // A statement prepared on this connection (the server's id → what its executions record).
  struct Stmt {
    SharedText text;
    uint64_t fingerprint = 0;
    uint16_t params = 0;
    std::string types;      // 2 bytes a parameter, as last sent
    std::string long_data;  // a bit a parameter: COM_STMT_SEND_LONG_DATA since the last execute
    sql::BindList binds;
    // An execution whose rows a cursor fetches later (COM_STMT_FETCH): added to its row when it ends.
    bool cursor_open = false;
    StepRef cursor_step;
    int64_t cursor_rows = 0;
    uint64_t cursor_fetch_ns = 0;
  };

  // A command written whose reply is awaited (FIFO: a client may write several before reading).
  struct Command {
    uint8_t code = 0;
    Reply reply = Reply::first;
    uint8_t expect_seq = 1;  // the next server packet's sequence id
    uint64_t left = 0;       // column / parameter definitions still to come
    bool cursor = false;     // COM_STMT_EXECUTE asked for a cursor
    bool skip_metadata = false;
    uint32_t stmt = 0;
    uint16_t columns = 0;    // COM_STMT_PREPARE: the column definitions after the parameters'
    uint64_t t0 = 0;         // COM_STMT_FETCH: when it was written
    std::string name;        // COM_INIT_DB: the database
    SharedText prepared;     // COM_STMT_PREPARE: the statement's text and fingerprint, for its OK
    uint64_t prepared_fp = 0;
    Row row;
  };

  struct Side final : PacketSink {
    Conn* c = nullptr;
    bool client = false;
    size_t begin(uint8_t seq, uint32_t len, int first) override;
    bool packet(const Packet& p) override;
  };

  // Client packets.
  size_t client_begin(uint8_t seq, uint32_t len, int first);
  bool client_packet(const Packet& p);
  bool command_packet(const Packet& p);
  bool execute_packet(Command& c, const Packet& p);
  // Server packets.
  size_t server_begin(uint8_t seq, uint32_t len, int first);
  bool server_packet(const Packet& p);
  bool reply_packet(Command& c, const Packet& p);
  bool end_of_results(Command& c, uint16_t status);  // true: the command's reply is complete
  void done(Command& c);

  void open_row(Row& r, bool nested_ok);
  void close_row(Row& r, std::string_view error);
  void fail_row(Row& r, const Err& e);
  void close_connect(std::string_view error);
  void end_cursor(Stmt& s);
  void remember(uint32_t id, Stmt s);
  Stmt* stmt(uint32_t id);
  bool stop();  // counted, rows closed: returns false for the framer
  void end_all(std::string_view why);
  sql::Dialect dialect() const { return no_backslash_ ? sql::Dialect::mysql_no_backslash : sql::Dialect::mysql; }

  const FdSlot* slot_;
  std::string peer_;
  ReqRef* owner_;
  ReqRef no_owner_;
  TxOf tx_of_;

  Framer from_client_, from_server_;
  Side client_side_, server_side_;

  Phase phase_ = Phase::greeting;
  bool stopped_ = false;
  bool tls_ = false;
  bool no_backslash_ = false;
  uint8_t seq_ = 0;          // handshake and authentication: the last sequence id either side sent
  uint64_t server_caps_ = 0;
  uint64_t caps_ = 0;        // what both sides use
  std::string server_version_;
  Row connect_;
  bool connect_step_ = false;  // connect_ is a DB_CONNECT step (closed with rec::close)

  Command cur_;              // the command being written (its packet may come in pieces)
  bool cur_active_ = false;
  std::deque<Command> queue_;
  std::unordered_map<uint32_t, Stmt> stmts_;
  uint32_t last_prepared_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace txray::mysql
