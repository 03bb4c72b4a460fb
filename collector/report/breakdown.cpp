#include "breakdown.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "format.h"
#include "stats.h"

namespace txray::report {

const char* cost_name(Cost c) {
  switch (c) {
    case Cost::Sql: return "SQL";
    case Cost::Fetch: return "fetch";
    case Cost::Call: return "outbound call";
    case Cost::SocketWait: return "socket wait";
    case Cost::Cpu: return "CPU in own code";
    case Cost::Idle: return "idle";
  }
  return "?";
}

namespace {

using Split = TimeSplit;

// call_cpu: the caller's own CPU inside outbound calls, moved from call to cpu.
Split split(const TxTotals& t, int64_t call_cpu) {
  Split s{};
  const int64_t e = std::max<int64_t>(t.elapsed_ns, 0);
  s.sql = std::clamp<int64_t>(t.sql_ns, 0, e);
  s.fetch = std::clamp<int64_t>(t.fetch_ns, 0, e - s.sql);
  s.call = std::clamp<int64_t>(t.call_ns, 0, e - s.sql - s.fetch);
  s.call -= std::clamp<int64_t>(call_cpu, 0, s.call);
  const int64_t rest = e - s.sql - s.fetch - s.call;
  s.cpu = std::clamp<int64_t>(t.cpu_ns, 0, rest);
  s.wait = rest - s.cpu;
  return s;
}

bool is_call(const std::string& kind) {
  return kind == "SQL" || kind == "HTTP_CALL" || kind == "DNS" || kind == "DB_CONNECT" || kind == "REDIS" ||
         kind == "MEMCACHED";
}

std::string row_label(const StepRow& r) {
  std::string s = "#" + std::to_string(r.no) + " " + r.kind;
  if (!r.text.empty()) s += " " + shorten(r.text, 160);
  return s;
}

std::string socket_label(const StepRow& r) {
  std::string s = "#" + std::to_string(r.no) + " " + r.kind;
  if (!r.attributes.empty()) {
    auto j = nlohmann::json::parse(r.attributes, nullptr, false);
    if (j.is_object() && j.contains("addr")) {
      s += " " + j["addr"].get<std::string>();
      if (j.contains("port")) s += ":" + j["port"].get<std::string>();
      return s;
    }
  }
  if (!r.text.empty()) s += " " + shorten(r.text, 160);
  return s;
}

// SQL / HTTP_CALL rows and folded calls of one kind grouped by fingerprint (or text), biggest total.
struct Group {
  int64_t count = 0, total = 0;
  const StepRow* longest = nullptr;
  std::string text;
};

std::string busiest_group(const std::vector<StepRow>& rows, const std::vector<FoldedRow>& folded,
                          const std::string& kind, int* step_no) {
  std::map<std::string, Group> groups;
  // The same grouping as the report's tables: SQL by fingerprint (else text), calls by host and path.
  auto key = [&kind](bool has_fp, int64_t fp, const std::string& text) {
    if (kind == "HTTP_CALL") {
      HostPath hp = split_url(text);
      return "c" + hp.host + hp.path;
    }
    return has_fp && fp != 0 ? "f" + std::to_string(fp) : "t" + text;
  };
  for (const auto& r : rows) {
    if (r.kind != kind) continue;
    auto& g = groups[key(r.has_fingerprint, r.fingerprint, r.text)];
    g.count++;
    g.total += r.elapsed_ns;
    if (!g.longest || r.elapsed_ns > g.longest->elapsed_ns) g.longest = &r;
    if (g.text.empty()) g.text = r.text;
  }
  for (const auto& f : folded) {
    if (f.kind != kind) continue;
    auto& g = groups[key(f.has_fingerprint, f.fingerprint, f.text)];
    g.count += f.count;
    g.total += f.elapsed_ns;
    if (g.text.empty()) g.text = f.text;
  }
  const Group* best = nullptr;
  for (const auto& [k, g] : groups)
    if (!best || g.total > best->total) best = &g;
  if (!best) return "";
  *step_no = best->longest ? best->longest->no : -1;
  std::string s = best->longest ? "#" + std::to_string(best->longest->no) + " " : "";
  s += kind + " " + shorten(best->text, 160);
  if (best->count > 1)
    s += " (x" + fmt_count(best->count) + ", " + fmt_ms(best->total) + " ms in all" +
         (best->longest ? ", longest " + fmt_ms(best->longest->elapsed_ns) + " ms" : "") + ")";
  else
    s += " [" + fmt_ms(best->total) + " ms]";
  return s;
}

// Time spent with a top-level outbound socket open, minus CPU and other calls in that time, plus
// top-level DNS / DB_CONNECT time. Also returns the socket or call row that waited most.
int64_t socket_wait(const std::vector<StepRow>& rows, int64_t elapsed, const StepRow** worst) {
  struct Interval {
    int64_t s, e;
    const StepRow* open;
  };
  std::vector<Interval> iv;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.kind != "SOCKET" || r.parent != -1) continue;
    int64_t end = elapsed;
    for (size_t j = i + 1; j < rows.size(); ++j)
      if (rows[j].kind == "SOCKET_CLOSE" && rows[j].ref_id == r.ref_id) {
        end = rows[j].start_ns;
        break;
      }
    if (end > r.start_ns) iv.push_back({r.start_ns, end, &r});
  }
  std::sort(iv.begin(), iv.end(), [](auto& a, auto& b) { return a.s < b.s; });
  std::vector<Interval> merged;
  for (const auto& v : iv) {
    if (!merged.empty() && v.s <= merged.back().e) merged.back().e = std::max(merged.back().e, v.e);
    else merged.push_back(v);
  }
  int64_t total = 0, best = -1;
  for (const auto& m : merged) {
    int64_t busy = 0;
    for (const auto& r : rows) {
      if (r.start_ns > m.s && r.start_ns <= m.e) busy += r.cpu_ns;
      if (r.parent == -1 && is_call(r.kind) && r.start_ns >= m.s && r.start_ns < m.e) busy += r.elapsed_ns;
    }
    const int64_t w = std::max<int64_t>(0, (m.e - m.s) - busy);
    total += w;
    if (w > best) best = w, *worst = m.open;
  }
  for (const auto& r : rows) {
    if (r.parent != -1 || (r.kind != "DNS" && r.kind != "DB_CONNECT")) continue;
    total += r.elapsed_ns;
    if (r.elapsed_ns > best) best = r.elapsed_ns, *worst = &r;
  }
  return total;
}

