#include "compare.h"
#include "frame_name.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "stats.h"

namespace txray::report {
namespace {

constexpr size_t kCap = 512;  // samples kept per member for the representative transaction

const char* const kParts[] = {"cpu", "sql", "fetch", "call", "waiting"};

int part_rank(const std::string& p) {
  for (int i = 0; i < 5; ++i)
    if (p == kParts[i]) return i;
  return 5;
}

struct Weighted {
  std::string id, key, fingerprint;
  int64_t weight = 0, count = 0;
};

// Splits total over the members in proportion to their weights, in whole ns: floor of each share, the
// remainder to the heaviest member. With no weight at all, one member `fallback` takes it.
void distribute(const std::string& part, int64_t total, std::vector<Weighted>& ws, const Member& fallback,
                std::vector<Member>& out) {
  if (total <= 0 && ws.empty()) return;
  __int128 all = 0;
  for (const auto& w : ws) all += std::max<int64_t>(w.weight, 0);
  if (all == 0) {
    for (const auto& w : ws)  // executions with no time still count as executions
      out.push_back({part, w.id, w.key, w.fingerprint, 0, w.count});
    if (total > 0) {
      out.push_back(fallback);
      out.back().ns = total;
    }
    return;
  }
  int64_t given = 0;
  size_t heaviest = 0;
  const size_t first = out.size();
  for (size_t i = 0; i < ws.size(); ++i) {
    const auto& w = ws[i];
    const int64_t share = static_cast<int64_t>(static_cast<__int128>(total) * std::max<int64_t>(w.weight, 0) / all);
    given += share;
    if (w.weight > ws[heaviest].weight) heaviest = i;
    out.push_back({part, w.id, w.key, w.fingerprint, share, w.count});
  }
  out[first + heaviest].ns += total - given;
}

// Groups rows and folded rows of one kind by statement (SQL) or target (calls).
std::vector<Weighted> group_rows(const CompareTx& t, const std::string& kind, bool fetch) {
  std::vector<Weighted> ws;
  std::unordered_map<std::string, size_t> index;
  auto add = [&](bool has_fp, int64_t fp, const std::string& text, int64_t ns, int64_t count) {
    std::string id, key, fpx;
    if (kind == "HTTP_CALL") {
      HostPath hp = split_url(text);
      id = key = hp.host + hp.path;
    } else if (has_fp && fp != 0) {
      fpx = hex16(fp);
      id = "f" + fpx;
      key = text;
    } else {
      id = "t" + text;
      key = text;
    }
    auto [it, added] = index.try_emplace(id, ws.size());
    if (added) ws.push_back({id, key, fpx, 0, 0});
    ws[it->second].weight += ns;
    ws[it->second].count += count;
  };
  for (const auto& r : t.rows)
    if (r.kind == kind) add(r.has_fingerprint, r.fingerprint, r.text, fetch ? r.fetch_ns : r.elapsed_ns, fetch ? 0 : 1);
  if (!fetch)
    for (const auto& f : t.folded)
      if (f.kind == kind) add(f.has_fingerprint, f.fingerprint, f.text, f.elapsed_ns, f.count);
  if (fetch)  // members with no fetch time at all are left out
    ws.erase(std::remove_if(ws.begin(), ws.end(), [](const Weighted& w) { return w.weight <= 0; }), ws.end());
  return ws;
}

double mean(double sum, int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; }

}  // namespace

std::vector<Member> decompose(const CompareTx& t) {
  std::vector<Member> out;
  const TimeSplit s = split_time(t.totals, t.totals.call_ns > 0 ? own_cpu_in_calls(t.rows) : 0);

  if (s.cpu > 0 && !t.hot.empty()) {
    // Split by the transaction's CPU samples: each function gets the share of its samples (exact in sum).
    std::vector<Weighted> hot;
    for (const auto& h : t.hot)
      hot.push_back({"h" + h.function + '\x1f' + h.module,
                     h.module.empty() ? names::short_frame_name(h.function) : names::short_frame_name(h.function) + " (" + h.module + ")", "", h.samples, 0});
    distribute("cpu", s.cpu, hot, {"cpu", "own", "own code", "", 0, 0}, out);
  } else if (s.cpu > 0) {
    out.push_back({"cpu", "own", "own code", "", s.cpu, 0});
  }

  auto sql = group_rows(t, "SQL", false);
  distribute("sql", s.sql, sql, {"sql", "?", "(SQL time with no SQL step)", "", 0, 0}, out);
  auto fetch = group_rows(t, "SQL", true);
  distribute("fetch", s.fetch, fetch, {"fetch", "?", "(fetch time with no SQL step)", "", 0, 0}, out);
  auto calls = group_rows(t, "HTTP_CALL", false);
  distribute("call", s.call, calls, {"call", "?", "(call time with no HTTP_CALL step)", "", 0, 0}, out);

  // Waiting: the connection steps at the top level, in this order, then the rest.
  int64_t left = s.wait;
  static const std::pair<const char*, const char*> kConnect[] = {
      {"SOCKET", "connect (SOCKET)"}, {"DNS", "DNS"}, {"DB_CONNECT", "DB_CONNECT"}};
  for (const auto& [kind, label] : kConnect) {
    int64_t ns = 0, count = 0;
    for (const auto& r : t.rows)
      if (r.parent == -1 && r.kind == kind) ns += std::max<int64_t>(r.elapsed_ns, 0), count++;
    if (count == 0) continue;
    const int64_t take = std::min(ns, left);
    left -= take;
    out.push_back({"waiting", kind, label, "", take, count});
  }
  if (left > 0) out.push_back({"waiting", "other", "other (socket and file I/O, locks, sleeps, scheduler)", "", left, 0});
  return out;
}

void CompareSide::Reservoir::add(const Sample& x) {
  ++seen;
  if (s.size() < kCap) {
    s.push_back(x);
    return;
  }
  // Deterministic reservoir sampling: a hash of the running count in place of a random number.
  uint64_t h = static_cast<uint64_t>(seen) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 31;
  const uint64_t j = h % static_cast<uint64_t>(seen);
  if (j < kCap) s[j] = x;
}

CompareExample CompareSide::Reservoir::nearest(double m) const {
  CompareExample e;
  double best = 0;
  for (const auto& x : s) {
    const double d = std::fabs(static_cast<double>(x.ns) - m);
    if (e.id == 0 || d < best || (d == best && x.id < e.id)) {
      best = d;
      e = {x.id, x.txid, x.elapsed, x.ns};
    }
  }
  return e;
}

void CompareSide::add(const CompareTx& t) {
  const int64_t elapsed = std::max<int64_t>(t.totals.elapsed_ns, 0);
  ++n_;
  total_ns_ += elapsed;
  typical_.add({elapsed, t.id, t.txid, elapsed});
  // Members of this transaction, merged by id (a statement can appear in sql and fetch: different parts).
  std::vector<Member> ms = decompose(t);
  for (const auto& m : ms) {
    Acc& a = members_[m.part + '\x1f' + m.id];
    if (a.part.empty()) a.part = m.part, a.key = m.key, a.fingerprint = m.fingerprint;
    a.ns += m.ns;
    a.count += m.count;
    a.transactions++;
    a.examples.add({m.ns, t.id, t.txid, elapsed});
  }
  for (const auto& r : t.rows) kinds_[r.kind]++;
  for (const auto& f : t.folded) kinds_[f.kind] += f.count;
  if (!t.error.empty()) {
    Err& e = errors_[t.error];
    if (e.count++ == 0) e.example = {t.id, t.txid, elapsed, elapsed};
  }
}

Compare compare_sides(const CompareSide& base, const CompareSide& cur, int top) {
  Compare c;
  const int64_t nb = base.n_, nc = cur.n_;
  c.difference_ns = mean(static_cast<double>(cur.total_ns_), nc) - mean(static_cast<double>(base.total_ns_), nb);
  c.base_typical = base.typical_.nearest(mean(static_cast<double>(base.total_ns_), nb));
  c.cur_typical = cur.typical_.nearest(mean(static_cast<double>(cur.total_ns_), nc));

  for (const char* p : kParts) {
    ComparePart t;
    t.part = p;
    c.by_part.push_back(t);
  }
  std::set<std::string> ids;
  for (const auto& [id, a] : base.members_) ids.insert(id);
  for (const auto& [id, a] : cur.members_) ids.insert(id);
  std::vector<ComparePart> parts;
  for (const auto& id : ids) {
    auto b = base.members_.find(id), k = cur.members_.find(id);
    const CompareSide::Acc* ab = b == base.members_.end() ? nullptr : &b->second;
    const CompareSide::Acc* ac = k == cur.members_.end() ? nullptr : &k->second;
    const CompareSide::Acc& any = ac ? *ac : *ab;
    ComparePart p;
    p.part = any.part;
    p.key = any.key;
    p.fingerprint = any.fingerprint;
    p.base_ns = ab ? mean(static_cast<double>(ab->ns), nb) : 0;
    p.cur_ns = ac ? mean(static_cast<double>(ac->ns), nc) : 0;
    p.contribution_ns = p.cur_ns - p.base_ns;
    const int64_t count_b = ab ? ab->count : 0, count_c = ac ? ac->count : 0;
    p.counted = count_b + count_c > 0;
    if (p.counted) {
      p.base_per_tx = mean(static_cast<double>(count_b), nb);
      p.cur_per_tx = mean(static_cast<double>(count_c), nc);
      p.base_per_call_ns = count_b ? static_cast<double>(ab->ns) / static_cast<double>(count_b) : 0;
      p.cur_per_call_ns = count_c ? static_cast<double>(ac->ns) / static_cast<double>(count_c) : 0;
      // n·t: the count effect at the baseline's time per call, the rest is the time effect.
      p.count_effect_ns = (p.cur_per_tx - p.base_per_tx) * p.base_per_call_ns;
      p.time_effect_ns = p.contribution_ns - p.count_effect_ns;
    }
    if (ab) p.base_example = ab->examples.nearest(mean(static_cast<double>(ab->ns), ab->transactions));
    if (ac) p.cur_example = ac->examples.nearest(mean(static_cast<double>(ac->ns), ac->transactions));
    auto& tp = c.by_part[static_cast<size_t>(std::min(part_rank(p.part), 4))];
    tp.base_ns += p.base_ns;
    tp.cur_ns += p.cur_ns;
    tp.contribution_ns += p.contribution_ns;
    // What appeared or vanished: statements and call targets run on one side only.
    if ((p.part == "sql" || p.part == "call") && (!ab || !ac)) {
      Change ch;
      ch.what = p.part;
      ch.key = p.key;
      ch.fingerprint = p.fingerprint;
      ch.count = ac ? ac->count : ab->count;
      ch.transactions = ac ? ac->transactions : ab->transactions;
      ch.example = ac ? p.cur_example : p.base_example;
      (ac ? c.appeared : c.vanished).push_back(std::move(ch));
    }
    parts.push_back(std::move(p));
  }
  // The part totals' examples: the transaction nearest each side's mean.
  for (auto& tp : c.by_part) tp.base_example = c.base_typical, tp.cur_example = c.cur_typical;

  for (const auto& [text, e] : cur.errors_)
    if (!base.errors_.count(text)) c.appeared.push_back({"error", text, "", e.count, e.count, e.example});
  for (const auto& [text, e] : base.errors_)
    if (!cur.errors_.count(text)) c.vanished.push_back({"error", text, "", e.count, e.count, e.example});
  auto by_count = [](const Change& a, const Change& b) {
    if (a.what != b.what) return a.what > b.what;  // sql, error, call
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  };
  std::sort(c.appeared.begin(), c.appeared.end(), by_count);
  std::sort(c.vanished.begin(), c.vanished.end(), by_count);

  auto rank = [](const ComparePart& a, const ComparePart& b) {
    const double x = std::fabs(a.contribution_ns), y = std::fabs(b.contribution_ns);
    if (x != y) return x > y;
    if (a.part != b.part) return part_rank(a.part) < part_rank(b.part);
    return a.key < b.key;
  };
  std::sort(parts.begin(), parts.end(), rank);
  c.members = static_cast<int64_t>(parts.size());
  const size_t keep = std::min(parts.size(), static_cast<size_t>(std::max(top, 1)));
  std::vector<ComparePart> others(5);
  for (size_t i = keep; i < parts.size(); ++i) {
    auto& o = others[static_cast<size_t>(std::min(part_rank(parts[i].part), 4))];
    o.part = parts[i].part;
    o.base_ns += parts[i].base_ns;
    o.cur_ns += parts[i].cur_ns;
    o.contribution_ns += parts[i].contribution_ns;
    o.folded_members++;
  }
  parts.resize(keep);
  c.parts = std::move(parts);
  std::vector<ComparePart> rest;
  for (auto& o : others)
    if (o.folded_members) {
      o.key = "(" + std::to_string(o.folded_members) + " others)";
      rest.push_back(std::move(o));
    }
  std::sort(rest.begin(), rest.end(), rank);
  for (auto& o : rest) c.parts.push_back(std::move(o));

  std::set<std::string> kinds;
  for (const auto& [k, v] : base.kinds_) kinds.insert(k);
  for (const auto& [k, v] : cur.kinds_) kinds.insert(k);
  for (const auto& k : kinds) {
    auto b = base.kinds_.find(k), u = cur.kinds_.find(k);
    c.kinds.push_back({k, mean(b == base.kinds_.end() ? 0.0 : static_cast<double>(b->second), nb),
                       mean(u == cur.kinds_.end() ? 0.0 : static_cast<double>(u->second), nc)});
  }
  std::sort(c.kinds.begin(), c.kinds.end(), [](const KindCount& a, const KindCount& b) {
    const double x = std::max(a.base_per_tx, a.cur_per_tx), y = std::max(b.base_per_tx, b.cur_per_tx);
    return x != y ? x > y : a.kind < b.kind;
  });
  return c;
}

}  // namespace txray::report
