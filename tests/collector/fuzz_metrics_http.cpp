// libFuzzer target: the metrics endpoint's request parser and the response it leads to, with any bytes
// (collector/metrics/http_request.h). Built like fuzz_decoder (CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto r = txray::metrics::parse_request(in);
  if (r.status == txray::metrics::ParseStatus::kOk && (r.path.empty() || r.path[0] != '/')) std::abort();
  if (r.status == txray::metrics::ParseStatus::kIncomplete && size > txray::metrics::kMaxRequestBytes) std::abort();
  auto resp = txray::metrics::respond(r, [](bool om) { return std::string(om ? "a\n" : "b\n"); });
  if (resp.rfind("HTTP/1.1 ", 0) != 0) std::abort();
  // A prefix of what was sent must never be judged more complete than the whole.
  if (size > 1 && r.status == txray::metrics::ParseStatus::kIncomplete &&
      txray::metrics::parse_request(in.substr(0, size / 2)).status == txray::metrics::ParseStatus::kOk)
    std::abort();
  return 0;
}
