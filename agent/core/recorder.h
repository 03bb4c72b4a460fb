// The recorder: how a hook turns what it saw into profile rows of the calling thread's transaction.
//
// This is the one interface the agent's hook files (sockets, SQL, RPC, …) use to record steps. It is
// stable: new functions may be added, existing ones keep their meaning.
//
// Typical use from a hook (see agent/hooks/hook.h for TXRAY_REAL and HookGuard):
//
//   extern "C" int sqlite3_step(sqlite3_stmt* st) {
//     auto real = TXRAY_REAL(sqlite3_step, "libsqlite3.so.0");
//     if (!real) return SQLITE_MISUSE;             // must still behave for the program
//     txray::HookGuard guard(txray::HookFamily::sql);  // false: agent off, agent thread, nested sql hook
//     if (!guard) return real(st);
//     txray::Transaction* tx = txray::rec::current();
//     if (!tx) return real(st);                    // no transaction on this thread: nothing to record
//     txray::StepRef step = txray::rec::open(tx, txray::StepKind::SQL);   // row time = now
//     int rc = real(st);
//     txray::SaveErrno keep;                       // everything below must leave errno as real() did
//     txray::rec::set_text(step, sqlite3_sql(st));
//     txray::rec::set_status(step, rc);
//     uint64_t el = txray::rec::close(step);       // elapsed = now - open time (row or summary line)
//     txray::rec::add_totals(tx, {.sql_ns = el, .sql_count = 1});
//     return rc;
//   }
//
// Rules:
// - Everything here is for the calling thread and its current transaction. A Transaction* is only valid
//   on the thread that got it from current(), and only until that thread's next hooked call returns:
//   never store it across calls.
// - A call step (open … close) is the parent of every step its thread opens on the transaction until it
//   is closed; nesting is recorded in Step.parent. Close steps in reverse order of opening (a stale or
//   out-of-order close is tolerated: it closes the steps its thread opened above it too). Other
//   threads recording into the same transaction at once (process mode) nest and close their own.
// - Set a step's fields between open() and close() (or, for add(), before the next open()/add() on
//   that transaction): past the step limit (TXRAY_MAX_STEPS) a step is folded into a per-(kind,
//   fingerprint) summary when it is closed, using the text / fingerprint / bytes / rows / error it has
//   then. Setters on a stale or empty StepRef do nothing, so hooks need no checks of their own.
// - Row times and GAP/CPU_T are taken by the recorder (open() and add() read the wall clock and the
//   thread CPU clock); hooks never pass times in, so GAPs and CPU_Ts always add up exactly.
// - Strings are copied (a SharedText is shared instead); the caller keeps ownership of what it passes.
// - Stacks (stack_capture.h): set_error() with a non-empty error, set_status() >= 500 on an HTTP_CALL,
//   and close()/close_sql() of a step at least TXRAY_STACK_MS long take the calling thread's stack into
//   the row (once per row; hooks do nothing for it). So set the error on the thread that made the call.
// - Nothing here does I/O, takes locks (except in TXRAY_MODE=process, where one transaction collects
//   steps from every thread), or changes errno.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/shared_text.h"

