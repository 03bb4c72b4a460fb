#include "compute.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "breakdown.h"
#include "compare.h"
#include "selection.h"
#include "shed.h"
#include "sqlite_util.h"
#include "stats.h"
#include "step_groups.h"
#include "drops.h"
#include "agent_cost.h"
#include "unattributed.h"

namespace txray::report {
namespace {

// Timing columns of a transaction's rows: enough for own_cpu_in_calls().
std::vector<StepRow> timing_rows(Stmt& st, int64_t tx_id) {
  std::vector<StepRow> rows;
  st.reset();
  st.bind(1, tx_id);
  while (st.step()) {
    StepRow r;
    r.parent = static_cast<int>(st.i64(0));
    r.kind = st.text(1);
    r.start_ns = st.i64(2);
    r.gap_ns = st.i64(3);
    r.cpu_ns = st.i64(4);
    r.elapsed_ns = st.i64(5);
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<int64_t> stored_elapsed(const Selection& sel) {
  std::vector<int64_t> v;
  v.reserve(sel.txs.size());
  for (const auto& t : sel.txs) v.push_back(t.elapsed);
  return v;
}

void compute_summary(const Db& db, const Selection& sel, Summary& s) {
  s.transactions = static_cast<int64_t>(sel.txs.size());
  if (sel.txs.empty()) return;
  std::vector<int64_t> elapsed;
  elapsed.reserve(sel.txs.size());
  s.first_start_unix_ns = sel.txs.front().start;
  s.last_end_unix_ns = sel.txs.front().end;
  int64_t total = 0;
  Stmt rows(db, "SELECT parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns FROM steps WHERE tx_id = ?");
  for (const auto& t : sel.txs) {
    elapsed.push_back(t.elapsed);
    total += t.elapsed;
    s.errors += t.error;
    s.cpu_total_ns += t.cpu;
    s.first_start_unix_ns = std::min(s.first_start_unix_ns, t.start);
    s.last_end_unix_ns = std::max(s.last_end_unix_ns, t.end);
    // Only transactions with outbound calls need their rows (own CPU inside the calls).
    const int64_t call_cpu = t.call > 0 ? own_cpu_in_calls(timing_rows(rows, t.id)) : 0;
    add_shares({t.elapsed, t.cpu, t.sql, t.fetch, t.call}, call_cpu, s.shares);
  }
  s.avg_ns = total / s.transactions;
  s.pct = percentiles(elapsed);
  s.error_rate = static_cast<double>(s.errors) / static_cast<double>(s.transactions);
  const int64_t span = s.last_end_unix_ns - s.first_start_unix_ns;
  s.throughput_per_s = span > 0 ? static_cast<double>(s.transactions) * 1e9 / static_cast<double>(span) : 0;
  std::set<std::string> apps;
  for (const auto& g : sel.groups) apps.insert(g.app);
  s.apps.assign(apps.begin(), apps.end());
}

void compute_names(const Selection& sel, const ShedSet& shed, int top, Report& r) {
  std::vector<NameRow> rows(sel.groups.size());
  std::vector<std::vector<int64_t>> durations(sel.groups.size());
  std::vector<std::vector<std::pair<int64_t, int64_t>>> shed_values(sel.groups.size());
  int64_t all = 0;
  for (const auto& t : sel.txs) {
    auto& n = rows[static_cast<size_t>(t.group)];
    n.count++;
    n.total_ns += t.elapsed;
    n.errors += t.error;
    durations[static_cast<size_t>(t.group)].push_back(t.elapsed);
    all += t.elapsed;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].app = sel.groups[i].app;
    rows[i].name = sel.groups[i].name;
  }
  // Shed and sampled-out transactions count in their name's row (a name with none stored gets one).
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) index[{rows[i].app, rows[i].name}] = i;
  for (const auto& g : shed.groups) {
    auto [it, added] = index.try_emplace({g.app, g.name}, rows.size());
    if (added) {
      rows.push_back({});
      rows.back().app = g.app;
      rows.back().name = g.name;
      durations.emplace_back();
      shed_values.emplace_back();
    }
    NameRow& n = rows[it->second];
    n.count += g.count;
    n.shed += g.count;
    n.total_ns += g.elapsed_ns;
    all += g.elapsed_ns;
    auto& v = shed_values[it->second];
    v.insert(v.end(), g.values.begin(), g.values.end());
  }
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rows[a].total_ns != rows[b].total_ns) return rows[a].total_ns > rows[b].total_ns;
    return std::tie(rows[a].app, rows[a].name) < std::tie(rows[b].app, rows[b].name);
  });
  r.name_groups = static_cast<int64_t>(rows.size());
  order.resize(std::min(order.size(), static_cast<size_t>(top)));
  for (size_t i : order) {
    NameRow n = rows[i];
    Percentiles p = merged_percentiles(durations[i], shed_values[i]);
    n.p95_ns = p.p95;
    n.max_ns = p.max;
    n.avg_ns = n.total_ns / n.count;
    n.share = all ? static_cast<double>(n.total_ns) / static_cast<double>(all) : 0;
    r.names.push_back(std::move(n));
  }
}

