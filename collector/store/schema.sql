-- txray store, schema version 1. The collector creates it; the viewer, `txray show` and `txray report`
-- read it. Times are nanoseconds (unix epoch for *_unix_ns, offsets from the transaction start otherwise).
-- 64-bit ids from the wire (txid, span ids, fingerprints, socket uids) are stored as the signed
-- two's-complement view of the unsigned value; print them as 16 lowercase hex digits.
-- See docs/schema.md.

CREATE TABLE IF NOT EXISTS meta(
  key   TEXT PRIMARY KEY,
  value TEXT
);

-- One row per agent instance (= one traced process; a forked child is an instance of its own).
CREATE TABLE IF NOT EXISTS agents(
  id                  INTEGER PRIMARY KEY,
  instance_id         INTEGER NOT NULL UNIQUE,
  host                TEXT,
  pid                 INTEGER,
  ppid                INTEGER,
  program             TEXT,
  app                 TEXT,
  agent_version       TEXT,
  start_unix_ns       INTEGER,
  mode                TEXT,
  command_line        TEXT,
  first_seen_unix_ns  INTEGER,
  last_seen_unix_ns   INTEGER,
  batches             INTEGER NOT NULL DEFAULT 0,
  -- latest cumulative drop counters reported by the agent (DropCounters in the wire format)
  drops_queue_full    INTEGER NOT NULL DEFAULT 0,
  drops_send_failed   INTEGER NOT NULL DEFAULT 0,
  drops_encode_failed INTEGER NOT NULL DEFAULT 0,
  steps_summarized    INTEGER NOT NULL DEFAULT 0,
  internal_errors     INTEGER NOT NULL DEFAULT 0
);