namespace txray {

// Same numbers as txray.v1.StepKind in proto/txray/v1/txray.proto.
enum class StepKind : uint8_t {
  START = 1,
  END = 2,
  SOCKET = 3,
  SOCKET_CLOSE = 4,
  MESSAGE = 5,
  SQL = 6,
  DB_CONNECT = 7,
  HTTP_CALL = 8,
  DNS = 9,
  REDIS = 10,      // one Redis command (protocols/redis)
  MEMCACHED = 11,  // one memcached command (protocols/memcached)
};

struct Transaction;  // agent/core/transaction.h; opaque to hooks

// A handle to one step. Cheap to copy; becomes stale (and harmless) when the step is folded or the
// transaction ends.
struct StepRef {
  Transaction* tx = nullptr;
  uint64_t txid = 0;
  uint32_t seq = 0;          // the step's serial number in its transaction (checks staleness)
  int32_t index = -1;        // position in the transaction's step list while it is live
  int32_t req_fd = -1;       // the transaction's inbound connection (lets an event loop find it later)
  uint64_t start_mono_ns = 0;
  // Non-zero: whoever holds this ref also holds a reference on tx (an HTTP/2 call filed under the request
  // a runtime shim named, span_owner.h), so it stays usable from any thread; the value is the fork
  // generation it was taken in (span_owner::generation()).
  uint32_t held = 0;
  explicit operator bool() const { return tx != nullptr; }
};

// Additions to a transaction's totals (Transaction.sql_ns … call_count in the wire format).
struct Totals {
  uint64_t sql_ns = 0;
  uint64_t fetch_ns = 0;
  uint64_t call_ns = 0;
  uint32_t sql_count = 0;
  uint32_t call_count = 0;
};

namespace rec {

// Where a step made now on the calling thread belongs (agent/core/attribution.h has the rules): the
// process's transaction in process mode; else the request this thread works for; else, when the agent
// cannot tell, the process's unattributed container (kind "unattributed"). nullptr only when the agent
// is not recording (or out of memory). Cheap: thread-local reads, at most one descriptor lookup.
Transaction* current();

// Like current(), but never the unattributed container: the request (or API/process transaction) the
// calling thread works for, or nullptr.
Transaction* current_request();

// True while the calling thread is inside a recorder call (it may hold a transaction's lock and be in the
// middle of changing it): what exit() from a signal handler that interrupted it must not touch.
bool in_recorder();

// True when s may be used from the calling thread now: its transaction is the one current() returns,
// or a request of this thread still in flight (a call opened while an event loop handled its request,
// whose response is read later), or the unattributed container,
// or a ref whose holder keeps its transaction alive (StepRef::held, taken in this process).
bool usable(const StepRef& s);

// Opens a call step of `kind` at now and makes it the parent of steps opened until it is closed.
// Returns an empty StepRef when tx is null.
StepRef open(Transaction* tx, StepKind kind);
// Opens a call step that is no parent of later steps and closes alone (step_rows.h, add_unnested): an
// HTTP/2 stream, concurrent with the others one thread writes on its connection.
StepRef open_unnested(Transaction* tx, StepKind kind);
// The same with its text (shared, cut at 4 KiB), fingerprint and, when attr_key is not empty, one
// attribute set in that one recorder entry: a statement a wire parser saw start (text and parameters),
// whose reply may never come before its transaction ends.
StepRef open_unnested(Transaction* tx, StepKind kind, const SharedText& text, uint64_t fingerprint,
                      std::string_view attr_key = {}, std::string_view attr_value = {});

// Closes a call step: elapsed_ns = now - its open time. Reads the wall clock only (not the CPU clock).
// Returns that elapsed_ns, also when the step was folded into a summary line at close (then it is the
// number the summary got): add exactly this to the transaction's totals. 0 for an empty or stale ref.
uint64_t close(StepRef& step);

// What a SQL row records when its call returns.
struct SqlRow {
  const SharedText* text = nullptr;   // the statement's normalized text, shared (not copied)
  uint64_t fingerprint = 0;
  const SharedText* binds = nullptr;  // bind parameters (attribute "binds"); null or empty = none
  int64_t rows = -1;
  int64_t changes = -1;
  uint64_t bytes_read = 0;     // added to the row's bytes (a wire parser's stretch of the stream)
  uint64_t bytes_written = 0;
};

// The hot path of a SQL row, in one recorder entry: sets the fields, closes the step and adds it to
// the transaction's SQL totals (sql_ns += the elapsed close measured, sql_count += 1), so that sql_ns
// equals the rows' plus the summary lines' elapsed exactly. Returns that elapsed (0 and nothing
// counted for an empty or stale ref). Set error/status before, with set_error()/set_status().
uint64_t close_sql(StepRef& step, const SqlRow& row);

// The end of a SQL execution whose rows were fetched after its row was closed: adds `more_rows` to the
// row (or to its summary line, found by kind SQL and `fingerprint`, when it was folded), sets the row's
// fetch_ns and adds fetch_ns to the transaction's fetch total. One recorder entry. Does nothing when the
// step's transaction is not current.
void end_fetch(const StepRef& s, uint64_t fingerprint, int64_t more_rows, uint64_t fetch_ns);

// Adds an instantaneous row (elapsed 0, no children) of `kind` with `text` at now.
StepRef add(Transaction* tx, StepKind kind, std::string_view text = {});

// Field setters (see Step in the wire format). Each does nothing on an empty or stale StepRef.
void set_text(const StepRef& s, std::string_view text);          // truncated at 4 KiB
void set_text(const StepRef& s, const SharedText& text);         // shared, not copied (cut at 4 KiB)
void set_error(const StepRef& s, std::string_view error);        // non-empty = the step failed
void add_attr(const StepRef& s, std::string_view key, std::string_view value);
void add_bytes(const StepRef& s, uint64_t read, uint64_t written);
void set_rows(const StepRef& s, int64_t rows);                    // -1 when unknown (the default)
void set_changes(const StepRef& s, int64_t changes);              // -1 when unknown (the default)
void set_fetch_ns(const StepRef& s, uint64_t fetch_ns);
void set_fingerprint(const StepRef& s, uint64_t fingerprint);     // groups folded steps; 0 = by text
void set_status(const StepRef& s, int32_t status);
void set_id(const StepRef& s, uint64_t id);                       // socket uid, span id of a call
void set_elapsed(const StepRef& s, uint64_t elapsed_ns);          // override what close() measured

// Elapsed time of a closed step (0 while it is open or when the ref is empty).
uint64_t elapsed(const StepRef& s);

// Adds rows to a step after it was closed (SQL rows fetched after the step's call returned): to the
// step while it is a row, or, when it was folded past the step limit, to the summary line of its kind
// and fingerprint. Does nothing for rows <= 0 or when the step's transaction is not current.
void add_rows(const StepRef& s, StepKind kind, uint64_t fingerprint, int64_t rows);

// Adds to the transaction's totals (SQL/fetch/call time and counts).
void add_totals(Transaction* tx, const Totals& t);

// Marks the transaction failed with this error text (the first error is kept).
void mark_failed(Transaction* tx, std::string_view error);

// Adds a transaction attribute (key/value; e.g. the RPC layer's "peer_service").
void add_tx_attr(Transaction* tx, std::string_view key, std::string_view value);

// W3C trace context of the transaction: its 16-byte trace id and its span id (= txid). For writing an
// outbound `traceparent` header. Returns false when tx is null.
bool trace_context(Transaction* tx, uint8_t trace_id[16], uint64_t* span_id);

// Sets the caller's trace context on the transaction (its flags then: sampled). The inbound HTTP
// trackers do this themselves, with the received flags (protocols/tracecontext/context.h).
void set_parent(Transaction* tx, const uint8_t trace_id[16], uint64_t parent_span_id);

// A new random non-zero 64-bit id (socket uids, span ids of outbound calls).
uint64_t new_id();

// Monotonic clock in ns (the one the recorder uses for row times), for hooks timing sub-phases such as
// SQL fetch time.
uint64_t now_ns();

}  // namespace rec
}  // namespace txray