// The slowest transactions' hottest functions, from their rows' CPU samples (cpu_hot, cpu_tx), when the
// store has them.
void slowest_hot_functions(const Db& db, Report& r) {
  Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('cpu_hot', 'cpu_tx')");
  if (!has.step() || has.i64(0) != 2) return;
  Stmt total(db, "SELECT samples FROM cpu_tx WHERE tx_id = ?");
  Stmt hot(db,
           "SELECT function, module, sum(samples) AS n FROM cpu_hot WHERE tx_id = ? GROUP BY function, module "
           "ORDER BY n DESC, function LIMIT 3");
  for (auto& s : r.slowest) {
    total.reset();
    total.bind(1, s.id);
    if (!total.step() || total.i64(0) <= 0) continue;
    const int64_t all = total.i64(0);
    hot.reset();
    hot.bind(1, s.id);
    while (hot.step()) {
      const int64_t n = hot.i64(2);
      if (!s.hot.empty() && n * 100 < all) break;
      std::string module(hot.text(1));
      s.hot += (s.hot.empty() ? "" : ", ") + std::string(hot.text(0)) + (module.empty() ? "" : " (" + module + ")") +
               " " + std::to_string((n * 100 + all / 2) / all) + "%";
    }
  }
}

// "function (module+0x1a2b)", or "module+0x1a2b" when the function is unknown (as `txray show` prints it).
std::string frame_text(std::string_view function, std::string_view module, int64_t offset) {
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(offset));
  if (function.empty()) return std::string(module) + off;
  return std::string(function) + " (" + std::string(module) + off + ")";
}

