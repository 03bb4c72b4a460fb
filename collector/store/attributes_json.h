// Attributes are stored as a JSON object of string values (transactions.attributes, steps.attributes).
#pragma once

#include <string>
#include <string_view>

#include "model.h"

namespace txray {

// Appends v as a JSON string literal (quotes included). Bytes that are not valid UTF-8 are replaced with
// U+FFFD so that the stored JSON always parses.
void append_json_string(std::string& out, std::string_view v);

// Parses a stored attributes object; returns {} for NULL/empty/unparsable text (never throws).
Attributes parse_attributes_json(std::string_view json);

}  // namespace txray
