#include "gen_model.h"

#include <algorithm>
#include <cmath>

namespace txray::gen {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * kUs;

// Lays out a profile row by row. Time passes either computing (a share of it on the CPU) or waiting (no
// CPU); a row takes the time since the previous row as its GAP and the CPU burned since then as its
// CPU_T. Totals are read off the builder at the end, so they match the rows exactly.
class ProfileBuilder {
 public:
  explicit ProfileBuilder(TxRow& tx) : tx_(tx) {}

  void compute(int64_t d, double cpu_ratio) {
    now_ += d;
    cpu_ += static_cast<int64_t>(std::llround(static_cast<double>(d) * cpu_ratio));
  }
  void wait(int64_t d) { now_ += d; }
  int64_t now() const { return now_; }

  StepRow& row(const char* kind, int parent = -1) {
    StepRow r;
    r.kind = kind;
    r.parent = parent;
    r.start_offset_ns = now_;
    r.gap_ns = now_ - last_row_;
    r.cpu_ns = cpu_;
    total_cpu_ += cpu_;
    last_row_ = now_;
    cpu_ = 0;
    tx_.steps.push_back(std::move(r));
    return tx_.steps.back();
  }
  int last_index() const { return static_cast<int>(tx_.steps.size()) - 1; }

  void finish() {
    row("END");
    tx_.elapsed_ns = now_;
    tx_.cpu_ns = total_cpu_;
  }

 private:
  TxRow& tx_;
  int64_t now_ = 0, last_row_ = 0, cpu_ = 0, total_cpu_ = 0;
};

std::string json_attrs(std::initializer_list<std::pair<const char*, std::string>> kv) {
  std::string out = "{";
  for (const auto& [k, v] : kv) {
    if (out.size() > 1) out += ',';
    out += '"';
    out += k;
    out += "\":\"";
    out += v;
    out += '"';
  }
  out += '}';
  return out;
}

}  // namespace

Generator::Generator(const Catalog& catalog, uint64_t seed, int64_t first_id)
    : catalog_(catalog), rng_(seed), next_id_(first_id) {
  for (const auto& n : catalog_.names) total_weight_ += n.weight;
}

int64_t Generator::lognormal_ns(double median_ns, double sigma) {
  std::normal_distribution<double> z(0.0, 1.0);
  return std::max<int64_t>(1000, static_cast<int64_t>(median_ns * std::exp(sigma * z(rng_))));
}

std::string Generator::hex(int digits) {
  static const char* k = "0123456789abcdef";
  std::string s(static_cast<size_t>(digits), '0');
  uint64_t bits = rng_();
  for (int i = 0; i < digits; ++i) {
    if (i % 16 == 0 && i) bits = rng_();
    s[static_cast<size_t>(i)] = k[bits & 15];
    bits >>= 4;
  }
  return s;
}

int Generator::pick_name() {
  int r = static_cast<int>(rng_() % static_cast<uint64_t>(total_weight_));
  for (size_t i = 0; i < catalog_.names.size(); ++i) {
    r -= catalog_.names[i].weight;
    if (r < 0) return static_cast<int>(i);
  }
  return 0;
}

void Generator::generate(int64_t start_unix_ns, double slow_factor, std::vector<TxRow>& out) {
  int name = pick_name();
  const auto& n = catalog_.names[static_cast<size_t>(name)];
  double factor = slow_factor;
  if (uniform(0, 1) < 0.02) factor *= uniform(4, 15);  // the slow tail
  int64_t target = lognormal_ns(n.median_ms * kMs * factor, n.sigma);
  TxRow tx;
  tx.trace_id = hex(32);
  size_t at = out.size();
  out.push_back({});
  build(name, start_unix_ns, target, factor, tx, out);
  out[at] = std::move(tx);
}