void compute_slowest(const Db& db, const Selection& sel, int top, Report& r) {
  std::vector<const TxRec*> order;
  order.reserve(sel.txs.size());
  for (const auto& t : sel.txs) order.push_back(&t);
  const size_t n = std::min(order.size(), static_cast<size_t>(top));
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(n), order.end(),
                    [](const TxRec* a, const TxRec* b) {
                      return a->elapsed != b->elapsed ? a->elapsed > b->elapsed : a->id < b->id;
                    });
  Stmt head(db, "SELECT txid, status, error FROM transactions WHERE id = ?");
  Stmt steps(db,
             "SELECT s.no, s.parent, s.kind, s.start_offset_ns, s.gap_ns, s.cpu_ns, s.elapsed_ns, s.fetch_ns, "
             "s.ref_id, s.fingerprint, s.text_id, t.text, s.attributes "
             "FROM steps s LEFT JOIN texts t ON t.id = s.text_id WHERE s.tx_id = ? ORDER BY s.no");
  Stmt folded(db,
              "SELECT f.kind, f.fingerprint, t.text, f.count, f.elapsed_ns "
              "FROM step_summaries f LEFT JOIN texts t ON t.id = f.text_id WHERE f.tx_id = ?");
  // The responsible step's stack (a store written before stacks has no step_frames table).
  Stmt has_frames(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'step_frames'");
  has_frames.step();
  std::unique_ptr<Stmt> frames;
  if (has_frames.i64(0) > 0)
    frames = std::make_unique<Stmt>(db, "SELECT function, module, offset FROM step_frames WHERE tx_id = ? AND step_no = ?"
                                        " ORDER BY depth LIMIT " + std::to_string(kStackFramesShown));
  for (size_t i = 0; i < n; ++i) {
    const TxRec& t = *order[i];
    SlowTx s;
    s.id = t.id;
    s.app = sel.groups[static_cast<size_t>(t.group)].app;
    s.name = sel.groups[static_cast<size_t>(t.group)].name;
    s.start_unix_ns = t.start;
    s.elapsed_ns = t.elapsed;
    s.cpu_ns = t.cpu;
    s.sql_ns = t.sql;
    s.fetch_ns = t.fetch;
    s.call_ns = t.call;
    head.reset();
    head.bind(1, t.id);
    if (head.step()) {
      s.txid = head.i64(0);
      s.status = static_cast<int>(head.i64(1));
      s.error = head.text(2);
    }
    std::vector<StepRow> rows;
    steps.reset();
    steps.bind(1, t.id);
    while (steps.step()) {
      StepRow row;
      row.no = static_cast<int>(steps.i64(0));
      row.parent = static_cast<int>(steps.i64(1));
      row.kind = steps.text(2);
      row.start_ns = steps.i64(3);
      row.gap_ns = steps.i64(4);
      row.cpu_ns = steps.i64(5);
      row.elapsed_ns = steps.i64(6);
      row.fetch_ns = steps.null(7) ? 0 : steps.i64(7);
      row.ref_id = steps.null(8) ? 0 : steps.i64(8);
      row.has_fingerprint = !steps.null(9) && steps.i64(9) != 0;
      row.fingerprint = steps.i64(9);
      row.text_id = steps.null(10) ? -1 : steps.i64(10);
      row.text = steps.text(11);
      row.attributes = steps.text(12);
      rows.push_back(std::move(row));
    }
    std::vector<FoldedRow> folds;
    folded.reset();
    folded.bind(1, t.id);
    while (folded.step())
      folds.push_back({std::string(folded.text(0)), !folded.null(1) && folded.i64(1) != 0, folded.i64(1),
                       std::string(folded.text(2)), folded.i64(3), folded.i64(4)});
    Dominant d = dominant_cost({t.elapsed, t.cpu, t.sql, t.fetch, t.call}, rows, folds);
    s.dominant = d.cost;
    s.dominant_ns = d.ns;
    s.step_no = d.step_no;
    s.step = d.step;
    if (frames && s.step_no >= 0) {
      frames->reset();
      frames->bind(1, t.id);
      frames->bind(2, static_cast<int64_t>(s.step_no));
      while (frames->step())
        s.step_stack.push_back(frame_text(frames->text(0), frames->text(1), frames->i64(2)));
    }
    r.slowest.push_back(std::move(s));
  }
  slowest_hot_functions(db, r);
}

// Log-scale scatter of response time over end time, folded into cells (a report may hold millions of
// transactions; an SVG cannot).
void compute_scatter(const Selection& sel, Scatter& sc) {
  if (sel.txs.empty()) return;
  sc.cols = 200;
  sc.rows = 80;
  int64_t x0 = sel.txs.front().end, x1 = x0, lo = sel.txs.front().elapsed, hi = lo;
  for (const auto& t : sel.txs) {
    x0 = std::min(x0, t.end), x1 = std::max(x1, t.end);
    lo = std::min(lo, t.elapsed), hi = std::max(hi, t.elapsed);
  }
  if (x1 == x0) x1 = x0 + 1;
  auto pow10_below = [](int64_t v) { int64_t p = 1000; while (p * 10 <= v) p *= 10; return p; };
  sc.x0_unix_ns = x0, sc.x1_unix_ns = x1;
  sc.y0_ns = pow10_below(std::max<int64_t>(lo, 1000));
  sc.y1_ns = pow10_below(std::max<int64_t>(hi, 1000)) * 10;
  const double ly0 = std::log10(static_cast<double>(sc.y0_ns)), ly1 = std::log10(static_cast<double>(sc.y1_ns));
  std::vector<ScatterCell> grid(static_cast<size_t>(sc.cols * sc.rows));
  for (const auto& t : sel.txs) {
    int x = static_cast<int>(static_cast<double>(t.end - x0) / static_cast<double>(x1 - x0) * sc.cols);
    double ly = std::log10(static_cast<double>(std::max(t.elapsed, sc.y0_ns)));
    int y = static_cast<int>((ly - ly0) / (ly1 - ly0) * sc.rows);
    x = std::clamp(x, 0, sc.cols - 1);
    y = std::clamp(y, 0, sc.rows - 1);
    auto& c = grid[static_cast<size_t>(y * sc.cols + x)];
    c.x = x, c.y = y;
    c.count++;
    c.errors += t.error;
  }
  for (const auto& c : grid)
    if (c.count) sc.cells.push_back(c);
}

