// Renderers: each turns a computed Report into one format. They compute nothing of their own beyond
// unit conversion, so the numbers agree across formats.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_model.h"

namespace txray::report {

// What unattributed steps are, in the words of the Markdown and HTML summaries.
inline constexpr const char* kUnattributedMeaning =
    "steps (connects, outbound calls, SQL, DNS) that the agent saw in the traced processes but could not "
    "attribute to any request, for instance a call made while several requests were in flight on one "
    "event-loop thread. They belong to no transaction and count in none of the figures of this report; "
    "`txray show --unattributed` lists them, docs/agent.md gives the rules";

// What dropped transactions are, in the words of the Markdown and HTML summaries.
inline constexpr const char* kAgentCostMeaning =
    "the CPU txray's agent itself spent per transaction, an estimate from its calibrated unit costs";
inline constexpr const char* kDroppedMeaning =
    "requests the traced processes served but whose transactions never reached the store (the collector "
    "was away, an agent's queue was full, or batches were lost on the way). They count in none of the "
    "figures of this report; txray show --drops says when, per process";

// What shed transactions are, in the words of the Markdown and HTML summaries.
inline constexpr const char* kShedMeaning =
    "transactions counted but not stored: shed by the collector while more arrived than the store could "
    "take, or sampled out by the agents (TXRAY_SAMPLE_RATE). None failed and none was slow. They are "
    "included in the count, throughput, mean and percentiles above (each as its response-time bucket's "
    "mean: within 25%) and in the names table, in no other figure";

nlohmann::ordered_json to_json(const Report& r);  // render_json.cpp; keys in report order
void render_json(const Report& r, std::ostream& out);
void render_md(const Report& r, std::ostream& out);        // render_md.cpp
void render_html(const Report& r, std::ostream& out);      // render_html.cpp

// A table of the report as plain cells (render_csv.cpp); numbers are unformatted (ms with 3 decimals).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
Table csv_table(const Report& r, const std::string& name);  // name from table_names()
void render_csv(const Table& t, std::ostream& out);

// The comparison (Report::compare) as text cells, unescaped: the Markdown and HTML renderers and the
// viewer's comparison panel all show these (render_compare.cpp).
struct CompareRows {
  std::string headline;  // one sentence: means, difference, the largest part
  std::string filters;   // "Baseline: <filters> · current: <filters>"
  Table summary;         // counts and percentiles: "", Baseline, Current, Difference
  Table parts;           // the five parts + response time: Part, Baseline ms, Current ms, Contribution ms
  Table members;         // ranked members
  Table changes;         // appeared / vanished
  Table steps;           // steps per transaction by kind
  std::string notes;     // what contribution and waiting mean
};
CompareRows compare_rows(const Report& r);
std::string fmt_delta_ms(double ns);             // "+12.50", "−0.310", "0.000"
const char* part_label(const std::string& part); // "cpu" → "CPU in own code", …

}  // namespace txray::report
