#include "core/ids.h"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <ctime>

#include "cpu/clock.h"
#include "core/counters.h"

namespace txray {

Counters& counters() {
  static Counters c;
  return c;
}

namespace ids {
namespace {

std::atomic<uint64_t> g_seed{0};
std::atomic<uint64_t> g_counter{0};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

void reseed() {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != ssize_t(sizeof s))
    s = clock::unix_ns() ^ (uint64_t(getpid()) << 32) ^ clock::mono_ns();
  g_seed.store(s, std::memory_order_relaxed);
}

uint64_t next() {
  uint64_t seed = g_seed.load(std::memory_order_relaxed);
  if (seed == 0) {
    reseed();
    seed = g_seed.load(std::memory_order_relaxed);
  }
  for (;;) {
    // splitmix64 of (seed + counter) is a bijection of the counter: no repeats within a process.
    uint64_t v = splitmix64(seed + g_counter.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ull);
    if (v) return v;
  }
}

namespace {
void trace_from(uint64_t a, uint64_t seed, uint8_t out[16]) {
  uint64_t b = splitmix64(a ^ seed ^ 0x5bd1e995ull);
  // Big-endian, as before (byte i = bits 63-8i): one byte swap and a store per half.
  uint64_t be_a = __builtin_bswap64(a), be_b = __builtin_bswap64(b);
  std::memcpy(out, &be_a, 8);
  std::memcpy(out + 8, &be_b, 8);
}
}  // namespace

void trace_id(uint8_t out[16]) { trace_from(next(), g_seed.load(std::memory_order_relaxed), out); }

void tx_ids(uint64_t* txid, uint8_t trace[16]) {
  uint64_t seed = g_seed.load(std::memory_order_relaxed);
  if (seed == 0) {
    reseed();
    seed = g_seed.load(std::memory_order_relaxed);
  }
  for (;;) {
    uint64_t c = g_counter.fetch_add(2, std::memory_order_relaxed);
    uint64_t v = splitmix64(seed + c * 0x9e3779b97f4a7c15ull);
    uint64_t a = splitmix64(seed + (c + 1) * 0x9e3779b97f4a7c15ull);
    if (v && a) {
      *txid = v;
      trace_from(a, seed, trace);
      return;
    }
  }
}

}  // namespace ids
}  // namespace txray
