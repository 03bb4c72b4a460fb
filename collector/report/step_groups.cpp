#include "step_groups.h"

#include <algorithm>
#include <unordered_map>

#include "stats.h"

namespace txray::report {
namespace {

// What a step is grouped as: SQL by fingerprint, calls by target, cache commands (Redis, memcached)
// by command + key pattern (the agent's fingerprint of "GET item:?").
enum Cls { kSql = 0, kCall = 1, kCache = 2, kClasses = 3 };

Cls cls_of(std::string_view kind) {
  if (kind == "SQL") return kSql;
  if (kind == "HTTP_CALL") return kCall;
  return kCache;  // REDIS, MEMCACHED: the queries below select no other kind
}

const char* kKinds = "('SQL', 'HTTP_CALL', 'REDIS', 'MEMCACHED')";

// One group being accumulated (an SQL fingerprint, a call target or a cache command pattern).
struct Acc {
  CallGroup out;
  int64_t text_id = -1;  // example text
  std::vector<int64_t> durations;
};

struct Repeat {
  Cls cls = kSql;
  int group = 0;
  int64_t transactions = 0, executions = 0, max_per_tx = 0, total_ns = 0;
  struct Hit {
    int64_t tx_id, count, ns;
  };
  std::vector<Hit> hits;
};

// A step or a folded summary of one transaction, as the pass sees it.
struct Event {
  int64_t tx_id;
  Cls cls;
  bool memcached;  // cache commands: memcached, not Redis
  bool has_fp;
  int64_t fp, text_id;
  int64_t count, ns, rows, errors, status;  // status: -1 = none
  bool folded;
  bool miss;  // cache commands: a read that found nothing (memcached "miss", a Redis nil reply)
};

class Pass {
 public:
  Pass(const Db& db, const Options& opt, const Selection& sel)
      : db_(db), opt_(opt), sel_(sel), text_(db, "SELECT text FROM texts WHERE id = ?") {}

  void run(Report& r);

 private:
  const std::string& text_of(int64_t text_id);
  int sql_group(const Event& e);
  int call_group(const Event& e);
  int cache_group(const Event& e);
  std::vector<Acc>& accs(Cls c) { return c == kSql ? sql_ : c == kCall ? calls_ : cache_; }
  void add(const Event& e);
  void flush();
  void finish(std::vector<Acc>& accs, std::vector<CallGroup>& out, int64_t& groups);  // rank, cut, percentiles

  const Db& db_;
  const Options& opt_;
  const Selection& sel_;
  Stmt text_;
  std::unordered_map<int64_t, std::string> texts_;

  std::vector<Acc> sql_, calls_, cache_;
  std::unordered_map<int64_t, int> sql_by_fp_, sql_by_text_, call_by_text_;
  std::unordered_map<std::string, int> cache_by_key_;
  std::unordered_map<std::string, int> call_by_target_;

