// `txray collect`: a ZeroMQ PULL socket, decoding on the receiving thread, a bounded queue to a writer
// thread, and batched SQLite writes (many agent batches per SQLite transaction).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "decoder.h"
#include "shedder.h"

namespace txray::ingest {

class BatchTap;  // batch_tap.h

struct CollectOptions {
  std::string listen = "tcp://127.0.0.1:7878";  // ZeroMQ endpoint to bind: tcp://HOST:PORT or ipc://PATH
  std::string db = "txray.db";                   // SQLite file, created when missing (mode 0600)
  // CURVE (docs/security.md): the server's secret key file and the client public keys allowed in.
  // Binding an address other agents could reach needs both, or `insecure`.
  std::string curve_secret_key_file;
  std::string allowed_clients_file;
  bool insecure = false;
  double status_interval_s = 5;  // 0 turns the periodic status line off
  Limits limits;
  BatchTap* tap = nullptr;  // not owned: gets every accepted batch beside the store (OTLP export), or none
  std::chrono::milliseconds tap_finish{5000};  // at stop, how long the tap may take to deliver its queue
  size_t queue_batches = 512;                 // decoded batches waiting for the writer
  size_t queue_bytes = 256u << 20;            // … and their encoded size
  size_t commit_rows = 50000;                 // rows per SQLite transaction, at most (roughly)
  std::chrono::milliseconds commit_window{250};  // and at most this long before a commit
  std::chrono::milliseconds commit_idle{20};     // … or commit when no batch came for this long
  ShedOptions shed;  // load shedding when the writer queue fills (shedder.h, docs/fleet.md)
  // Test/debug only (--debug-store-delay-us): the writer sleeps this long per transaction it stores, so
  // that a test can make the store slower than the load without a bigger machine. 0 in production.
  std::chrono::microseconds debug_store_delay{0};
};

// Counters shared by the two threads; read for the status line and the final summary.
struct CollectStats {
  const BatchTap* tap = nullptr;          // the stage beside the store (opts.tap), whose counters the line shows
  std::atomic<uint64_t> messages{0};      // ZeroMQ messages received
  std::atomic<uint64_t> received_tx{0};   // transactions in accepted batches
  std::atomic<uint64_t> stored_tx{0};
  std::atomic<uint64_t> stored_steps{0};
  std::atomic<uint64_t> malformed{0};     // unparsable messages
  std::atomic<uint64_t> invalid{0};       // parsed but breaking the wire format's rules
  std::atomic<uint64_t> oversize{0};      // larger than limits.max_message_bytes
  std::atomic<uint64_t> lost_tx{0};       // accepted but not stored because SQLite failed
  std::atomic<uint64_t> agent_drops{0};   // sum of the latest drop counters of the agents seen
  std::atomic<uint64_t> links{0};         // HTTP_CALL steps linked to callees
  std::atomic<uint64_t> truncated_fields{0};  // strings cut to their limit (with a marker), attributes past theirs
  std::atomic<uint64_t> masked_values{0};     // values masked as credentials on ingest (redact.h)
  bool redact_off = false;                    // started with no redaction (--no-redact): the line says so
  std::atomic<uint64_t> refused_peers{0};  // connections whose ZeroMQ handshake failed (no/bad CURVE, not ZeroMQ)
  std::atomic<uint64_t> unlisted_keys{0};  // … of which CURVE clients whose public key is not allowed
  std::atomic<int64_t> disk_full_since_ns{0};  // the writer waits for space since then (0: it does not)
  std::atomic<uint64_t> shed_tx{0};          // received but only counted (load shedding: shed_counts)
  std::atomic<uint64_t> agent_sampled_out{0};  // sum of the agents' latest sampled_out counters (head sampling)
  std::atomic<uint64_t> agent_samples_lost{0};   // … of their cpu_samples_lost (CPU samples, not transactions)
  std::atomic<uint64_t> agent_streams_unparsed{0};  // … of their streams_unparsed (wire protocols not followed)
  std::atomic<uint64_t> agent_stacks_missed{0};  // … of their stacks_missed (stacks wanted, not taken)
  std::atomic<uint32_t> shed_share_pct{0};   // the share of sheddable transactions shed at the last batch
};

// Runs until `stop` becomes true (the CLI sets it from SIGINT/SIGTERM), then closes the endpoint (nothing
// new comes in), takes what libzmq had already read (at most 1 s), stores everything received and returns 0
// (docs/reliability.md, "Stopping the collector"). Returns 2 with a message on stderr when the
// endpoint cannot be bound, would be reachable from other machines without authentication, the keys
// cannot be read, or the database cannot be opened.
int run_collector(const CollectOptions& opts, const std::atomic<bool>& stop, CollectStats& stats);

}  // namespace txray::ingest