// CPU_T of the rows spread evenly over their GAP, summed over the part that lies inside [s, e].
int64_t cpu_in_window(const std::vector<StepRow>& rows, int64_t s, int64_t e) {
  double sum = 0;
  for (const auto& r : rows) {
    if (r.cpu_ns <= 0) continue;
    const int64_t a = r.start_ns - r.gap_ns, b = r.start_ns;  // the row's interval
    if (b <= a) continue;
    const int64_t lo = std::max(a, s), hi = std::min(b, e);
    if (hi > lo) sum += static_cast<double>(r.cpu_ns) * static_cast<double>(hi - lo) / static_cast<double>(b - a);
  }
  return static_cast<int64_t>(sum);
}

}  // namespace

int64_t own_cpu_in_calls(const std::vector<StepRow>& rows, const StepRow** biggest, int64_t* biggest_ns) {
  int64_t total = 0;
  for (const auto& c : rows) {
    if (c.kind != "HTTP_CALL" || c.parent != -1) continue;
    const int64_t in = cpu_in_window(rows, c.start_ns, c.start_ns + c.elapsed_ns);
    total += in;
    if (biggest && in > *biggest_ns) *biggest_ns = in, *biggest = &c;
  }
  return total;
}

TimeSplit split_time(const TxTotals& t, int64_t call_cpu_ns) { return split(t, call_cpu_ns); }

void add_shares(const TxTotals& t, int64_t call_cpu_ns, TimeShares& out) {
  const Split s = split(t, call_cpu_ns);
  out.total_ns += std::max<int64_t>(t.elapsed_ns, 0);
  out.sql_ns += s.sql;
  out.fetch_ns += s.fetch;
  out.call_ns += s.call;
  out.cpu_ns += s.cpu;
  out.wait_ns += s.wait;
}

