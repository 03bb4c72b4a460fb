#include "profile_format.h"
#include "frame_name.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "format.h"  // collector/report: fmt_agent_cost, shared with the report

namespace txray::viewer {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string format_ms(int64_t ns) {
  if (ns >= 10000000 || ns <= -10000000) return with_commas((ns + (ns >= 0 ? 500000 : -500000)) / 1000000);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string clock_ms(int64_t unix_ns) {
  const std::time_t secs = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02d:%02d:%02d %03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>((unix_ns / 1000000) % 1000));
  return buf;
}

std::string date_clock_ms(int64_t unix_ns) {
  const std::time_t secs = static_cast<std::time_t>(unix_ns / 1000000000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>((unix_ns / 1000000) % 1000));
  return buf;
}

std::string hex16(int64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

std::string attr(const std::string& json, const char* key) {
  if (json.empty()) return {};
  const auto obj = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
  return obj.value(QLatin1String(key)).toString().toStdString();
}

std::string bracket_ms(int64_t ns) { return " [" + format_ms(ns) + " ms]"; }

}  // namespace

std::string step_message(const Step& s) {
  std::string m;
  if (s.kind == "START" || s.kind == "END") {
    m = s.kind;
    if (!s.text.empty()) m += " " + s.text;
  } else if (s.kind == "SOCKET") {
    m = "SOCKET[addr=" + attr(s.attributes, "addr") + ",port=" + attr(s.attributes, "port") +
        ",localport=" + attr(s.attributes, "localport") + "]";
    if (s.ref_id) m += " uid=" + hex16(*s.ref_id);  // 64-bit ids print as 16 hex digits (schema.sql)
  } else if (s.kind == "SOCKET_CLOSE") {
    m = "SOCKET-CLOSE R=" + with_commas(s.bytes_read) + ",W=" + with_commas(s.bytes_written);
    if (s.ref_id) m += ",uid=" + hex16(*s.ref_id);
  } else if (s.kind == "SQL") {
    m = "SQL[" + s.text + "]";
    if (s.rows && *s.rows >= 0) m += " rows=" + with_commas(*s.rows);
    if (s.changes && *s.changes > 0) m += " changes=" + with_commas(*s.changes);
    if (s.fetch_ns && *s.fetch_ns > 0) m += " fetch=" + format_ms(*s.fetch_ns) + " ms";
    m += bracket_ms(s.elapsed_ns);
  } else if (s.kind == "HTTP_CALL" && attr(s.attributes, "rpc") == "grpc") {
    // A gRPC call (HTTP/2 stream, application/grpc): named as such, with its grpc-status.
    m = "GRPC-CALL[" + s.text + "]";
    if (std::string g = attr(s.attributes, "grpc_status"); !g.empty()) m += " grpc-status=" + g;
    else if (s.status) m += " status=" + std::to_string(*s.status);
    if (s.bytes_read || s.bytes_written) m += " R=" + with_commas(s.bytes_read) + ",W=" + with_commas(s.bytes_written);
    m += bracket_ms(s.elapsed_ns);
    if (s.callee_tx_id) m += "  -> callee #" + std::to_string(*s.callee_tx_id);
  } else if (s.kind == "HTTP_CALL") {
    m = "HTTP-CALL[" + s.text + "]";
    if (s.status) m += " status=" + std::to_string(*s.status);
    if (s.bytes_read || s.bytes_written) m += " R=" + with_commas(s.bytes_read) + ",W=" + with_commas(s.bytes_written);
    m += bracket_ms(s.elapsed_ns);
    if (s.callee_tx_id) m += "  -> callee #" + std::to_string(*s.callee_tx_id);
  } else if (s.kind == "DB_CONNECT") {
    m = "DB-CONNECT[" + s.text + "]" + bracket_ms(s.elapsed_ns);
  } else if (s.kind == "REDIS" || s.kind == "MEMCACHED") {
    m = s.kind + "[" + s.text + "]";
    if (std::string r = attr(s.attributes, "result"); !r.empty()) m += " " + r;
    else if (std::string r = attr(s.attributes, "reply"); !r.empty()) m += " reply=" + r;
    if (s.bytes_read || s.bytes_written) m += " R=" + with_commas(s.bytes_read) + ",W=" + with_commas(s.bytes_written);
    m += bracket_ms(s.elapsed_ns);
  } else if (s.kind == "DNS") {
    m = "DNS[" + s.text + "]";
    if (s.elapsed_ns) m += bracket_ms(s.elapsed_ns);
  } else {  // MESSAGE and kinds this viewer does not know yet
    m = s.kind == "MESSAGE" ? s.text : s.kind + (s.text.empty() ? "" : " " + s.text);
    if (s.elapsed_ns) m += bracket_ms(s.elapsed_ns);
  }
  if (!s.error.empty()) m += "  ERROR: " + s.error;
  return m;
}

std::string profile_header(const Profile& p) {
  std::string h;
  auto line = [&h](const char* k, const std::string& v) {
    if (v.empty()) return;
    char key[24];
    std::snprintf(key, sizeof key, "%-14s", k);
    h += key;
    h += v;
    h += '\n';
  };
  line("TXID", hex16(p.txid) + "   (store #" + std::to_string(p.tx.id) + ")");
  line("TRACE", p.trace_id);
  line("APPLICATION", p.tx.app + "   " + p.tx.name);
  line("AGENT", p.host + (p.program.empty() ? "" : " " + p.program) + " pid=" + std::to_string(p.pid) +
                    " tid=" + std::to_string(p.tid));
  if (attr(p.attributes, "values") == "raw")  // the agent kept values it masks by default (TXRAY_VALUES=raw)
    line("VALUES", "raw  (query strings, URL passwords and SQL values as the program sent them)");
  line("CLIENT", p.tx.client);
  line("START", date_clock_ms(p.start_ns));
  line("END", date_clock_ms(p.tx.end_ns));
  line("RESPONSE", format_ms(p.tx.elapsed_ns) + " ms   CPU " + format_ms(p.tx.cpu_ns) + " ms");
  if (p.agent_cost_ns) {
    // The agent's own cost (an estimate), and its application's mean over its latest transactions.
    std::string v = report::fmt_agent_cost(double(*p.agent_cost_ns),
                                           p.tx.elapsed_ns > 0 ? double(*p.agent_cost_ns) / double(p.tx.elapsed_ns) : 0);
    if (p.app_agent_cost)
      v += "   " + p.tx.app + " mean " + report::fmt_agent_cost(p.app_agent_cost->mean_cost_ns, p.app_agent_cost->share) +
           " over " + with_commas(p.app_agent_cost->transactions);
    line("AGENT COST", v);
  }
  line("SQL", format_ms(p.tx.sql_ns) + " ms (" + std::to_string(p.sql_count) + ")   FETCH " + format_ms(p.tx.fetch_ns) +
                  " ms   CALL " + format_ms(p.tx.call_ns) + " ms (" + std::to_string(p.call_count) + ")");
  line("STATUS", std::to_string(p.tx.status) + (p.tx.error.empty() ? "" : "   ERROR: " + p.tx.error));
  line("BYTES", "R=" + with_commas(p.bytes_read) + ",W=" + with_commas(p.bytes_written));
  line("USER-AGENT", attr(p.attributes, "user_agent"));
  if (p.caller_tx_id) line("CALLED BY", "#" + std::to_string(*p.caller_tx_id));
  return h;
}

std::string frame_text(const Frame& f, bool full) {
  char off[32];
  std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
  if (f.function.empty()) return f.module + off;
  return (full ? f.function : names::short_frame_name(f.function)) + " (" + f.module + off + ")";
}

std::string stack_text(const Step& s, bool full) {
  std::string out;
  for (const auto& f : s.stack) out += frame_text(f, full) + "\n";
  return out;
}

std::string profile_text(const Profile& p) {
  std::string out = profile_header(p);
  out += "\n[ NO ][  START_TIME  ][   GAP][ CPU_T] message\n";
  char buf[96];
  int64_t gaps = 0, cpus = 0;
  for (const auto& s : p.steps) {
    std::snprintf(buf, sizeof buf, "[%04d][%s][%6s][%6s] ", s.no, clock_ms(p.start_ns + s.start_offset_ns).c_str(),
                  format_ms(s.gap_ns).c_str(), format_ms(s.cpu_ns).c_str());
    out += buf;
    out += std::string(static_cast<size_t>(s.depth) * 2, ' ');
    out += step_message(s);
    out += '\n';
    // A failed or slow step's stack, under its row (as `txray show` prints it).
    for (const auto& f : s.stack)
      out += std::string(35 + static_cast<size_t>(s.depth) * 2, ' ') + "at " + frame_text(f) + "\n";
    gaps += s.gap_ns;
    cpus += s.cpu_ns;
  }
  for (const auto& m : p.summaries)
    out += "  (summarized) " + m.kind + " " + m.text + " x" + std::to_string(m.count) + bracket_ms(m.elapsed_ns) + "\n";
  out += "TOTAL[" + format_ms(gaps) + "][" + format_ms(cpus) + "]\n";
  return out;
}

std::vector<TimelineBar> timeline_layout(const Profile& p) {
  std::vector<TimelineBar> bars;
  const double total = static_cast<double>(std::max<int64_t>(1, p.tx.elapsed_ns));
  int64_t prev = 0;
  for (const auto& s : p.steps) {
    TimelineBar b;
    b.gap_begin = std::clamp(static_cast<double>(prev) / total, 0.0, 1.0);
    b.gap_end = std::clamp(static_cast<double>(s.start_offset_ns) / total, 0.0, 1.0);
    b.cpu_share = s.gap_ns > 0 ? std::clamp(static_cast<double>(s.cpu_ns) / static_cast<double>(s.gap_ns), 0.0, 1.0) : 0.0;
    b.call_begin = b.gap_end;
    b.is_call = s.elapsed_ns > 0;
    b.call_end = std::clamp(static_cast<double>(s.start_offset_ns + s.elapsed_ns) / total, 0.0, 1.0);
    b.depth = s.depth;
    bars.push_back(b);
    prev = s.start_offset_ns;
  }
  return bars;
}

}  // namespace txray::viewer