// Every selected transaction with its rows, into one side of a comparison.
// Returns true when any of them has CPU samples.
bool load_side(const Db& db, const Selection& sel, CompareSide& side) {
  Stmt head(db, "SELECT txid, error, status, kind FROM transactions WHERE id = ?");
  Stmt steps(db,
             "SELECT no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns, fetch_ns, fingerprint, text_id "
             "FROM steps WHERE tx_id = ? ORDER BY no");
  Stmt folded(db, "SELECT kind, fingerprint, text_id, count, elapsed_ns FROM step_summaries WHERE tx_id = ?");
  Stmt text(db, "SELECT text FROM texts WHERE id = ?");
  std::unordered_map<int64_t, std::string> texts;
  auto text_of = [&](int64_t id) -> const std::string& {
    auto it = texts.find(id);
    if (it != texts.end()) return it->second;
    std::string t;
    if (id >= 0) {
      text.reset();
      text.bind(1, id);
      if (text.step()) t.assign(text.text(0));
    }
    return texts.emplace(id, std::move(t)).first->second;
  };
  // CPU samples, when the store has them: a row's hot functions, and the rest of its samples.
  std::unique_ptr<Stmt> hot, row_samples;
  {
    Stmt has(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('cpu_hot', 'cpu_rows')");
    if (has.step() && has.i64(0) == 2) {
      hot = std::make_unique<Stmt>(db, "SELECT function, coalesce(module, ''), sum(samples) FROM cpu_hot WHERE tx_id = ? "
                                       "GROUP BY function, module ORDER BY 3 DESC, 1");
      row_samples = std::make_unique<Stmt>(db, "SELECT coalesce(sum(samples), 0) FROM cpu_rows WHERE tx_id = ?");
    }
  }
  CompareTx tx;
  bool any_hot = false;
  for (const auto& t : sel.txs) {
    tx.hot.clear();
    if (hot) {
      int64_t listed = 0;
      hot->reset();
      hot->bind(1, t.id);
      while (hot->step()) {
        tx.hot.push_back({std::string(hot->text(0)), std::string(hot->text(1)), hot->i64(2)});
        listed += hot->i64(2);
      }
      row_samples->reset();
      row_samples->bind(1, t.id);
      if (!tx.hot.empty() && row_samples->step() && row_samples->i64(0) > listed)
        tx.hot.push_back({"(other functions)", "", row_samples->i64(0) - listed});
      any_hot |= !tx.hot.empty();
    }
    tx.id = t.id;
    tx.totals = {t.elapsed, t.cpu, t.sql, t.fetch, t.call};
    tx.txid = 0;
    tx.error.clear();
    tx.rows.clear();
    tx.folded.clear();
    head.reset();
    head.bind(1, t.id);
    if (head.step()) {
      tx.txid = head.i64(0);
      tx.error = head.text(1);
      if (tx.error.empty() && head.text(3) == "http" && head.i64(2) >= 500)
        tx.error = "HTTP " + std::to_string(head.i64(2));
    }
    steps.reset();
    steps.bind(1, t.id);
    while (steps.step()) {
      StepRow r;
      r.no = static_cast<int>(steps.i64(0));
      r.parent = static_cast<int>(steps.i64(1));
      r.kind = steps.text(2);
      r.start_ns = steps.i64(3);
      r.gap_ns = steps.i64(4);
      r.cpu_ns = steps.i64(5);
      r.elapsed_ns = steps.i64(6);
      r.fetch_ns = steps.null(7) ? 0 : steps.i64(7);
      r.has_fingerprint = !steps.null(8) && steps.i64(8) != 0;
      r.fingerprint = steps.i64(8);
      r.text_id = steps.null(9) ? -1 : steps.i64(9);
      if (r.kind == "SQL" || r.kind == "HTTP_CALL") r.text = text_of(r.text_id);
      tx.rows.push_back(std::move(r));
    }
    folded.reset();
    folded.bind(1, t.id);
    while (folded.step())
      tx.folded.push_back({std::string(folded.text(0)), !folded.null(1) && folded.i64(1) != 0, folded.i64(1),
                           text_of(folded.null(2) ? -1 : folded.i64(2)), folded.i64(3), folded.i64(4)});
    side.add(tx);
  }
  return any_hot;
}

}  // namespace