Dominant dominant_cost(const TxTotals& t, const std::vector<StepRow>& rows,
                       const std::vector<FoldedRow>& folded) {
  Dominant d;
  // Own CPU inside outbound calls: moved from call to cpu (see breakdown.h).
  const StepRow* cpu_call = nullptr;  // the call holding the most own CPU
  int64_t cpu_call_ns = 0;
  d.call_cpu_ns = own_cpu_in_calls(rows, &cpu_call, &cpu_call_ns);
  const Split s = split(t, d.call_cpu_ns);
  d.call_cpu_ns = std::min(d.call_cpu_ns, std::clamp<int64_t>(t.call_ns, 0, std::max<int64_t>(t.elapsed_ns, 0)));
  const StepRow* sock = nullptr;
  d.socket_wait_ns = std::min(s.wait, socket_wait(rows, t.elapsed_ns, &sock));
  d.idle_ns = s.wait - d.socket_wait_ns;

  const std::pair<Cost, int64_t> parts[] = {{Cost::Sql, s.sql},  {Cost::Fetch, s.fetch},
                                            {Cost::Call, s.call}, {Cost::SocketWait, d.socket_wait_ns},
                                            {Cost::Cpu, s.cpu},   {Cost::Idle, d.idle_ns}};
  d.ns = -1;
  for (const auto& [c, ns] : parts)
    if (ns > d.ns) d.cost = c, d.ns = ns;  // strict: ties go to the earlier part
  if (d.ns == 0) d.cost = Cost::Idle;      // a transaction of zero length

  switch (d.cost) {
    case Cost::Sql: d.step = busiest_group(rows, folded, "SQL", &d.step_no); break;
    case Cost::Call: d.step = busiest_group(rows, folded, "HTTP_CALL", &d.step_no); break;
    case Cost::Fetch: {
      const StepRow* best = nullptr;
      for (const auto& r : rows)
        if (r.kind == "SQL" && (!best || r.fetch_ns > best->fetch_ns)) best = &r;
      if (best) {
        d.step_no = best->no;
        d.step = row_label(*best) + " (fetch " + fmt_ms(best->fetch_ns) + " ms)";
      }
      break;
    }
    case Cost::SocketWait:
      if (sock) {
        d.step_no = sock->no;
        d.step = socket_label(*sock);
      }
      break;
    case Cost::Cpu: {
      const StepRow* best = nullptr;
      for (const auto& r : rows)
        if (!best || r.cpu_ns > best->cpu_ns) best = &r;
      if (best && best->cpu_ns > 0) {
        d.step_no = best->no;
        d.step = fmt_ms(best->cpu_ns) + " ms CPU before " + row_label(*best);
      }
      // A good part of it inside an outbound call (the client library decoding the response, say):
      // that is the finding, so the call leads.
      if (cpu_call && cpu_call_ns * 4 >= d.ns) {
        d.step = fmt_ms(cpu_call_ns) + " ms of own CPU inside " + row_label(*cpu_call) + " [" +
                 fmt_ms(cpu_call->elapsed_ns) + " ms]" +
                 (best ? "; most in one row: " + fmt_ms(best->cpu_ns) + " ms before #" + std::to_string(best->no)
                       : "");
        d.step_no = cpu_call->no;
      }
      break;
    }
    case Cost::Idle: {
      // The row preceded by the longest stretch that was neither CPU nor the previous row's call.
      const StepRow* best = nullptr;
      int64_t best_ns = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        int64_t w = rows[i].gap_ns - rows[i].cpu_ns;
        if (i > 0 && is_call(rows[i - 1].kind)) w -= rows[i - 1].elapsed_ns;
        if (w > best_ns) best_ns = w, best = &rows[i];
      }
      if (best) {
        d.step_no = best->no;
        d.step = fmt_ms(best_ns) + " ms idle before " + row_label(*best);
      }
      break;
    }
  }
  return d;
}

}  // namespace txray::report
