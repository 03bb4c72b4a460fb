#include "core/config.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace txray {
namespace {

Config* g_config = nullptr;

bool parse_u32(const char* s, uint32_t lo, uint32_t hi, uint32_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = uint32_t(v);
  return true;
}

constexpr size_t kZ85KeyChars = 40;

bool is_z85_key(const std::string& s) {
  static const char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (s.size() != kZ85KeyChars) return false;
  for (char ch : s)
    if (!std::strchr(kAlphabet, ch) || ch == '\0') return false;
  return true;
}

// A key as TXRAY_*_KEY gives it: the path of a key file (as `txray keygen` writes them: the first line
// holding a key; other lines are '#' comments), or else the z85 text itself. The file is tried first: a
// path of 40 characters can look like a z85 key. "" when unusable.
std::string read_key(const char* value) {
  FILE* f = std::fopen(value, "re");
  if (!f) return is_z85_key(value) ? std::string(value) : std::string();
  char line[256];
  std::string key;
  while (std::fgets(line, sizeof line, f)) {
    char* p = line;
    while (*p == ' ' || *p == '\t') ++p;
    std::string word(p, std::strcspn(p, " \t\r\n"));
    // No z85 key starts with '#' (its first group would pass 32 bits): such a line is a comment.
    if (is_z85_key(word)) {
      key = word;
      break;
    }
    if (!word.empty() && word[0] != '#') break;  // neither key nor comment
  }
  std::fclose(f);
  return key;
}

}  // namespace