Options baseline_options(const Options& opt) {
  Options b = opt;
  const Options::Baseline& base = *opt.baseline;
  if (base.since_unix_ns || base.until_unix_ns) b.since_unix_ns = base.since_unix_ns, b.until_unix_ns = base.until_unix_ns;
  if (base.app) b.app = *base.app;
  if (base.name) b.name = *base.name;
  b.tx_ids = base.tx_ids;
  b.baseline.reset();
  return b;
}

std::string validate_options(const Options& opt) {
  if (opt.db.empty()) return "no store given (--db FILE)";
  if (opt.top < 1) return "--top must be at least 1";
  if (opt.repeat_threshold < 2) return "--repeat must be at least 2";
  if (!(opt.min_ms >= 0)) return "--min-ms must be >= 0";
  if (opt.format != "md" && opt.format != "html" && opt.format != "csv" && opt.format != "json")
    return "unknown format '" + opt.format + "' (md, html, csv, json)";
  if (!opt.table.empty()) {
    if (!is_table_name(opt.table))
      return "unknown table '" + opt.table + "' (summary, slowest, names, sql, calls, repeated, histogram, "
             "compare_summary, compare, compare_changes, compare_steps)";
    if (opt.format != "csv") return "--table applies to --format csv only";
    if (opt.table.rfind("compare", 0) == 0 && !opt.baseline)
      return "--table " + opt.table + " needs a baseline (--baseline-since, --baseline-until, --baseline-app, --baseline-name)";
  }
  if (opt.since_unix_ns && opt.until_unix_ns && *opt.since_unix_ns > *opt.until_unix_ns)
    return "--since is after --until";
  if (opt.baseline) {
    const Options b = baseline_options(opt);
    if (b.since_unix_ns && b.until_unix_ns && *b.since_unix_ns > *b.until_unix_ns)
      return "--baseline-since is after --baseline-until";
  }
  return "";
}

std::string compute_report(const Options& opt, Report& r) {
  if (auto err = validate_options(opt); !err.empty()) return err;
  try {
    Db db;
    db.open_readonly(opt.db);
    check_store(db);
    // One read transaction: every section sees the same snapshot while the collector keeps writing.
    Stmt(db, "BEGIN").step();
    // TXRAY_REPORT_TIMING=1 prints the time of each phase on stderr (for bench/report).
    const bool timing = std::getenv("TXRAY_REPORT_TIMING") != nullptr;
    auto t0 = std::chrono::steady_clock::now();
    auto phase = [&](const char* what) {
      if (!timing) return;
      auto t1 = std::chrono::steady_clock::now();
      std::fprintf(stderr, "txray report: %-10s %8.3f s\n", what, std::chrono::duration<double>(t1 - t0).count());
      t0 = t1;
    };
    Selection sel = select_transactions(db, opt);
    phase("select");
    r.db = opt.db;
    r.filters = sel.filters;
    r.repeat_threshold = opt.repeat_threshold;
    r.generated_unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
    compute_summary(db, sel, r.summary);
    const ShedSet shed = load_shed(db, opt);
    add_shed_to_summary(shed, stored_elapsed(sel), r.summary);
    count_unattributed(db, opt, r.summary);
    count_drops(db, opt, r.summary);
    compute_agent_cost(db, sel, r.summary);
    phase("summary");
    if (!(opt.compare_only && opt.baseline)) {
      compute_names(sel, shed, opt.top, r);
      phase("names");
      compute_slowest(db, sel, opt.top, r);
      phase("slowest");
      compute_step_groups(db, opt, sel, r);
      phase("steps");
      std::vector<int64_t> elapsed;
      elapsed.reserve(sel.txs.size());
      for (const auto& t : sel.txs) elapsed.push_back(t.elapsed);
      r.histogram = histogram(elapsed);
      compute_scatter(sel, r.scatter);
      phase("histogram");
    }
    if (opt.baseline) {
      const Options bopt = baseline_options(opt);
      Selection base = select_transactions(db, bopt);
      CompareSide b, c;
      const bool base_hot = load_side(db, base, b);
      const bool cur_hot = load_side(db, sel, c);
      r.compare = compare_sides(b, c, opt.top);
      r.compare.cpu_samples = base_hot || cur_hot;
      r.compare.baseline_filters = base.filters;
      compute_summary(db, base, r.compare.baseline);
      add_shed_to_summary(load_shed(db, bopt), stored_elapsed(base), r.compare.baseline);
      r.has_compare = true;
      phase("compare");
    }
    Stmt(db, "COMMIT").step();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace txray::report
