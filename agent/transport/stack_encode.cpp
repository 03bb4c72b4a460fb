#include "stack_encode.h"

#include <mutex>

namespace txray::wire {
namespace {

std::mutex g_mu;

sym::Symbolizer& symbolizer() {
  static auto* s = new sym::Symbolizer;  // never freed: the exiting thread may still send
  return *s;
}

}  // namespace

void write_frame(pb::Writer& w, int field, const sym::Frame& f) {
  size_t m = w.begin(field);
  w.str(1, f.function);
  w.str(2, f.module);
  w.u64(3, f.offset);
  w.end(m);
}

void write_stack(pb::Writer& w, int field, const uintptr_t* ips, uint32_t n) {
  if (!n) return;
  std::lock_guard<std::mutex> lock(g_mu);
  size_t m = w.begin(field);
  for (uint32_t i = 0; i < n; ++i) write_frame(w, 1, symbolizer().resolve(ips[i], true));
  w.end(m);
}

sym::Frame symbolize(uintptr_t ip, bool return_address) {
  std::lock_guard<std::mutex> lock(g_mu);
  return symbolizer().resolve(ip, return_address);
}

}  // namespace txray::wire
