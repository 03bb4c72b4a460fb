// Helpers for the agent's unit tests: a deterministic clock and a sink that keeps finished transactions.
#pragma once

#include <memory>
#include <vector>

#include "cpu/clock.h"
#include "core/transaction.h"

namespace txray::test {

// Manual clocks: tests advance wall and CPU time explicitly.
struct FakeClock {
  static inline uint64_t mono = 1'000'000'000;
  static inline uint64_t cpu = 5'000'000;
  static uint64_t read_mono() { return mono; }
  static uint64_t read_cpu() { return cpu; }
  static void install() { clock::set_clocks_for_test({read_mono, read_cpu, read_cpu}); }
  static void uninstall() { clock::set_clocks_for_test({}); }
  static void advance(uint64_t wall_ns, uint64_t cpu_ns = 0) {
    mono += wall_ns;
    cpu += cpu_ns;
  }
};

// Collects what tx::end() hands over.
struct Collected {
  static inline std::vector<std::unique_ptr<Transaction>> txs;
  static void sink(Transaction* t) { txs.emplace_back(t); }
  static void install() {
    txs.clear();
    tx::set_sink(sink);
  }
};

inline uint64_t gap_sum(const Transaction& t) {
  uint64_t s = 0;
  for (const auto& st : t.steps) s += st.gap_ns;
  return s;
}
inline uint64_t cpu_sum(const Transaction& t) {
  uint64_t s = 0;
  for (const auto& st : t.steps) s += st.cpu_ns;
  return s;
}

}  // namespace txray::test