  int64_t cur_tx_ = -1;
  std::unordered_map<int64_t, std::pair<int64_t, int64_t>> cur_;  // (group*kClasses + cls) → (count, ns)
  std::unordered_map<int64_t, Repeat> repeats_;
};

const std::string& Pass::text_of(int64_t text_id) {
  auto it = texts_.find(text_id);
  if (it != texts_.end()) return it->second;
  std::string t;
  if (text_id >= 0) {
    text_.reset();
    text_.bind(1, text_id);
    if (text_.step()) t.assign(text_.text(0));
  }
  return texts_.emplace(text_id, std::move(t)).first->second;
}

int Pass::sql_group(const Event& e) {
  auto& index = e.has_fp ? sql_by_fp_ : sql_by_text_;
  auto [it, added] = index.try_emplace(e.has_fp ? e.fp : e.text_id, static_cast<int>(sql_.size()));
  if (added) {
    sql_.emplace_back();
    sql_.back().out.key = e.has_fp ? hex16(e.fp) : "text#" + std::to_string(e.text_id);
    sql_.back().text_id = e.text_id;
  }
  return it->second;
}

int Pass::call_group(const Event& e) {
  auto cached = call_by_text_.find(e.text_id);
  if (cached != call_by_text_.end()) return cached->second;
  HostPath hp = split_url(text_of(e.text_id));
  auto [it, added] = call_by_target_.try_emplace(hp.host + hp.path, static_cast<int>(calls_.size()));
  if (added) {
    calls_.emplace_back();
    auto& g = calls_.back();
    g.out.key = hp.host + hp.path;
    g.out.host = hp.host;
    g.out.path = hp.path;
    g.text_id = e.text_id;
  }
  call_by_text_.emplace(e.text_id, it->second);
  return it->second;
}

// Cache commands group by system and pattern: the agent's fingerprint of the masked pattern when it
// sent one (so rows kept raw group as masked ones do), else the pattern's text.
int Pass::cache_group(const Event& e) {
  std::string key = e.memcached ? "memcached:" : "redis:";
  key += e.has_fp ? hex16(e.fp) : "text#" + std::to_string(e.text_id);
  auto [it, added] = cache_by_key_.try_emplace(key, static_cast<int>(cache_.size()));
  if (added) {
    cache_.emplace_back();
    auto& g = cache_.back();
    g.out.key = std::move(key);
    g.out.host = e.memcached ? "memcached" : "redis";
    g.text_id = e.text_id;
  }
  return it->second;
}

void Pass::add(const Event& e) {
  if (e.tx_id != cur_tx_) {
    flush();
    cur_tx_ = e.tx_id;
  }
  const int g = e.cls == kCall ? call_group(e) : e.cls == kSql ? sql_group(e) : cache_group(e);
  Acc& a = accs(e.cls)[static_cast<size_t>(g)];
  a.out.calls += e.count;
  a.out.total_ns += e.ns;
  if (e.rows > 0) a.out.rows += e.rows;
  a.out.errors += e.errors;
  if (e.miss) a.out.misses += e.count;
  if (e.folded) a.out.summarized += e.count;
  else a.durations.push_back(e.ns);
  if (e.cls == kCall && !e.folded) a.out.statuses[static_cast<int>(e.status < 0 ? 0 : e.status)]++;
  auto& c = cur_[static_cast<int64_t>(g) * kClasses + e.cls];
  c.first += e.count;
  c.second += e.ns;
}

void Pass::flush() {
  for (const auto& [key, c] : cur_) {
    const Cls cls = static_cast<Cls>(key % kClasses);
    const int g = static_cast<int>(key / kClasses);
    accs(cls)[static_cast<size_t>(g)].out.transactions++;
    if (c.first < opt_.repeat_threshold) continue;
    Repeat& rp = repeats_[key];
    rp.cls = cls;
    rp.group = g;
    rp.transactions++;
    rp.executions += c.first;
    rp.max_per_tx = std::max(rp.max_per_tx, c.first);
    rp.total_ns += c.second;
    rp.hits.push_back({cur_tx_, c.first, c.second});
  }
  cur_.clear();
}

void Pass::finish(std::vector<Acc>& accs, std::vector<CallGroup>& out, int64_t& groups) {
  int64_t all = 0;
  for (const auto& a : accs) all += a.out.total_ns;
  std::vector<size_t> order(accs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (accs[x].out.total_ns != accs[y].out.total_ns) return accs[x].out.total_ns > accs[y].out.total_ns;
    return accs[x].out.key < accs[y].out.key;
  });
  groups = static_cast<int64_t>(accs.size());
  order.resize(std::min(order.size(), static_cast<size_t>(opt_.top)));
  for (size_t i : order) {
    Acc& a = accs[i];
    Percentiles p = percentiles(a.durations);
    a.out.p95_ns = p.p95;
    a.out.max_ns = p.max;
    a.out.avg_ns = a.out.calls ? a.out.total_ns / a.out.calls : 0;
    a.out.share = all ? static_cast<double>(a.out.total_ns) / static_cast<double>(all) : 0;
    a.out.example = text_of(a.text_id);
    out.push_back(a.out);
  }
}

void Pass::run(Report& r) {
  if (sel_.txs.empty()) return;
  const int64_t lo = sel_.txs.front().id, hi = sel_.txs.back().id;
  std::vector<bool> chosen(static_cast<size_t>(hi - lo + 1));
  for (const auto& t : sel_.txs) chosen[static_cast<size_t>(t.id - lo)] = true;
  auto selected = [&](int64_t id) { return id >= lo && id <= hi && chosen[static_cast<size_t>(id - lo)]; };

  // Folded calls, sorted by transaction, merged into the step stream below.
  std::vector<Event> folded;
  {
    // Misses are not known of folded cache commands (a summary has no reply): they count in calls only.
    Stmt st(db_, std::string("SELECT tx_id, kind, fingerprint, text_id, count, elapsed_ns, rows, errors "
                             "FROM step_summaries WHERE kind IN ") + kKinds + " AND tx_id BETWEEN ? AND ?");
    st.bind(1, lo);
    st.bind(2, hi);
    while (st.step()) {
      if (!selected(st.i64(0))) continue;
      const std::string_view kind = st.text(1);
      folded.push_back({st.i64(0), cls_of(kind), kind == "MEMCACHED", !st.null(2) && st.i64(2) != 0, st.i64(2),
                        st.null(3) ? -1 : st.i64(3), st.i64(4), st.i64(5), st.null(6) ? 0 : st.i64(6),
                        st.i64(7), -1, true, false});
    }
    std::stable_sort(folded.begin(), folded.end(), [](auto& a, auto& b) { return a.tx_id < b.tx_id; });
  }
  size_t next_folded = 0;
  auto fold_upto = [&](int64_t tx_id) {  // folded events of transactions <= tx_id
    while (next_folded < folded.size() && folded[next_folded].tx_id <= tx_id) add(folded[next_folded++]);
  };
  auto step_event = [&](Stmt& st) {
    const std::string_view kind = st.text(1);
    const Cls cls = cls_of(kind);
    const int64_t status = st.null(6) ? -1 : st.i64(6);
    const bool err = st.i64(7) != 0 || (cls == kCall && status >= 500);
    return Event{st.i64(0), cls, kind == "MEMCACHED", !st.null(2) && st.i64(2) != 0, st.i64(2),
                 st.null(3) ? -1 : st.i64(3), 1, st.i64(4), st.null(5) ? 0 : st.i64(5), err ? 1 : 0, status,
                 false, st.i64(8) != 0};
  };
  // A miss, as the cache parsers write it: memcached's result attribute, a Redis nil reply to a command
  // that reads (a nil from a write such as SET NX is no miss, but it does not come from GET-like commands).
  const char* cols =
      "SELECT tx_id, kind, fingerprint, text_id, elapsed_ns, rows, status, "
      "error IS NOT NULL AND error <> '', "
      "kind IN ('REDIS', 'MEMCACHED') AND attributes IS NOT NULL AND json_valid(attributes) AND "
      "(json_extract(attributes, '$.result') = 'miss' OR (json_extract(attributes, '$.reply') = 'nil' AND "
      "upper(coalesce(json_extract(attributes, '$.command'), '')) IN ('GET', 'GETEX', 'GETDEL', 'HGET', 'MGET', "
      "'HMGET', 'LINDEX', 'ZSCORE', 'GETRANGE', 'LPOP', 'RPOP', 'SPOP', 'SRANDMEMBER'))) FROM steps ";
  // Few transactions spread over a large id range: look each one up. Otherwise scan the id range
  // once (steps are clustered by tx_id) and skip the transactions not selected.
  const bool point = sel_.txs.size() < 2000 || sel_.txs.size() * 16 < static_cast<size_t>(hi - lo + 1);
  if (point) {
    Stmt st(db_, std::string(cols) + "WHERE tx_id = ? AND kind IN " + kKinds + " ORDER BY no");
    for (const auto& t : sel_.txs) {
      st.reset();
      st.bind(1, t.id);
      while (st.step()) {
        Event e = step_event(st);
        fold_upto(e.tx_id - 1);
        add(e);
      }
    }
  } else {
    Stmt st(db_, std::string(cols) + "WHERE tx_id BETWEEN ? AND ? AND kind IN " + kKinds + " ORDER BY tx_id, no");
    st.bind(1, lo);
    st.bind(2, hi);
    while (st.step()) {
      const int64_t id = st.i64(0);
      if (!selected(id)) continue;
      fold_upto(id - 1);
      add(step_event(st));
    }
  }
  fold_upto(hi);
  flush();

  finish(sql_, r.sql, r.sql_groups);
  finish(calls_, r.calls, r.call_groups);
  finish(cache_, r.cache, r.cache_groups);

  // N+1 patterns, the most time first.
  std::vector<Repeat*> reps;
  for (auto& [k, rp] : repeats_) reps.push_back(&rp);
  std::sort(reps.begin(), reps.end(), [](const Repeat* a, const Repeat* b) {
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns;
    if (a->cls != b->cls) return a->cls < b->cls;
    return a->group < b->group;
  });
  r.repeated_groups = static_cast<int64_t>(reps.size());
  if (reps.size() > static_cast<size_t>(opt_.top)) reps.resize(static_cast<size_t>(opt_.top));
  Stmt txid(db_, "SELECT txid FROM transactions WHERE id = ?");
  for (Repeat* rp : reps) {
    RepeatRow row;
    const Acc& a = accs(rp->cls)[static_cast<size_t>(rp->group)];
    row.kind = rp->cls == kSql ? "SQL" : rp->cls == kCall ? "HTTP_CALL" : a.out.host == "memcached" ? "MEMCACHED" : "REDIS";
    row.key = a.out.key;
    row.example = text_of(a.text_id);
    row.transactions = rp->transactions;
    row.executions = rp->executions;
    row.max_per_tx = rp->max_per_tx;
    row.total_ns = rp->total_ns;
    auto by_count = [](const Repeat::Hit& x, const Repeat::Hit& y) {
      if (x.count != y.count) return x.count > y.count;
      if (x.ns != y.ns) return x.ns > y.ns;
      return x.tx_id < y.tx_id;
    };
    const size_t n = std::min(rp->hits.size(), static_cast<size_t>(opt_.top));
    std::partial_sort(rp->hits.begin(), rp->hits.begin() + static_cast<long>(n), rp->hits.end(), by_count);
    for (size_t i = 0; i < n; ++i) {
      const auto& h = rp->hits[i];
      const TxRec* t = sel_.find(h.tx_id);
      txid.reset();
      txid.bind(1, h.tx_id);
      const int64_t tx = txid.step() ? txid.i64(0) : 0;
      row.worst.push_back({h.tx_id, tx, t ? sel_.groups[static_cast<size_t>(t->group)].name : "", h.count,
                           t ? t->elapsed : 0});
    }
    r.repeated.push_back(std::move(row));
  }
}

}  // namespace

void compute_step_groups(const Db& db, const Options& opt, const Selection& sel, Report& r) {
  Pass(db, opt, sel).run(r);
}

}  // namespace txray::report
