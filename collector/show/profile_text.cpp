#include "profile_text.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cpu_hot.h"
#include "show_format.h"
#include "ids.h"

namespace txray::show {

namespace {

constexpr size_t kMaxTextInRow = 400;  // long SQL/URLs are cut in the text view (JSON has them whole)

// One line, at most kMaxTextInRow bytes: newlines and tabs become spaces.
std::string one_line(const std::string& s) {
  std::string out;
  out.reserve(std::min(s.size(), kMaxTextInRow + 3));
  for (char c : s) {
    if (out.size() >= kMaxTextInRow) {
      out += "...";
      break;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  return out;
}

std::string attr_or(const Step& s, const char* key, const char* fallback = "?") {
  const std::string* v = s.attribute(key);
  return v ? *v : fallback;
}

std::string elapsed(const Step& s) { return " [" + ms_elapsed(s.elapsed_ns) + " ms]"; }

std::string uid(const Step& s) { return s.id ? hex16(*s.id) : std::string("-"); }

int depth_of(const Transaction& t, const Step& s) {
  int d = 0;
  for (int p = s.parent; p >= 0 && p < static_cast<int>(t.steps.size()) && d < 64; p = t.steps[p].parent) ++d;
  return d;
}

void add_line(std::string& out, const std::string& indent, const std::string& line) {
  out += indent;
  out += line;
  out += '\n';
}

std::string field(const char* name, const std::string& value) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%-15s: ", name);
  return buf + value;
}

}  // namespace

std::string step_message(const Step& s) {
  std::string m;
  const std::string& k = s.kind;
  if (k == "START" || k == "END") {
    m = k;
  } else if (k == "SOCKET") {
    m = "SOCKET[addr=" + attr_or(s, "addr") + ",port=" + attr_or(s, "port") + ",localport=" +
        attr_or(s, "localport") + "] uid=" + uid(s) + elapsed(s);
  } else if (k == "SOCKET_CLOSE") {
    m = "SOCKET_CLOSE R=" + std::to_string(s.bytes_read) + ",W=" + std::to_string(s.bytes_written) + ",uid=" + uid(s);
  } else if (k == "SQL") {
    m = "SQL " + one_line(s.text);
    if (const std::string* b = s.attribute("binds"); b && !b->empty()) m += " binds=(" + one_line(*b) + ")";
    if (const std::string* p = s.attribute("params"); p && !p->empty()) m += " params=(" + one_line(*p) + ")";
    if (s.rows) m += " rows=" + thousands(*s.rows);
    if (s.changes && *s.changes > 0) m += " changes=" + thousands(*s.changes);
    m += elapsed(s);
    if (s.fetch_ns && *s.fetch_ns > 0) m += " fetch=" + ms_elapsed(*s.fetch_ns) + " ms";
  } else if (k == "DB_CONNECT") {
    m = "DB_CONNECT " + one_line(s.text) + elapsed(s);
  } else if (const std::string* rpc = s.attribute("rpc"); k == "HTTP_CALL" && rpc && *rpc == "grpc") {
    // A gRPC call (an HTTP/2 stream with content-type application/grpc: docs/http2.md).
    m = "GRPC_CALL " + one_line(s.text);
    if (const std::string* g = s.attribute("grpc_status")) m += " grpc-status " + *g;
    else if (s.status) m += " status " + std::to_string(*s.status);
    m += elapsed(s);
    if (s.bytes_written || s.bytes_read)
      m += " W=" + std::to_string(s.bytes_written) + ",R=" + std::to_string(s.bytes_read);
    if (s.callee_txid) m += " callee=" + hex16(*s.callee_txid);
  } else if (k == "HTTP_CALL") {
    m = "HTTP_CALL ";
    if (const std::string* method = s.attribute("method")) m += *method + " ";
    m += one_line(s.text);
    if (s.status) m += " status " + std::to_string(*s.status);
    m += elapsed(s);
    if (s.bytes_written || s.bytes_read)
      m += " W=" + std::to_string(s.bytes_written) + ",R=" + std::to_string(s.bytes_read);
    if (s.callee_txid) m += " callee=" + hex16(*s.callee_txid);
  } else if (k == "DNS") {
    m = "DNS " + one_line(s.text);
    const std::string* addr = s.attribute("addr");
    if (!addr) addr = s.attribute("address");
    if (addr) m += " \xe2\x86\x92 " + *addr;  // →
    m += elapsed(s);
  } else if (k == "REDIS" || k == "MEMCACHED") {
    // a cache command: its text is the command and key pattern (docs/protocols.md)
    m = k + " " + one_line(s.text);
    if (const std::string* r = s.attribute("result")) m += " " + *r;
    else if (const std::string* r = s.attribute("reply")) m += " reply=" + *r;
    m += elapsed(s);
    if (s.bytes_written || s.bytes_read)
      m += " W=" + std::to_string(s.bytes_written) + ",R=" + std::to_string(s.bytes_read);
  } else if (k == "MESSAGE") {
    m = s.text.empty() ? "MESSAGE" : one_line(s.text);
    if (s.elapsed_ns > 0) m += elapsed(s);
  } else {
    m = k + " " + one_line(s.text);
  }
  if (!s.error.empty()) m += "  !! ERROR: " + one_line(s.error);
  return m;
}

std::string profile_text(const Transaction& t, const std::string& indent) {
  std::string out;
  const std::string rule(80, '-');
  add_line(out, indent, std::string(80, '='));
  add_line(out, indent, field("TXID", hex16(t.txid)));
  std::string guid = t.trace_id.empty() ? "-" : t.trace_id;
  if (t.parent_span_id) guid += "  (caller span " + hex16(t.parent_span_id) + ")";
  add_line(out, indent, field("GUID", guid));
  const Agent& a = t.agent;
  add_line(out, indent,
           field("AGENT", a.host + " pid " + std::to_string(a.pid) + " " + a.program +
                              (a.agent_version.empty() ? "" : "  (agent " + a.agent_version + ")")));
  add_line(out, indent, field("APPLICATION", t.app));
  add_line(out, indent, field("TRANSACTION", t.name + (t.kind.empty() ? "" : "  (" + t.kind + ")")));
  for (const auto& [k, v] : t.attributes)  // the agent kept values it masks by default (TXRAY_VALUES=raw)
    if (k == "values" && v == "raw")
      add_line(out, indent, field("VALUES", "raw  (query strings, URL passwords and SQL values as the program sent them)"));
  add_line(out, indent, field("CLIENT", t.client_addr.empty() ? "-" : t.client_addr));
  add_line(out, indent, field("START TIME", date_time(t.start_unix_ns)));
  add_line(out, indent, field("END TIME", date_time(t.end_unix_ns)));
  add_line(out, indent, field("RESPONSE TIME", ms_precise(t.elapsed_ns) + " ms"));
  add_line(out, indent, field("CPU TIME", ms_precise(t.cpu_ns) + " ms"));
  if (t.agent_cost_ns) add_line(out, indent, field("AGENT COST", agent_cost(*t.agent_cost_ns, t.elapsed_ns)));
  add_line(out, indent,
           field("SQL TIME", ms_precise(t.sql_ns) + " ms  (" + thousands(t.sql_count) + " statements)"));
  add_line(out, indent, field("FETCH TIME", ms_precise(t.fetch_ns) + " ms"));
  add_line(out, indent, field("CALL TIME", ms_precise(t.call_ns) + " ms  (" + thousands(t.call_count) + " calls)"));
  add_line(out, indent, field("STATUS", std::to_string(t.status)));
  if (!t.error.empty()) add_line(out, indent, field("ERROR", "!! " + one_line(t.error)));
  if (t.cpu_samples > 0 || t.cpu_samples_dropped > 0) {
    std::string v = thousands(t.cpu_samples);
    if (t.cpu_samples_dropped > 0) v += " (+" + thousands(t.cpu_samples_dropped) + " dropped)";
    if (!t.cpu_sampler.empty()) v += "  [" + t.cpu_sampler + "]";
    add_line(out, indent, field("CPU SAMPLES", v));
  }
  if (t.agent_cpu_samples_lost > 0 || t.agent_stacks_missed > 0)  // the process's totals, not this transaction's
    add_line(out, indent,
             field("AGENT LOSSES", "cpu samples lost " + thousands(t.agent_cpu_samples_lost) + ", stacks missed " +
                                       thousands(t.agent_stacks_missed) + "  (the process, so far)"));
  add_line(out, indent,
           field("BYTES", "read " + thousands(t.bytes_read) + ", written " + thousands(t.bytes_written)));
  if (!t.attributes.empty()) {
    std::string attrs;
    for (const auto& [k, v] : t.attributes) attrs += (attrs.empty() ? "" : ", ") + k + "=" + one_line(v);
    add_line(out, indent, field("ATTRIBUTES", attrs));
  }
  add_line(out, indent, rule);

  // Whole milliseconds as in the reference, except for a transaction under 100 ms: there whole
  // milliseconds would print a column of zeros, so GAP, CPU_T and TOTAL get three decimals.
  const auto ms = t.elapsed_ns < 100'000'000 ? ms_precise : ms_rounded;
  // Column widths grow with the numbers (the reference pads to 4).
  size_t gap_w = 4, cpu_w = 5, no_w = 4;
  for (const auto& s : t.steps) {
    gap_w = std::max(gap_w, ms(s.gap_ns).size());
    cpu_w = std::max(cpu_w, ms(s.cpu_ns).size());
    no_w = std::max(no_w, std::to_string(s.no).size());
  }
  auto pad_left = [](const std::string& s, size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s; };
  auto center = [](const char* s, size_t w) {
    std::string v = s;
    size_t l = w > v.size() ? (w - v.size() + 1) / 2 : 0;
    return std::string(l, ' ') + v + std::string(w > v.size() + l ? w - v.size() - l : 0, ' ');
  };
  add_line(out, indent,
           "[" + center("NO", no_w) + "][ START_TIME ][" + pad_left("GAP", gap_w) + "][" + pad_left("CPU_T", cpu_w) +
               "]");
  for (const auto& s : t.steps) {
    std::string no = std::to_string(s.no);
    no = std::string(no_w > no.size() ? no_w - no.size() : 0, '0') + no;
    add_line(out, indent,
             "[" + no + "][" + clock_time(t.start_unix_ns + s.start_offset_ns) + "][" +
                 pad_left(ms(s.gap_ns), gap_w) + "][" + pad_left(ms(s.cpu_ns), cpu_w) + "] " +
                 std::string(2 * static_cast<size_t>(depth_of(t, s)), ' ') + step_message(s));
    if (std::string hot = hot_line(s.hot, s.cpu_samples); !hot.empty())
      add_line(out, indent,
               std::string(no_w + gap_w + cpu_w + 23 + 2 * static_cast<size_t>(depth_of(t, s)), ' ') + "hot: " +
                   hot + "  (" + thousands(s.cpu_samples) + " samples)");
    // The stack of a failed or slow step, under its row at the message's indentation (docs/stacks.md).
    if (!s.stack.empty()) {
      std::string pad(no_w + gap_w + cpu_w + 23 + 2 * static_cast<size_t>(depth_of(t, s)), ' ');
      for (const auto& f : s.stack) add_line(out, indent, pad + "at " + format_frame(f));
    }
  }
  add_line(out, indent, "TOTAL[" + ms(t.elapsed_ns) + "][" + ms(t.cpu_ns) + "]");

  if (!t.summary.empty()) {
    add_line(out, indent, rule);
    add_line(out, indent, "FOLDED STEPS (past the per-transaction step limit)");
    for (const auto& m : t.summary) {
      std::string line = "  " + m.kind + " x" + thousands(m.count) + " [" + ms_elapsed(m.elapsed_ns) + " ms]";
      if (m.rows) line += " rows=" + thousands(*m.rows);
      if (m.errors) line += " errors=" + thousands(m.errors);
      if (!m.text.empty()) line += "  " + one_line(m.text);
      add_line(out, indent, line);
    }
  }
  return out;
}

}  // namespace txray::show
