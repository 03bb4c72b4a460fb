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
inline constexpr const char* kDroppedMeaning =
    "requests the traced processes served but whose transactions never reached the store (the collector "
    "was away, an agent's queue was full, or batches were lost on the way). They count in none of the "
    "figures of this report; txray show --drops says when, per process";

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

}  // namespace txray::report