// Fills tx (and appends its callee, if it makes a call) for catalog name `name_index`.
void Generator::build(int name_index, int64_t start_unix_ns, int64_t target_ns, double slow_factor,
                      TxRow& tx, std::vector<TxRow>& out) {
  const auto& n = catalog_.names[static_cast<size_t>(name_index)];
  tx.id = next_id_++;
  tx.txid = static_cast<int64_t>(rng_());
  tx.app = n.app;
  tx.name = n.name;
  tx.agent = catalog_.agent_for(n.app, rng_());
  tx.start_unix_ns = start_unix_ns;
  tx.tid = catalog_.agents[static_cast<size_t>(tx.agent)].pid + static_cast<int64_t>(rng_() % 16);
  tx.client_addr = "10.1." + std::to_string(rng_() % 8) + "." + std::to_string(2 + rng_() % 250) + ":" +
                   std::to_string(32768 + rng_() % 28000);
  const bool is_post = n.name.rfind("POST", 0) == 0;
  std::string path = n.name.substr(n.name.find(' ') + 1);
  if (auto p = path.find("{id}"); p != std::string::npos) path.replace(p, 4, std::to_string(1 + rng_() % 99999));
  tx.attributes = json_attrs({{"method", is_post ? "POST" : "GET"}, {"url", path}, {"host", n.app + ".local"},
                              {"user_agent", rng_() % 3 ? "Mozilla/5.0 (X11; Linux x86_64)" : "curl/7.88.1"}});
  tx.bytes_read = 200 + static_cast<int64_t>(rng_() % (is_post ? 4000 : 600));
  tx.bytes_written = 300 + static_cast<int64_t>(rng_() % 20000);
  const bool failed = uniform(0, 1) < n.error_rate * (slow_factor > 1 ? 4 : 1);

  // Plan the waits first; the remaining time of the target is computed between the rows.
  const int nsql = n.sqls.empty() ? 0 : n.min_sql + static_cast<int>(rng_() % (n.max_sql - n.min_sql + 1));
  const int call_after = n.call ? static_cast<int>(rng_() % (nsql + 1)) : -1;  // call after this many SQLs
  const int top_rows = nsql + (n.call ? 1 : 0) + 1;                              // + END
  std::vector<double> share(static_cast<size_t>(top_rows));
  double sum = 0;
  for (auto& s : share) sum += (s = uniform(0.2, 1.0));
  const int64_t compute_total = static_cast<int64_t>(static_cast<double>(target_ns) * uniform(0.25, 0.6));
  const double cpu_ratio = uniform(0.35, 0.95);
  auto compute_share = [&](int i) {
    return std::max<int64_t>(5 * kUs, static_cast<int64_t>(static_cast<double>(compute_total) * share[i] / sum));
  };

  ProfileBuilder b(tx);
  b.row("START");
  int gap_index = 0;
  if (nsql > 0 && rng_() % 10 < 3) {
    b.compute(compute_share(gap_index) / 4, cpu_ratio);
    auto& c = b.row("DB_CONNECT");
    c.text = catalog_.db_text;
    c.elapsed_ns = lognormal_ns(1.5 * kMs, 0.4);
    b.wait(c.elapsed_ns);
  }
  const int64_t sql_budget = nsql ? (target_ns - compute_total) / (n.call ? 3 : 1) / nsql : 0;
  for (int i = 0; i <= nsql; ++i) {
    if (i == call_after) {
      const auto& call = *n.call;
      b.compute(compute_share(gap_index++), cpu_ratio);
      const int64_t call_start = b.now();
      auto& c = b.row("HTTP_CALL");
      const int call_no = b.last_index();
      c.text = call.url_text;
      c.fingerprint = static_cast<int64_t>(fnv1a64(catalog_.texts[static_cast<size_t>(call.url_text)]));
      const int64_t span = static_cast<int64_t>(rng_());
      c.ref_id = span;
      b.compute(20 * kUs, 0.9);
      if (rng_() % 5 == 0) {
        b.row("DNS", call_no).text = call.host_text;
        b.wait(lognormal_ns(300 * kUs, 0.5));
      }
      auto& s = b.row("SOCKET", call_no);
      const int64_t uid = static_cast<int64_t>(rng_() % 100000000);
      s.ref_id = uid;
      s.attributes = json_attrs({{"addr", "10.0.3." + std::to_string(10 + call.callee)}, {"port", std::to_string(8081 + call.callee)},
                                 {"localport", std::to_string(32768 + rng_() % 28000)}});
      b.wait(150 * kUs);
      // The callee runs while we wait; it starts once the request has arrived.
      TxRow callee;
      callee.trace_id = tx.trace_id;
      callee.parent_span_id = span;
      const auto& cn = catalog_.names[static_cast<size_t>(call.callee)];
      const size_t at = out.size();
      out.push_back({});
      build(call.callee, start_unix_ns + b.now() + 100 * kUs, lognormal_ns(cn.median_ms * kMs * slow_factor, cn.sigma),
            slow_factor, callee, out);
      const int64_t response_bytes = call.big_response ? 40000 + static_cast<int64_t>(rng_() % 30000)
                                                       : 200 + static_cast<int64_t>(rng_() % 800);
      // Transfer time: request in, callee's work, response out (a large one takes a while on the wire).
      b.wait(callee.elapsed_ns + 200 * kUs + response_bytes * (call.big_response ? 8 * kUs : 1 * kUs) / 1000);
      auto& sc = b.row("SOCKET_CLOSE", call_no);
      sc.ref_id = uid;
      sc.bytes_read = response_bytes;
      sc.bytes_written = 180 + static_cast<int64_t>(rng_() % 400);
      if (call.big_response) {
        // The reference case: decompressing the response burns the CPU for a long while inside the call.
        b.compute(static_cast<int64_t>(static_cast<double>(target_ns) * uniform(0.45, 0.6)), uniform(0.88, 0.95));
      } else {
        b.compute(50 * kUs, 0.9);
      }
      auto& callrow = tx.steps[static_cast<size_t>(call_no)];
      callrow.elapsed_ns = b.now() - call_start;
      callrow.bytes_read = sc.bytes_read;
      callrow.bytes_written = sc.bytes_written;
      callrow.status = callee.status;
      callrow.callee_tx_id = callee.id;
      tx.call_ns += callrow.elapsed_ns;
      tx.call_count++;
      out[at] = std::move(callee);
    }
    if (i == nsql) break;
    const auto& q = catalog_.sql[static_cast<size_t>(n.sqls[static_cast<size_t>(i)])];
    b.compute(compute_share(gap_index++), cpu_ratio);
    auto& s = b.row("SQL");
    s.text = q.text;
    s.fingerprint = static_cast<int64_t>(fnv1a64(catalog_.texts[static_cast<size_t>(q.text)]));
    s.elapsed_ns = std::max<int64_t>(lognormal_ns(q.median_us * kUs * slow_factor, 0.5),
                                     std::min<int64_t>(sql_budget, 40 * q.median_us * kUs) / 2);
    s.status = 0;
    if (q.write) {
      s.rows = 0;
      s.changes = 1;
      s.fetch_ns = 0;
    } else {
      const int rows = q.max_rows <= 1 ? q.max_rows : 1 + static_cast<int>(rng_() % q.max_rows);
      s.rows = rows;
      s.changes = 0;
      s.fetch_ns = rows > 1 ? rows * static_cast<int64_t>(uniform(5, 25) * kUs) : 0;
    }
    b.wait(s.elapsed_ns + *s.fetch_ns);
    tx.sql_ns += s.elapsed_ns;
    tx.fetch_ns += *s.fetch_ns;
    tx.sql_count++;
  }
  b.compute(compute_share(gap_index), cpu_ratio);

  if (failed) {
    const auto& err = catalog_.errors[rng_() % catalog_.errors.size()];
    tx.status = 500;
    tx.error = err;
    if (tx.sql_count > 0 && (err.find("locked") != std::string::npos || err.find("deadlock") != std::string::npos)) {
      for (auto it = tx.steps.rbegin(); it != tx.steps.rend(); ++it)
        if (std::string_view(it->kind) == "SQL") {
          it->error = err.substr(err.find(": ") + 2);
          it->status = 5;
          break;
        }
    }
  }
  b.finish();
  tx.end_unix_ns = tx.start_unix_ns + tx.elapsed_ns;
}

}  // namespace txray::gen
