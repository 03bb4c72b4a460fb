// Agent configuration, read once from the environment (one prefix: TXRAY_). docs/agent.md lists each.
#pragma once

#include <cstdint>
#include <string>

#include "core/redact.h"

namespace txray {

enum class Mode : uint8_t { http, process, off };

struct Config {
  std::string collector = "tcp://127.0.0.1:7878";  // TXRAY_COLLECTOR
  std::string app;                                 // TXRAY_APP (default: program name)
  Mode mode = Mode::http;                          // TXRAY_MODE = http | process | off
  uint32_t max_steps = 1000;                       // TXRAY_MAX_STEPS (rows per transaction, >= 3)
  uint32_t queue_capacity = 4096;                  // TXRAY_QUEUE (finished transactions, >= 2)
  bool debug = false;                              // TXRAY_DEBUG=1: agent problems on stderr
  // Head sampling (docs/agent.md): the share of fast, successful transactions sent; failed ones and those
  // at or above sample_keep_ms always go. The others are only counted (Batch.sampled_out).
  double sample_rate = 1.0;                        // TXRAY_SAMPLE_RATE, 0..1
  uint32_t sample_keep_ms = 100;                   // TXRAY_SAMPLE_KEEP_MS: never sampled out at/above this
  // CPU samples of transaction threads (cpu/cpu_sampler.h): TXRAY_CPU_SAMPLES=0 turns them off.
  bool cpu_samples = true;                         // TXRAY_CPU_SAMPLES = 1 | 0
  uint32_t cpu_sample_ms = 10;                     // TXRAY_CPU_SAMPLE_MS: ms of thread CPU between samples
  uint32_t cpu_samples_max = 256;                  // TXRAY_CPU_SAMPLES_MAX: samples kept per transaction
  // TXRAY_CPU_SAMPLE_ARM=keep (default): a thread's timer stays armed between transactions (a sample
  // outside one is ignored; after 10 such in a row the timer is stopped until the next transaction);
  // =tx: armed at each begin and disarmed at each end (+3 us per transaction: docs/performance.md).
  bool cpu_sample_keep_armed = true;
  int cpu_sample_signal = 0;                       // TXRAY_CPU_SAMPLE_SIGNAL: the signal (0 = SIGRTMAX-3)
  // TXRAY_CPU_SAMPLER (docs/stacks.md "CPU samples: two samplers"): auto = perf_event_open when the probe
  // at start succeeds, else the signal timer; perf / signal: that one only (perf refused: off).
  enum class CpuSampler : uint8_t { automatic, perf, signal };
  CpuSampler cpu_sampler = CpuSampler::automatic;
  uint32_t cpu_stack_kb = 8;                       // TXRAY_CPU_STACK_KB: user stack copied per perf sample (1..60)
  // TXRAY_CPU_CLOCK (cpu/clock.h "the switch-checked CPU clock"): auto = a thread with a perf ring reads
  // its CPU time from the wall clock while the ring's page says it has not been switched out; syscall =
  // always CLOCK_THREAD_CPUTIME_ID.
  bool fast_cpu_clock = true;
  bool shared_fd_table = false;  // TXRAY_FD_TABLE=shared: the agent's connection in the program's table
  // CURVE (docs/security.md): each a 40-character z85 key, given in the variable or in the file it names.
  std::string server_key;         // TXRAY_SERVER_KEY: the collector's public key; empty: no CURVE
  std::string client_secret_key;  // TXRAY_CLIENT_SECRET_KEY: this agent's secret key
  std::string client_public_key;  // TXRAY_CLIENT_PUBLIC_KEY (optional: derived from the secret key)
  // A key was given but cannot be used: the agent sends nothing rather than sending in clear text.
  bool curve_unusable = false;
  // Stacks of failed and slow steps (stack_capture.h, docs/stacks.md).
  bool stacks = true;        // TXRAY_STACKS=0: no stacks at all
  uint32_t stack_ms = 100;   // TXRAY_STACK_MS: a call step this long (ms) gets a stack; 0: failed steps only
  // What values are kept (core/redact.h): TXRAY_VALUES, TXRAY_KEEP_QUERY, TXRAY_MASK_PATH.
  redact::Policy redaction;
  std::string problems;  // what could not be parsed (printed when debug is on)
};

// Parses a configuration from a getenv-like function (tests pass their own).
Config parse_config(const char* (*get)(const char*));

// The process-wide configuration (set once by the agent's constructor; defaults before that).
const Config& config();
void set_config(const Config& c);

const char* mode_name(Mode m);

// Prints "txray-agent: <msg>" on stderr when TXRAY_DEBUG is on. Not for hot paths.
void debug_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace txray
