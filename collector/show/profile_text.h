// The X-View profile of one transaction as text (see /work/shared/reference/README.md): a header, the
// rows [NO][START_TIME][GAP][CPU_T] message with nested steps indented, END, TOTAL[response][cpu], then
// the folded steps.
#pragma once

#include <string>

#include "model.h"

namespace txray::show {

// The message column of one row (no indentation), e.g.
//   SOCKET[addr=10.0.0.2,port=8005,localport=13192] uid=… [2.10 ms]
std::string step_message(const Step& s);

// The whole profile. Every line is prefixed with `indent` (used by --trace to show depth).
std::string profile_text(const Transaction& t, const std::string& indent = {});

}  // namespace txray::show
