// One transaction as the JSON object `txray show --json` prints on one line (fields in docs/schema.md).
#pragma once

#include <nlohmann/json.hpp>

#include "model.h"

namespace txray::show {

nlohmann::ordered_json transaction_json(const Transaction& t);
nlohmann::ordered_json step_json(const Step& s);

}  // namespace txray::show
