// `txray show --unattributed`: the steps the agent could not attribute to any request (the rows of the
// unattributed containers, model.h), per agent: a header with the counts, then one line per step; or one
// JSON object per step (fields in docs/schema.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.h"

namespace txray::show {

// "UNATTRIBUTED  app=front  12 steps: HTTP_CALL 10, SOCKET 2  (pid 4242, node on host-1)"; `counts` are
// this agent's (kinds with the most steps first).
std::string unattributed_header(const Agent& agent, const std::string& app,
                                const std::vector<UnattributedCount>& counts);

// One line per unattributed step of the container: its own start time and its X-View message (kind,
// text, status, [elapsed ms], error, callee=txid); then one line per kind folded past the step limit.
std::string unattributed_lines(const Transaction& container, const std::string& indent = "  ");

// One object per unattributed step: app, agent, pid, host, program, container_tx_id, no, kind, text,
// start_unix_ns (the step's own), elapsed_ns, elapsed_ms, status (null when none), error, callee_tx_id
// (the callee's txid, null until linked), count (1), folded (false), then the other step fields. A kind
// folded past the step limit gives one object with folded true and its count.
std::vector<nlohmann::ordered_json> unattributed_json(const Transaction& container);

}  // namespace txray::show