Config parse_config(const char* (*get)(const char*)) {
  Config c;
  if (const char* v = get("TXRAY_COLLECTOR"); v && *v) c.collector = v;
  if (const char* v = get("TXRAY_APP"); v && *v) c.app = v;
  if (const char* v = get("TXRAY_MODE"); v && *v) {
    if (!std::strcmp(v, "http")) c.mode = Mode::http;
    else if (!std::strcmp(v, "process")) c.mode = Mode::process;
    else if (!std::strcmp(v, "off")) c.mode = Mode::off;
    else c.problems += std::string("TXRAY_MODE='") + v + "' is not http|process|off (using http); ";
  }
  if (const char* v = get("TXRAY_MAX_STEPS"); v && *v && !parse_u32(v, 3, 1000000, &c.max_steps))
    c.problems += std::string("TXRAY_MAX_STEPS='") + v + "' is not a number in 3..1000000; ";
  if (const char* v = get("TXRAY_SAMPLE_RATE"); v && *v) {
    char* end = nullptr;
    double r = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(r >= 0 && r <= 1)) c.problems += std::string("TXRAY_SAMPLE_RATE='") + v + "' is not a number in 0..1; ";
    else c.sample_rate = r;
  }
  if (const char* v = get("TXRAY_SAMPLE_KEEP_MS"); v && *v && !parse_u32(v, 0, 86400000, &c.sample_keep_ms))
    c.problems += std::string("TXRAY_SAMPLE_KEEP_MS='") + v + "' is not a number of ms in 0..86400000; ";
  if (const char* v = get("TXRAY_QUEUE"); v && *v && !parse_u32(v, 2, 1u << 22, &c.queue_capacity))
    c.problems += std::string("TXRAY_QUEUE='") + v + "' is not a number in 2..4194304; ";
  if (const char* v = get("TXRAY_FD_TABLE"); v && *v) {
    if (!std::strcmp(v, "shared")) c.shared_fd_table = true;
    else if (std::strcmp(v, "private") != 0) c.problems += std::string("TXRAY_FD_TABLE='") + v + "' is not private|shared; ";
  }
  if (const char* v = get("TXRAY_CPU_SAMPLES"); v && *v) {
    if (!std::strcmp(v, "0")) c.cpu_samples = false;
    else if (std::strcmp(v, "1") != 0) c.problems += std::string("TXRAY_CPU_SAMPLES='") + v + "' is not 0|1; ";
  }
  if (const char* v = get("TXRAY_CPU_SAMPLE_MS"); v && *v && !parse_u32(v, 1, 60000, &c.cpu_sample_ms))
    c.problems += std::string("TXRAY_CPU_SAMPLE_MS='") + v + "' is not a number in 1..60000; ";
  if (const char* v = get("TXRAY_CPU_SAMPLES_MAX"); v && *v && !parse_u32(v, 1, 4096, &c.cpu_samples_max))
    c.problems += std::string("TXRAY_CPU_SAMPLES_MAX='") + v + "' is not a number in 1..4096; ";
  if (const char* v = get("TXRAY_CPU_SAMPLE_ARM"); v && *v) {
    if (!std::strcmp(v, "keep")) c.cpu_sample_keep_armed = true;
    else if (!std::strcmp(v, "tx")) c.cpu_sample_keep_armed = false;
    else c.problems += std::string("TXRAY_CPU_SAMPLE_ARM='") + v + "' is not tx|keep; ";
  }
  if (const char* v = get("TXRAY_CPU_SAMPLE_SIGNAL"); v && *v) {
    uint32_t sig = 0;
    if (parse_u32(v, 1, 64, &sig)) c.cpu_sample_signal = int(sig);
    else c.problems += std::string("TXRAY_CPU_SAMPLE_SIGNAL='") + v + "' is not a signal number; ";
  }
  if (const char* v = get("TXRAY_CPU_SAMPLER"); v && *v) {
    if (!std::strcmp(v, "auto")) c.cpu_sampler = Config::CpuSampler::automatic;
    else if (!std::strcmp(v, "perf")) c.cpu_sampler = Config::CpuSampler::perf;
    else if (!std::strcmp(v, "signal")) c.cpu_sampler = Config::CpuSampler::signal;
    else c.problems += std::string("TXRAY_CPU_SAMPLER='") + v + "' is not auto|perf|signal; ";
  }
  if (const char* v = get("TXRAY_CPU_CLOCK"); v && *v) {
    if (!std::strcmp(v, "auto")) c.fast_cpu_clock = true;
    else if (!std::strcmp(v, "syscall")) c.fast_cpu_clock = false;
    else c.problems += std::string("TXRAY_CPU_CLOCK='") + v + "' is not auto|syscall; ";
  }
  if (const char* v = get("TXRAY_CPU_STACK_KB"); v && *v && !parse_u32(v, 1, 60, &c.cpu_stack_kb))
    c.problems += std::string("TXRAY_CPU_STACK_KB='") + v + "' is not a number in 1..60; ";
  if (const char* v = get("TXRAY_STACKS"); v && *v && !std::strcmp(v, "0")) c.stacks = false;
  if (const char* v = get("TXRAY_STACK_MS"); v && *v && !parse_u32(v, 0, 86'400'000, &c.stack_ms))
    c.problems += std::string("TXRAY_STACK_MS='") + v + "' is not a number of ms (using 100); ";
  if (const char* v = get("TXRAY_DEBUG"); v && *v && std::strcmp(v, "0") != 0) c.debug = true;
  for (auto [name, key] : {std::pair{"TXRAY_SERVER_KEY", &c.server_key}, {"TXRAY_CLIENT_SECRET_KEY", &c.client_secret_key},
                           {"TXRAY_CLIENT_PUBLIC_KEY", &c.client_public_key}}) {
    const char* v = get(name);
    if (!v || !*v) continue;
    *key = read_key(v);
    if (key->empty()) {
      c.problems += std::string(name) + " is neither a z85 key nor a readable key file; ";
      c.curve_unusable = true;
    }
  }
  // Client keys without the server's, or the server's without a secret key, cannot make a CURVE
  // connection; sending in clear text instead would defeat the point of giving keys.
  if (!c.curve_unusable && (!c.client_secret_key.empty() || !c.client_public_key.empty()) && c.server_key.empty()) {
    c.problems += "TXRAY_CLIENT_*_KEY given without TXRAY_SERVER_KEY; ";
    c.curve_unusable = true;
  }
  if (!c.curve_unusable && !c.server_key.empty() && c.client_secret_key.empty()) {
    c.problems += "TXRAY_SERVER_KEY given without TXRAY_CLIENT_SECRET_KEY; ";
    c.curve_unusable = true;
  }
  if (c.curve_unusable) c.problems += "the agent sends nothing (CURVE keys unusable); ";
  // What values are kept (core/redact.h). TXRAY_MASK_QUERY=0, the older way to keep query values, and
  // TXRAY_SQL=raw keep values too, so they also mark every transaction values=raw.
  c.redaction = redact::parse(get("TXRAY_VALUES"), get("TXRAY_KEEP_QUERY"), get("TXRAY_MASK_PATH"), &c.problems);
  if (const char* v = get("TXRAY_MASK_QUERY");
      v && (!std::strcmp(v, "0") || !std::strcmp(v, "false") || !std::strcmp(v, "off") || !std::strcmp(v, "no")))
    c.redaction.raw_query = c.redaction.marked = true;
  if (const char* v = get("TXRAY_SQL"); v && !std::strcmp(v, "raw")) c.redaction.marked = true;
  return c;
}

const Config& config() {
  static Config defaults;
  return g_config ? *g_config : defaults;
}

void set_config(const Config& c) {
  // Set once at start-up (before any thread of the agent runs); never freed: hooks may run during exit.
  g_config = new Config(c);
  redact::set_policy(c.redaction);
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::http: return "http";
    case Mode::process: return "process";
    case Mode::off: return "off";
  }
  return "?";
}

void debug_log(const char* fmt, ...) {
  if (!config().debug) return;
  int saved = errno;
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "txray-agent[%d]: ", int(getpid()));
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && size_t(n) < sizeof buf) n += std::vsnprintf(buf + n, sizeof buf - size_t(n), fmt, ap);
  va_end(ap);
  if (n > int(sizeof buf) - 2) n = int(sizeof buf) - 2;
  if (n > 0) {
    buf[n++] = '\n';
    ssize_t w = ::write(2, buf, size_t(n));
    (void)w;
  }
  errno = saved;
}

}  // namespace txray
