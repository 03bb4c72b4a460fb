#include "protocols/http1/http_inject.h"

#include <algorithm>
#include <cstring>

#include "protocols/tracecontext/traceparent.h"

namespace txray {

int HeaderInjector::gather(const iovec* prog, int iovcnt, size_t at, std::string_view line, iovec* out) {
  int k = 0;
  if (pending_len_) out[k++] = {pending_, pending_len_};
  line_len_ = std::min(line.size(), kMaxLine);
  if (line_len_) std::memcpy(line_, line.data(), line_len_);  // an empty view may have no data (UB for memcpy)
  at_ = line_len_ ? at : kNoInsert;
  prog_len_ = 0;
  inserted_ = false;
  bool placed = false;
  for (int i = 0; i < iovcnt; ++i) {
    size_t len = prog[i].iov_len;
    if (!placed && at_ != kNoInsert && at_ <= prog_len_ + len) {
      // Split this entry at the insertion point (an empty half is left out).
      size_t head = at_ - prog_len_;
      if (head) out[k++] = {prog[i].iov_base, head};
      out[k++] = {line_, line_len_};
      if (len - head) out[k++] = {static_cast<char*>(prog[i].iov_base) + head, len - head};
      placed = true;
    } else {
      out[k++] = prog[i];
    }
    prog_len_ += len;
  }
  if (!placed) at_ = kNoInsert;  // beyond the program's bytes: nothing inserted
  return k;
}

size_t HeaderInjector::commit(size_t accepted) {
  inserted_ = false;
  // 1. Pending bytes of an earlier line go first.
  size_t p = std::min(accepted, pending_len_);
  if (p) {
    std::memmove(pending_, pending_ + p, pending_len_ - p);
    pending_len_ -= p;
    accepted -= p;
  }
  if (pending_len_) return 0;  // the kernel took only (part of) the pending bytes
  if (at_ == kNoInsert) return std::min(accepted, prog_len_);
  // 2. The program's bytes before the insertion point.
  if (accepted < at_) return accepted;  // the line was not reached: the next write decides again
  accepted -= at_;
  // 3. The line: committed as a whole from here on.
  inserted_ = true;
  size_t l = std::min(accepted, line_len_);
  accepted -= l;
  if (l < line_len_) {
    std::memcpy(pending_, line_ + l, line_len_ - l);
    pending_len_ = line_len_ - l;
    return at_;
  }
  // 4. The program's bytes after it.
  return at_ + std::min(accepted, prog_len_ - at_);
}

size_t format_traceparent_line(const uint8_t trace_id[16], uint64_t span_id, char* out, size_t cap) {
  constexpr std::string_view kName = "traceparent: ";
  size_t len = kName.size() + kTraceParentLen + 2;
  if (cap < len) return 0;
  std::memcpy(out, kName.data(), kName.size());
  format_traceparent(trace_id, span_id, 0x01, out + kName.size());
  out[len - 2] = '\r';
  out[len - 1] = '\n';
  return len;
}

}  // namespace txray