-- Every distinct step text (SQL statement, URL, message) once.
CREATE TABLE IF NOT EXISTS texts(
  id   INTEGER PRIMARY KEY,
  hash INTEGER NOT NULL UNIQUE,   -- 64-bit FNV-1a of the text
  text TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS transactions(
  id             INTEGER PRIMARY KEY,   -- store-local row id
  txid           INTEGER NOT NULL,      -- agent's 64-bit transaction id (= its span id)
  trace_id       TEXT,                  -- 32 lowercase hex digits
  parent_span_id INTEGER NOT NULL DEFAULT 0,
  agent_id       INTEGER NOT NULL REFERENCES agents(id),
  app            TEXT NOT NULL,
  name           TEXT NOT NULL,
  kind           TEXT,                  -- http | api | process | unattributed (a container, see below)
  start_unix_ns  INTEGER NOT NULL,
  end_unix_ns    INTEGER NOT NULL,      -- start + elapsed: the scatter's x
  elapsed_ns     INTEGER NOT NULL,      -- response time: the scatter's y
  cpu_ns         INTEGER NOT NULL DEFAULT 0,
  sql_ns         INTEGER NOT NULL DEFAULT 0,
  fetch_ns       INTEGER NOT NULL DEFAULT 0,
  call_ns        INTEGER NOT NULL DEFAULT 0,
  sql_count      INTEGER NOT NULL DEFAULT 0,
  call_count     INTEGER NOT NULL DEFAULT 0,
  status         INTEGER NOT NULL DEFAULT 0,
  error          TEXT,                  -- NULL on success
  client_addr    TEXT,
  bytes_read     INTEGER NOT NULL DEFAULT 0,
  bytes_written  INTEGER NOT NULL DEFAULT 0,
  tid            INTEGER,
  step_count     INTEGER NOT NULL DEFAULT 0,
  attributes     TEXT                   -- JSON object of string values, NULL when none
);
CREATE INDEX IF NOT EXISTS transactions_end   ON transactions(end_unix_ns);
CREATE INDEX IF NOT EXISTS transactions_txid  ON transactions(txid);
CREATE INDEX IF NOT EXISTS transactions_trace ON transactions(trace_id);
-- Call linking: a callee's parent_span_id is the span id its caller's HTTP_CALL step sent (steps.ref_id).
CREATE INDEX IF NOT EXISTS transactions_parent_span ON transactions(parent_span_id) WHERE parent_span_id != 0;
-- Unattributed containers: rows with kind 'unattributed' hold the steps of one process that the agent could
-- not attribute to any request (about one a second). Not transactions: readers leave them out of every
-- transaction list and statistic and read them through this index.
CREATE INDEX IF NOT EXISTS transactions_unattributed ON transactions(agent_id, start_unix_ns)
  WHERE kind = 'unattributed';

CREATE TABLE IF NOT EXISTS steps(
  tx_id           INTEGER NOT NULL,     -- transactions.id
  no              INTEGER NOT NULL,     -- row number in the profile, from 0
  parent          INTEGER NOT NULL,     -- no of the enclosing step, -1 at the top
  kind            TEXT NOT NULL,        -- START, END, SOCKET, SOCKET_CLOSE, MESSAGE, SQL, DB_CONNECT, HTTP_CALL, DNS
  start_offset_ns INTEGER NOT NULL,
  gap_ns          INTEGER NOT NULL,
  cpu_ns          INTEGER NOT NULL,
  elapsed_ns      INTEGER NOT NULL DEFAULT 0,
  bytes_read      INTEGER NOT NULL DEFAULT 0,
  bytes_written   INTEGER NOT NULL DEFAULT 0,
  text_id         INTEGER,              -- texts.id, NULL when the step has no text
  error           TEXT,
  ref_id          INTEGER,              -- Step.id: socket uid, span id of a call
  rows            INTEGER,
  fetch_ns        INTEGER,
  fingerprint     INTEGER,
  status          INTEGER,
  changes         INTEGER,
  attributes      TEXT,                 -- JSON object of string values, NULL when none
  callee_tx_id    INTEGER,              -- HTTP_CALL: transactions.id of the callee, once linked
  PRIMARY KEY(tx_id, no)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS steps_call_ref ON steps(ref_id) WHERE kind = 'HTTP_CALL';

-- The stack of a step that failed or was slow (Step.stack in the wire format, docs/stacks.md): one row per
-- frame, innermost first (depth 0 = the code that made the call), symbolized by the agent. Added within
-- schema version 1, as drop_windows: readers of a store without it see no stacks.
CREATE TABLE IF NOT EXISTS step_frames(
  tx_id    INTEGER NOT NULL,   -- transactions.id
  step_no  INTEGER NOT NULL,   -- steps.no
  depth    INTEGER NOT NULL,   -- 0 = innermost
  function TEXT,               -- demangled; NULL when unknown (stripped, JIT code)
  module   TEXT NOT NULL,      -- basename of the ELF file, "[vdso]", "?" when unmapped
  offset   INTEGER NOT NULL,   -- address in the module's own numbering (addr2line -e FILE 0xoffset)
  PRIMARY KEY(tx_id, step_no, depth)
) WITHOUT ROWID;

-- Steps folded past the per-transaction step limit (StepSummary in the wire format).
CREATE TABLE IF NOT EXISTS step_summaries(
  tx_id         INTEGER NOT NULL,
  kind          TEXT NOT NULL,
  fingerprint   INTEGER,
  text_id       INTEGER,
  count         INTEGER NOT NULL,
  elapsed_ns    INTEGER NOT NULL,
  rows          INTEGER,
  errors        INTEGER NOT NULL DEFAULT 0,
  bytes_read    INTEGER NOT NULL DEFAULT 0,
  bytes_written INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS step_summaries_tx ON step_summaries(tx_id);

-- When agents dropped transactions (DropWindow in the wire format): one row per window, a run of drops of
-- one reason from the first drop to the last, closed after a second without one. The agent repeats a
-- window on several batches (PUSH has no acknowledgement); the collector keeps the largest count and the
-- widest bounds. Added within schema version 1: the collector creates it in older stores when it opens
-- them (IF NOT EXISTS, like every table here); readers of a store without it see no windows.
CREATE TABLE IF NOT EXISTS drop_windows(
  agent_id         INTEGER NOT NULL REFERENCES agents(id),
  seq              INTEGER NOT NULL,      -- per agent instance, from 1; the collector's own windows from -1 down
  reason           TEXT NOT NULL,         -- queue_full | send_failed | encode_failed (the agents.drops_* counters),
                                          -- lost_in_flight (found by the collector: agent_received)
  count            INTEGER NOT NULL,      -- transactions dropped in the window
  first_unix_ns    INTEGER NOT NULL,      -- the first drop (agent clock)
  last_unix_ns     INTEGER NOT NULL,      -- the last drop
  closed           INTEGER NOT NULL DEFAULT 0,  -- 1: final; 0: drops were still going on at the last report
  reported_unix_ns INTEGER NOT NULL,      -- collector clock: when the window first arrived
  PRIMARY KEY(agent_id, seq)
) WITHOUT ROWID;

-- What the collector received of each agent, to find what was lost in flight: each batch carries how many
-- transactions the agent had written into a connection before it (Batch.sent_transactions); when that is
-- more than `transactions`, the difference was lost between the agent and the store (written into a
-- connection the collector closed or lost before reading it, or not stored) and becomes a drop window
-- with reason 'lost_in_flight' and a negative seq. Added within schema version 1, as drop_windows.
CREATE TABLE IF NOT EXISTS agent_received(
  agent_id          INTEGER PRIMARY KEY REFERENCES agents(id),
  transactions      INTEGER NOT NULL,   -- received, or found lost in flight
  last_sent_unix_ns INTEGER NOT NULL    -- Batch.sent_unix_ns of the last batch received (agent clock)
);

-- Transactions counted but not stored: shed by the collector under load (origin 'collector': more
-- arrived than the store could take) or sampled out by the agent's head sampling (origin 'agent':
-- TXRAY_SAMPLE_RATE). None failed and none was slow (slower than its app's recent p95 or the configured
-- threshold): those are always stored. Per application, name, minute and response-time bucket
-- (txray/v1/shed_bucket.h: four per power of two), with their total response time, so readers can add
-- them to counts, throughput, mean and percentiles (docs/report.md). Added within schema version 1, as
-- drop_windows; readers of a store without it see none.
CREATE TABLE IF NOT EXISTS shed_counts(
  app            TEXT NOT NULL,
  name           TEXT NOT NULL,
  kind           TEXT NOT NULL,         -- http | api | process
  minute_unix_ns INTEGER NOT NULL,      -- the minute they ended in (a multiple of 60 s)
  origin         TEXT NOT NULL,         -- collector | agent
  bucket         INTEGER NOT NULL,      -- response-time bucket: [shed_bucket_lo, shed_bucket_hi)
  count          INTEGER NOT NULL,
  elapsed_ns     INTEGER NOT NULL,      -- their total response time (the bucket's mean = elapsed_ns / count)
  PRIMARY KEY(app, name, kind, minute_unix_ns, origin, bucket)
) WITHOUT ROWID;

-- The agent's own cost in each transaction (Transaction.agent_cost_ns in the wire format): an
-- estimate of the CPU the agent spent in it, on the host's threads (hooked calls x unit costs calibrated at
-- the agent's start on that host) and on the agent's own thread (its share of the measured work of
-- encoding and sending). A row only when the agent sent a figure (newer agents, once calibrated). Added
-- within schema version 1, as drop_windows: readers of a store without it show no agent cost.
CREATE TABLE IF NOT EXISTS agent_cost(
  tx_id           INTEGER PRIMARY KEY,   -- transactions.id
  cost_ns         INTEGER NOT NULL,      -- the whole estimate
  agent_thread_ns INTEGER NOT NULL DEFAULT 0  -- of which on the agent's own thread
);

-- The unit costs an agent instance calibrated at its start (AgentCostUnits), picoseconds of CPU.
CREATE TABLE IF NOT EXISTS agent_cost_units(
  agent_id       INTEGER PRIMARY KEY REFERENCES agents(id),
  tx_ps          INTEGER NOT NULL,  -- host side of one inbound HTTP request with its START and END rows
  row_ps         INTEGER NOT NULL,  -- one more profile row
  folded_ps      INTEGER NOT NULL,  -- one step folded past the step limit
  io_ps          INTEGER NOT NULL,  -- the follow path of one read/write on a followed connection
  syscall_ps     INTEGER NOT NULL,  -- one system call the agent makes itself in a hook
  encode_tx_ps   INTEGER NOT NULL,  -- agent thread: encoding and freeing a START/END transaction
  encode_row_ps  INTEGER NOT NULL,  -- agent thread: encoding one more row
  cpu_clock_ps   INTEGER NOT NULL,  -- one CLOCK_THREAD_CPUTIME_ID read
  calibration_ns INTEGER NOT NULL   -- CPU the calibration took
);

-- CPU samples (docs/agent.md "CPU samples"): where a row's CPU_T went. Added within schema
-- version 1 (IF NOT EXISTS: made in older stores when the collector opens them; readers of a store
-- without them see no samples). Rows only for transactions and rows that have samples.
CREATE TABLE IF NOT EXISTS cpu_rows(      -- Step.cpu_samples: samples in the row's GAP
  tx_id   INTEGER NOT NULL,
  no      INTEGER NOT NULL,               -- steps.no
  samples INTEGER NOT NULL,
  PRIMARY KEY(tx_id, no)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cpu_hot(       -- Step.hot: the row's hottest functions (at most 8)
  tx_id    INTEGER NOT NULL,
  no       INTEGER NOT NULL,              -- steps.no
  rank     INTEGER NOT NULL,              -- 0 = most samples
  function TEXT NOT NULL,                 -- demangled; "[module]" when the module has no name for it
  module   TEXT,
  samples  INTEGER NOT NULL,
  PRIMARY KEY(tx_id, no, rank)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS cpu_stacks(    -- Transaction.cpu_stacks: folded stacks for a flame graph
  tx_id   INTEGER NOT NULL,
  folded  TEXT NOT NULL,                  -- frames root first, ';'-separated
  samples INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS cpu_stacks_tx ON cpu_stacks(tx_id);
CREATE TABLE IF NOT EXISTS cpu_tx(        -- per transaction: samples kept and dropped
  tx_id   INTEGER PRIMARY KEY,
  samples INTEGER NOT NULL,
  dropped INTEGER NOT NULL DEFAULT 0      -- Transaction.cpu_samples_dropped
);
CREATE TABLE IF NOT EXISTS agent_cpu(     -- AgentInfo.cpu_sampler, DropCounters.cpu_samples_dropped
  agent_id        INTEGER PRIMARY KEY REFERENCES agents(id),
  sampler         TEXT,
  samples_dropped INTEGER NOT NULL DEFAULT 0
);
-- The agent's other losses (latest cumulative DropCounters, per process): CPU samples and stacks, not
-- transactions. A row only once one of them is non-zero. Added within schema version 1, like agent_cpu.
CREATE TABLE IF NOT EXISTS agent_losses(
  agent_id         INTEGER PRIMARY KEY REFERENCES agents(id),
  cpu_samples_lost INTEGER NOT NULL DEFAULT 0,  -- DropCounters.cpu_samples_lost: the perf ring was full
  stacks_missed    INTEGER NOT NULL DEFAULT 0   -- DropCounters.stacks_missed: stacks wanted, not taken
) WITHOUT ROWID;

INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1');
