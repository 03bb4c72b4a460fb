// The X-View profile as text: numbers, clock times, the message column of each step, the header, and the
// whole profile for "Copy profile". Also the timeline's geometry (fractions of the response time), so
// the widget only scales and paints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace txray::viewer {

std::string with_commas(int64_t n);                // 1466 -> "1,466"
std::string format_ms(int64_t ns);                 // whole ms with commas; 2 decimals below 10 ms
std::string clock_ms(int64_t unix_ns);             // "11:04:26 718" (local time)
std::string date_clock_ms(int64_t unix_ns);        // "2026-11-29 11:04:26.718"
std::string hex16(int64_t v);                      // 64-bit id as 16 lowercase hex digits
std::string step_message(const Step& s);           // "SOCKET[addr=…,port=…,localport=…] uid=…" etc.
std::string profile_header(const Profile& p);      // the X-View header, one "key: value" per line
// "function (module+0x1a2b)", or "module+0x1a2b"; the function's short form (frame_name.h) unless `full`
// (the full names go to the tooltips).
std::string frame_text(const Frame& f, bool full = false);
std::string stack_text(const Step& s, bool full = false);  // its frames, one per line; "" when it has no stack
std::string profile_text(const Profile& p);        // header + "[ NO ][ START_TIME ][ GAP][CPU_T]" rows + TOTAL

// One row of the timeline, in fractions of the transaction's response time (0 = start, 1 = end).
struct TimelineBar {
  double gap_begin = 0, gap_end = 0;  // the GAP before the row: previous row time .. this row time
  double cpu_share = 0;               // CPU_T / GAP (0..1): how much of that gap the thread computed
  double call_begin = 0, call_end = 0;  // the step's own duration for calls (elapsed_ns > 0), else equal
  int depth = 0;
  bool is_call = false;
};
std::vector<TimelineBar> timeline_layout(const Profile& p);

}  // namespace txray::viewer
