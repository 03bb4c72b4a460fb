// Synthetic agent data for the collector's tests, sender tool and ingest benchmark: well-formed
// transactions whose GAPs add up to the response time and CPU_Ts to the CPU time, like an agent's.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "txray/v1/txray.pb.h"

namespace txray::testing {

struct SynthOptions {
  int steps = 10;  // rows per transaction, START and END included (at least 2)
  std::string app = "synthetic";
  std::string host = "testhost";
  uint64_t instance_id = 0x1234567890abcdefull;
  // Query strings where an agent puts them, none secret: a `query` attribute (`page=…&sort=asc&q=…`) and
  // HTTP_CALL URLs with the agent's masked query (`?item=?&key=?`): what the collector's masking scans.
  bool queries = false;
};

// The agent part of a batch (no transactions yet).
v1::Batch make_batch(const SynthOptions& o, uint64_t batch_seq);

// Appends one transaction numbered `seq` to the batch. Its steps are START, then SOCKET / SQL /
// HTTP_CALL / SOCKET_CLOSE / MESSAGE rows (some nested), then END; texts repeat across transactions
// (as SQL texts and URLs do), and the row counts and times come from `rng`.
v1::Transaction* add_transaction(v1::Batch& b, const SynthOptions& o, uint64_t seq, std::mt19937_64& rng,
                                 uint64_t start_unix_ns);

// Appends an unattributed container as the agent sends one (kind "unattributed", name "unattributed
// steps", no trace): START, then `steps` rows cycling HTTP_CALL (status 200, a span id from `rng`),
// SOCKET, SQL, DNS, SOCKET_CLOSE, DB_CONNECT, then END. Its GAPs add up to its elapsed time.
v1::Transaction* add_unattributed(v1::Batch& b, uint64_t seq, int steps, std::mt19937_64& rng,
                                  uint64_t start_unix_ns);

}  // namespace txray::testing
