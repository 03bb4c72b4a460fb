#include "transport/stack_encode.h"

#include <time.h>

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

bool try_symbolize(uintptr_t ip, bool return_address, sym::Frame* out) {
  // A forked child may have copied this lock held by the parent's agent thread: nobody would ever release
  // it there. Waiting a bounded time and giving up (the frame stays unnamed) never hangs the child's exit.
  for (int i = 0; i < 50; ++i) {
    if (g_mu.try_lock()) {
      std::lock_guard<std::mutex> lock(g_mu, std::adopt_lock);
      *out = symbolizer().resolve(ip, return_address);
      return true;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

}  // namespace txray::wire
