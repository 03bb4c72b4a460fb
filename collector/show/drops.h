// `txray show --drops`: when agents dropped transactions (the drop_windows table): per window the app and
// process, why (queue_full, send_failed, encode_failed), how many, and from the first drop to the last;
// or one JSON object per window (fields in docs/schema.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.h"

namespace txray::show {

// A header line with the totals, then one line per window:
// "  burner  pid 4242  send_failed  12,345  2026-11-30 15:40:01.123 .. 15:40:11.456  (10.333 s)  closed"
std::string drops_text(const std::vector<DropWindowRow>& windows);

// One line for the end of other output: "drops: 12,345 transactions in 2 windows (txray show --drops)".
std::string drops_note(const std::vector<DropWindowRow>& windows);

// app, agent, pid, host, program, seq, reason, count, first_unix_ns, last_unix_ns, first, last (local
// time text), seconds, closed, reported_unix_ns.
nlohmann::ordered_json drop_window_json(const DropWindowRow& w);

}  // namespace txray::show
