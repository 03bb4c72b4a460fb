#include "transport/cpu_profile.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/transaction.h"

namespace txray::cpu {
namespace {

// The first row whose start is at or after `off` (rows are in time order); the last row when none.
size_t row_of(const std::vector<Step>& steps, uint64_t off) {
  size_t lo = 1, hi = steps.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (steps[mid].start_offset_ns >= off) hi = mid;
    else lo = mid + 1;
  }
  return lo < steps.size() ? lo : steps.size() - 1;
}

std::string frame_name(const Symbol& s) {
  if (!s.function.empty()) return s.function;
  return "[" + (s.module.empty() ? std::string("unknown") : s.module) + "]";
}

}  // namespace

void build_profile(Transaction& t, Resolver resolve, void* ctx) {
  Profile& p = t.cpu_profile;
  p.rows.clear();
  p.stacks.clear();
  if (t.cpu.samples.empty() || t.steps.size() < 2) {
    t.cpu.samples.clear();
    return;
  }
  // Each address once per transaction (the resolver caches per module; this saves the lookups).
  // Key: the address, with bit 0 set for return addresses (code addresses of two kinds never collide in
  // practice, and a wrong hit would only name a neighbour instruction's function).
  std::unordered_map<uintptr_t, Symbol> syms;
  auto sym_at = [&](const RawSample& s, uint32_t i) -> const Symbol& {
    bool ret = i != 0;
    uintptr_t key = s.ip[i] ^ (ret ? uintptr_t(1) << 63 : 0);
    auto it = syms.find(key);
    if (it == syms.end()) it = syms.emplace(key, resolve(s.ip[i], ret, ctx)).first;
    return it->second;
  };
  // row index -> (function, module) -> samples
  std::vector<std::pair<size_t, std::unordered_map<std::string, HotFunction>>> per_row;
  std::unordered_map<size_t, size_t> row_slot;
  std::unordered_map<std::string, uint32_t> folded;
  std::string line;
  for (const RawSample& s : t.cpu.samples) {
    if (s.frames == 0) continue;
    uint64_t off = s.mono_ns > t.start_mono_ns ? s.mono_ns - t.start_mono_ns : 0;
    size_t row = row_of(t.steps, off);
    // ip[0] is the interrupted instruction; the others are return addresses: look up the call.
    const Symbol* hot = nullptr;
    for (uint32_t i = 0; i < s.frames && !hot; ++i) {
      const Symbol& x = sym_at(s, i);
      if (!x.function.empty()) hot = &x;
    }
    if (!hot) hot = &sym_at(s, 0);
    auto [slot, fresh] = row_slot.emplace(row, per_row.size());
    if (fresh) per_row.emplace_back(row, std::unordered_map<std::string, HotFunction>{});
    auto& fns = per_row[slot->second].second;
    std::string key = hot->function + '\n' + hot->module;
    HotFunction& f = fns[key];
    if (f.samples == 0) {
      f.function = hot->function.empty() ? frame_name(*hot) : hot->function;
      f.module = hot->module;
    }
    ++f.samples;
    line.clear();
    for (uint32_t i = s.frames; i-- > 0;) {
      if (!line.empty()) line += ';';
      line += frame_name(sym_at(s, i));
    }
    ++folded[line];
  }
  std::sort(per_row.begin(), per_row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [row, fns] : per_row) {
    RowHot r;
    r.row = uint32_t(row);
    for (auto& [k, f] : fns) {
      r.samples += f.samples;
      r.top.push_back(std::move(f));
    }
    std::sort(r.top.begin(), r.top.end(), [](const HotFunction& a, const HotFunction& b) {
      return a.samples != b.samples ? a.samples > b.samples : a.function < b.function;
    });
    if (r.top.size() > kTopPerRow) r.top.resize(kTopPerRow);
    p.rows.push_back(std::move(r));
  }
  std::vector<FoldedStack> all;
  all.reserve(folded.size());
  for (auto& [k, n] : folded) all.push_back({k, n});
  std::sort(all.begin(), all.end(), [](const FoldedStack& a, const FoldedStack& b) {
    return a.samples != b.samples ? a.samples > b.samples : a.folded < b.folded;
  });
  if (all.size() > kMaxStacks) {
    uint32_t rest = 0;
    for (size_t i = kMaxStacks - 1; i < all.size(); ++i) rest += all[i].samples;
    all.resize(kMaxStacks - 1);
    all.push_back({"(other)", rest});
  }
  p.stacks = std::move(all);
  t.cpu.samples.clear();
  t.cpu.samples.shrink_to_fit();
}

}  // namespace txray::cpu
