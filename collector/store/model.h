// Plain value types of the stored data, as the readers (txray show, report, viewer) see them.
// Ids are the unsigned wire values; optional fields are the nullable columns of schema.sql.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace txray {

// transactions.kind of an agent's *unattributed container*: not a request but the steps (connects,
// calls, SQL, DNS, ...) of one process that the agent could not attribute to any request, sent about once
// a second (docs/agent.md). Readers keep containers out of every transaction list and statistic.
inline constexpr std::string_view kUnattributedKind = "unattributed";

// The rows of a container that are unattributed steps: all but its START and END.
inline bool is_unattributed_step(std::string_view step_kind) { return step_kind != "START" && step_kind != "END"; }

using Attributes = std::vector<std::pair<std::string, std::string>>;

struct Agent {
  int64_t id = 0;  // agents.id
  uint64_t instance_id = 0;
  std::string host;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string program;
  std::string app;
  std::string agent_version;
  int64_t start_unix_ns = 0;
  std::string mode;
  std::string command_line;
  int64_t first_seen_unix_ns = 0;
  int64_t last_seen_unix_ns = 0;
  int64_t batches = 0;
  int64_t drops_queue_full = 0;
  int64_t drops_send_failed = 0;
  int64_t drops_encode_failed = 0;
  int64_t steps_summarized = 0;
  int64_t internal_errors = 0;
};

// One of a row's hottest functions (CPU samples, issue 11).
struct HotFunction {
  std::string function;
  std::string module;
  int64_t samples = 0;
};

// The samples of one stack (folded: frames root first, ';'-separated), for a flame graph.
struct CpuStack {
  std::string folded;
  int64_t samples = 0;
};
// One frame of a step's stack (step_frames), printed `function (module+0xoffset)`.
struct StackFrame {
  std::string function;  // empty when unknown
  std::string module;
  uint64_t offset = 0;
};

// "function (module+0x1a2b)", or "module+0x1a2b" when the function is unknown: what a person reads,
// so the function's short form (frame_name.h); StackFrame::function keeps the full name for JSON.
std::string format_frame(const StackFrame& f);

struct Step {
  int no = 0;
  int parent = -1;
  std::string kind;  // START, END, SOCKET, SOCKET_CLOSE, MESSAGE, SQL, DB_CONNECT, HTTP_CALL, DNS, REDIS, MEMCACHED
  int64_t start_offset_ns = 0;
  int64_t gap_ns = 0;
  int64_t cpu_ns = 0;
  int64_t elapsed_ns = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  std::string text;
  std::string error;  // empty when the step succeeded
  std::optional<uint64_t> id;  // socket uid, span id of a call
  std::optional<int64_t> rows;
  std::optional<int64_t> fetch_ns;
  std::optional<uint64_t> fingerprint;
  std::optional<int64_t> status;
  std::optional<int64_t> changes;
  Attributes attributes;
  std::optional<int64_t> callee_tx_id;  // transactions.id of the callee, once linked
  std::optional<uint64_t> callee_txid;  // its txid
  int64_t cpu_samples = 0;              // CPU samples in the row's GAP (cpu_rows)
  std::vector<HotFunction> hot;         // its hottest functions, most samples first (cpu_hot)
  std::vector<StackFrame> stack;  // innermost first; empty when no stack was taken

  const std::string* attribute(const std::string& key) const {
    for (const auto& [k, v] : attributes)
      if (k == key) return &v;
    return nullptr;
  }
};

struct Summary {
  std::string kind;
  uint64_t fingerprint = 0;
  std::string text;
  int64_t count = 0;
  int64_t elapsed_ns = 0;
  std::optional<int64_t> rows;
  int64_t errors = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};

// Unattributed steps of one agent (process) and one step kind, folded steps included.
struct UnattributedCount {
  int64_t agent_id = 0;  // agents.id
  std::string app;
  std::string kind;  // step kind
  int64_t count = 0;
};

// A window of transactions an agent dropped (drop_windows): how many, why, from the first drop to the last.
struct DropWindowRow {
  Agent agent;
  int64_t seq = 0;
  std::string reason;  // queue_full | send_failed | encode_failed
  int64_t count = 0;
  int64_t first_unix_ns = 0;
  int64_t last_unix_ns = 0;
  bool closed = false;
  int64_t reported_unix_ns = 0;  // collector clock: when it first arrived
};

struct Transaction {
  int64_t id = 0;  // transactions.id (store-local)
  uint64_t txid = 0;
  std::string trace_id;  // 32 lowercase hex digits, "" when none
  uint64_t parent_span_id = 0;
  Agent agent;
  std::string app;
  std::string name;
  std::string kind;  // http | api | process, or kUnattributedKind for a container
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  int64_t elapsed_ns = 0;
  int64_t cpu_ns = 0;
  int64_t sql_ns = 0;
  int64_t fetch_ns = 0;
  int64_t call_ns = 0;
  int64_t sql_count = 0;
  int64_t call_count = 0;
  int64_t status = 0;
  std::string error;  // empty on success
  std::string client_addr;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t tid = 0;
  int64_t step_count = 0;
  Attributes attributes;
  std::vector<Step> steps;
  std::vector<Summary> summary;
  // The agent's own cost in it (table agent_cost): an estimate of the CPU the agent spent, nullopt when
  // the agent sent none (older agents and stores, not calibrated yet).
  std::optional<int64_t> agent_cost_ns;
  int64_t agent_thread_ns = 0;  // of which on the agent's own thread
  // CPU samples (cpu_tx, cpu_stacks, agent_cpu): empty for a store or an agent without them.
  int64_t cpu_samples = 0;
  int64_t cpu_samples_dropped = 0;
  std::vector<CpuStack> cpu_stacks;  // most samples first
  std::string cpu_sampler;           // the agent's sampler status ("signal 61, every 10000 us …")
  // The agent's (process-wide, cumulative) CPU samples lost by the kernel (a full perf ring) and stacks
  // wanted but not taken (agent_losses; DropCounters 9 and 10): 0 when none or an older store.
  int64_t agent_cpu_samples_lost = 0;
  int64_t agent_stacks_missed = 0;
};

}  // namespace txray
