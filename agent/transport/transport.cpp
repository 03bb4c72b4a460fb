#include "transport/transport.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

#include "cpu/clock.h"
#include "cpu/cpu_sampler.h"
#include "cpu/perf_sampler.h"
#include "core/transaction.h"
#include "core/config.h"
#include "core/counters.h"
#include "core/fd_table.h"
#include "core/unattributed.h"
#include "hooks/hook.h"
#include "transport/cpu_profile.h"
#include "transport/perf_drain.h"
#include "transport/stack_encode.h"
#include "transport/drop_windows.h"
#include "transport/encode.h"
#include "core/mpsc_queue.h"
#include "transport/sampler.h"
#include "transport/self_cost.h"
#include "transport/zmtp.h"

namespace txray::transport {
namespace {

constexpr size_t kMaxBatch = 256;                   // transactions per ZeroMQ message
constexpr uint64_t kConnectNs = 1'000'000'000;      // a connection attempt while the program runs
constexpr uint64_t kExitConnectNs = 20'000'000;     // ... and at exit (refused: microseconds; unreachable: this)
constexpr uint64_t kExitConnectCurveNs = 100'000'000;  // ... with CURVE: three round trips and the crypto
// Once connected at exit (the collector's socket accepted: it is there), its handshake may take longer:
// a collector on a loaded machine answered the greeting of 4 in 200 forked children after more than
// 20 ms, and their transactions were lost (tests/reliability/test_forks.py).
constexpr uint64_t kExitHandshakeNs = 250'000'000;
constexpr uint64_t kSendNs = 1'000'000'000;         // a batch the collector does not take in this time: dropped
constexpr uint64_t kReconnectNs = 100'000'000;      // between connection attempts (libzmq's reconnect_ivl)
constexpr uint64_t kHeartbeatNs = 1'000'000'000;    // counters-only batch when drops changed meanwhile
// The agent thread's turns: every 5 ms while transactions come (the queue is polled: pushing costs the
// host no system call), every 200 ms once nothing came for a second (kQuietTurns): an idle service is not
// woken 200 times a second by its agent. Going quiet, the thread says so (State::quiet) and the next push
// wakes it at once: the one system call a host thread makes here, once per quiet spell.
constexpr uint64_t kIdleSleepNs = 5'000'000;
constexpr uint64_t kQuietSleepNs = 200'000'000;
constexpr uint32_t kQuietTurns = 200;
constexpr uint64_t kRotateNs = 1'000'000'000;       // unattributed steps are sent about once a second
// A forked child whose first transaction ends this soon after the fork does not start the agent thread
// for it: most such children exit right away, and flush() sends for them on the exiting thread (a
// thread started in a fresh child cost 0.6-1.6 ms here, which doubled the time of fork-per-request
// services). The thread starts with the next transaction after this time, or never.
constexpr uint64_t kChildDeferNs = 100'000'000;

// Everything one process's transport owns. A forked child gets a fresh one; the parent's is abandoned
// (never freed in the child: its thread does not exist there).
struct State {
  MpscQueue<Transaction> queue;
  Identity id;
  std::atomic<int> thread_state{0};  // 0 not started, 1 running, 2 start failed, 3 sent by flush() itself
  std::atomic<bool> exit_requested{false};
  std::atomic<uint64_t> exit_deadline_ns{~0ull};  // flush(): no wait of the agent thread goes past it
  std::atomic<uint32_t> exited{0};
  std::atomic<uint32_t> wake{0};  // bumped by flush() and by a push ending a quiet spell: the wait ends at once
  std::atomic<bool> busy{false};  // the agent thread holds transactions it took from the queue
  // The agent thread's long wait (kQuietSleepNs) is on: a push wakes it. Its own cache line: every push
  // reads it, the agent thread writes it once per quiet spell.
  alignas(64) std::atomic<bool> quiet{false};
  std::atomic<uint64_t> quiet_spells{0}, woken_by_host{0};
  explicit State(size_t cap, const Identity& i) : queue(cap), id(i) {}
};

std::atomic<State*> g_state{nullptr};
std::atomic<bool> g_state_lazy{false};  // a forked child: g_state is made on first use
std::atomic<uint64_t> g_forked_at_ns{0};  // when this process was forked (0: not a forked child)
std::atomic<bool> g_exiting{false};       // begin_exit() was called: flush() sends on the exiting thread
}  // namespace

std::atomic<bool> g_held{false};

namespace {

// Waits while *word == seen, at most timeout_ns (a futex: no descriptor, no lock).
void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, uint64_t timeout_ns) {
  timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, seen, &ts, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

// CPU samples are symbolized with the agent's one symbolizer (stack_encode.h), as stacks are.
// A symbolizer lock that cannot be had (a forked child's copy held by the parent's agent thread) gives up
// for the rest of the batch: unnamed frames, never a hang.
cpu::Symbol resolve_symbol(uintptr_t ip, bool return_address, void* ctx) {
  bool* gave_up = static_cast<bool*>(ctx);
  sym::Frame f;
  if (*gave_up || !wire::try_symbolize(ip, return_address, &f)) {
    *gave_up = true;
    return {};
  }
  // "clock_gettime@@GLIBC_2.17" (a versioned .symtab name) -> "clock_gettime": one name per function.
  if (size_t at = f.function.find('@'); at != std::string::npos && at > 0) f.function.resize(at);
  return {std::move(f.function), f.module == "?" ? std::string() : std::move(f.module)};
}

// The counters only grow, so their sum changes exactly when one of them does. streams_unparsed is in it:
// a connection given up when no transaction follows (a pool's TLS handshake at start-up) is still told.
uint64_t drops_signature(const Counters& c) {
  return c.queue_full.load() + c.send_failed.load() + c.encode_failed.load() + c.internal_errors.load() +
         c.steps_summarized.load() + c.streams_unparsed.load();
}

// A transaction that begins in a quiet spell does not wake the agent thread, and its thread's perf ring
// fills meanwhile: the long wait lasts at most 10 sampling periods (the ring holds 24 samples).
uint64_t quiet_wait_ns() {
  if (!cpu::perf::active()) return kQuietSleepNs;
  uint64_t ten = uint64_t(config().cpu_sample_ms) * 10'000'000ull;
  return ten < kIdleSleepNs ? kIdleSleepNs : ten < kQuietSleepNs ? ten : kQuietSleepNs;
}

class Sender {
 public:
  explicit Sender(State* st)
      : st_(st), sampler_(config().sample_rate, uint64_t(config().sample_keep_ms) * 1'000'000) {}

  void run() {
    std::string err;
    endpoint_ok_ = parse_endpoint(config().collector, &ep_, &err);
    if (!endpoint_ok_) {
      debug_log("collector '%s' unusable: %s", config().collector.c_str(), err.c_str());
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    }
    if (endpoint_ok_ && !use_curve_keys()) {
      endpoint_ok_ = false;  // keys given but unusable: nothing is sent, never clear text in their place
      counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    }
    std::vector<Transaction*> batch;  // grows as needed: a forked child's exit sends one or two
    batch.reserve(8);
    uint64_t last_sent = 0, last_sig = drops_signature(counters()), last_rotate = clock::mono_ns();
    bool exit_windows_sent = false, exit_sampled_sent = false;
    uint32_t quiet_turns = 0;  // turns in a row with nothing to send and no sampled transaction running
    for (;;) {
      uint64_t work0 = thread_cpu();  // the agent's own cost: this iteration's work (self_cost.h)
      uint32_t wake = st_->wake.load(std::memory_order_acquire);
      st_->busy.store(true, std::memory_order_seq_cst);  // before popping: flush() must not miss a batch
      bool exiting = st_->exit_requested.load(std::memory_order_acquire);  // read before draining
      if (uint64_t t = clock::mono_ns(); t - last_rotate >= kRotateNs) {
        unattr::rotate(false);  // the unattributed steps of the last second, as one container
        cpu::check_host_signal();
        last_rotate = t;
      }
      // The perf sampler's rings: drained every turn (perf_drain.h); samples coming in keep turns short.
      bool sampling = cpu::perfdrain::poll();
      while (batch.size() < kMaxBatch)
        if (Transaction* t = st_->queue.pop()) {
          cpu::perfdrain::settle(*t);  // its samples, before anything looks at it
          batch.push_back(t);
        } else {
          break;
        }
      sampler_.filter(batch);  // head sampling: the fast successful ones left out are only counted
      uint64_t now = clock::mono_ns();
      uint64_t sig = drops_signature(counters());
      windows_.update(counters(), now, exiting);
      // At exit, drop windows the collector has not seen go out once more, if a connection is open
      // (never a connection attempt just for them: an exit with the collector away stays cheap).
      bool last_windows = exiting && !exit_windows_sent && windows_.changed() && push_.is_open();
      // Sampled-out counts still pending at exit go out once (one connection attempt, as a batch would).
      bool last_sampled = exiting && !exit_sampled_sent && !sampler_.pending().empty();
      if (!batch.empty() || last_windows || last_sampled ||
          ((sig != last_sig || windows_.want_send() || !sampler_.pending().empty()) && now - last_sent > kHeartbeatNs)) {
        if (exiting) exit_windows_sent = exit_sampled_sent = true;
        if (!batch.empty()) quiet_turns = 0;  // a counters-only heartbeat (once a second) is no activity
        bool encoded = send(batch, exiting);
        for (Transaction* t : batch) tx::recycle(t);  // back to begin()'s pool
        if (encoded && !batch.empty()) note_agent_work(thread_cpu() - work0);
        batch.clear();
        last_sent = now;
        last_sig = drops_signature(counters());
        continue;
      }
      if (exiting) break;
      st_->busy.store(false, std::memory_order_seq_cst);
      quiet_turns = sampling ? 0 : quiet_turns + 1;
      if (quiet_turns < kQuietTurns) {
        futex_wait(&st_->wake, wake, kIdleSleepNs);
        continue;
      }
      // Quiet: say so, then look at the queue once more (enqueue() pushes, then reads `quiet`: one of
      // the two sees the other), and wait long; a push or flush() changes `wake` and ends the wait.
      st_->quiet.store(true, std::memory_order_seq_cst);
      if (st_->queue.empty() && !st_->exit_requested.load(std::memory_order_seq_cst)) {
        st_->quiet_spells.fetch_add(1, std::memory_order_relaxed);
        futex_wait(&st_->wake, wake, quiet_wait_ns());
      }
      st_->quiet.store(false, std::memory_order_seq_cst);
    }
    // The kernel delivers what the socket holds after it is closed (and after the process exits).
    push_.close();
    st_->exited.store(1, std::memory_order_release);
    futex_wake(&st_->exited);
  }

 private:
  uint64_t bounded(uint64_t ns) const {
    uint64_t d = clock::mono_ns() + ns;
    uint64_t exit_d = st_->exit_deadline_ns.load(std::memory_order_acquire);
    return d < exit_d ? d : exit_d;
  }

  // A usable connection, opening one if the last attempt is long enough ago (at exit: always try once).
  bool connected(bool exiting) {
    if (push_.is_open()) {
      if (push_.check()) return true;
      note_down();
    }
    if (!endpoint_ok_) return false;
    uint64_t now = clock::mono_ns();
    if (!exiting && now < next_attempt_ns_) return false;  // a lost connection is retried at once
    uint64_t budget = exiting ? (curve_ ? kExitConnectCurveNs : kExitConnectNs) : kConnectNs;
    if (push_.open(ep_, bounded(budget), bounded(exiting ? kExitHandshakeNs : budget))) {
      if (down_) debug_log("connected to collector %s", config().collector.c_str());
      down_ = false;
      return true;
    }
    next_attempt_ns_ = clock::mono_ns() + kReconnectNs;
    note_down();
    return false;
  }

  // CURVE when TXRAY_SERVER_KEY is set (config.cpp read the keys as z85). False when keys were given but
  // cannot be used.
  bool use_curve_keys() {
    const Config& c = config();
    if (c.curve_unusable) return false;
    if (c.server_key.empty()) return true;
    uint8_t server[32], pub[32], sec[32];
    if (!z85_decode_key(c.server_key, server) || !z85_decode_key(c.client_secret_key, sec)) {
      debug_log("CURVE keys are not 40-character z85 keys");
      return false;
    }
    if (c.client_public_key.empty()) derive_public_key(sec, pub);
    else if (!z85_decode_key(c.client_public_key, pub)) return false;
    push_.use_curve(server, pub, sec);
    curve_ = true;
    return true;
  }

  void note_down() {
    if (!down_) debug_log("collector %s: %s", config().collector.c_str(), push_.error());
    // A descriptor the agent could not get, or one the program took over, is counted (internal_errors)
    // besides the transactions it costs (send_failed): the agents table shows why traces are missing.
    if (push_.descriptor_trouble()) counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
    down_ = true;
  }

  // True when the batch was encoded (its work is what note_agent_work() measures).
  bool send(const std::vector<Transaction*>& batch, bool exiting) {
    // No connection, none to be had now: counted without encoding (while the collector is away the
    // agent thread costs the host's CPUs next to nothing).
    if (!connected(exiting)) return not_sent(batch), false;
    bool gave_up = false;
    for (Transaction* t : batch)
      if (!t->cpu.samples.empty()) cpu::build_profile(*t, resolve_symbol, &gave_up);
    estimate_costs(batch);
    if (!encode_batch(st_->id, counters(), ++seq_, batch, &buf_, windows_.riding(), sent_tx_, &sampler_.pending(),
                      sampler_.active() ? config().sample_rate : 0)) {
      if (!batch.empty()) counters().drop(DropReason::encode_failed, batch.size(), clock::unix_ns());
      return false;
    }
    if (push_.send(buf_.bytes().data(), buf_.len, bounded(kSendNs))) {
      windows_.delivered(clock::mono_ns());
      sampler_.delivered();
      sent_tx_ += batch.size();
      return true;
    }
    not_sent(batch);
    return true;
  }

  // The agent's own cost of each transaction (self_cost.h): the host side from its counts, and a share
  // of the agent thread's work — the calibrated weight of encoding it, scaled by how the last batches'
  // measured work compared with their weights.
  void estimate_costs(const std::vector<Transaction*>& batch) {
    batch_weight_ = 0;
    for (Transaction* t : batch) {
      double w = selfcost::agent_thread_weight(*t);
      batch_weight_ += w;
      t->agent_thread_ns = uint64_t(w * work_scale_ + 0.5);
      uint64_t host = selfcost::host_estimate(*t);
      t->agent_cost_ns = host ? host + t->agent_thread_ns : 0;
    }
  }
  void note_agent_work(uint64_t cpu_ns) {
    if (batch_weight_ <= 0) return;
    double scale = double(cpu_ns) / batch_weight_;
    if (scale < 0.1) scale = 0.1;  // a descheduled or mis-read batch moves the estimate only so far
    if (scale > 20) scale = 20;
    work_scale_ += (scale - work_scale_) * 0.25;
  }
  static uint64_t thread_cpu() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
  }

  void not_sent(const std::vector<Transaction*>& batch) {
    if (batch.empty()) return;
    counters().drop(DropReason::send_failed, batch.size(), clock::unix_ns());
    debug_log("batch of %zu transactions not sent: %s", batch.size(), push_.error());
  }

  State* st_;
  Endpoint ep_;
  bool endpoint_ok_ = false;
  bool curve_ = false;
  ZmtpPush push_;
  bool down_ = false;
  uint64_t next_attempt_ns_ = 0;
  uint64_t seq_ = 0;
  BatchBuffer buf_;  // kept at its size between batches
  DropWindows windows_;
  HeadSampler sampler_;
  uint64_t sent_tx_ = 0;  // transactions in batches that went into a connection (Batch.sent_transactions)
  double batch_weight_ = 0;  // calibrated agent-thread weight of the batch being sent (self_cost.h)
  double work_scale_ = 1;    // measured agent-thread work / calibrated weight, smoothed over batches
};

void* thread_main(void* arg) {
  hooks::mark_agent_thread();
  pthread_setname_np(pthread_self(), "txray-agent");
  if (!take_private_fd_table(config().shared_fd_table, config().debug))
    debug_log("no private descriptor table (%s): the collector connection sits at the top of the program's",
              config().shared_fd_table ? "TXRAY_FD_TABLE=shared" : "unshare refused");
  // The agent's own unit costs on this host, before the first batch (a few ms of this thread's CPU).
  selfcost::calibrate();
  auto* st = static_cast<State*>(arg);
  Sender(st).run();
  return nullptr;
}

void start_thread(State* st) {
  int expected = 0;
  if (!st->thread_state.compare_exchange_strong(expected, 1)) return;
  // All signals blocked while creating it: the agent thread inherits a full mask, so the host's signals
  // always go to the host's threads (PITFALLS 8).
  int saved = errno;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  int rc = pthread_create(&th, &attr, thread_main, st);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    st->thread_state.store(2);
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
  }
  errno = saved;
}

void sink(Transaction* t) { enqueue(t); }

// Whether a first transaction should start the agent thread now (see kChildDeferNs, begin_exit()).
bool thread_wanted() {
  if (g_exiting.load(std::memory_order_acquire)) return false;
  uint64_t forked = g_forked_at_ns.load(std::memory_order_relaxed);
  return forked == 0 || clock::mono_ns() - forked >= kChildDeferNs;
}

// At exit, with no agent thread: the exiting thread does the agent thread's work itself — drains the
// queue, connects (20 ms at most; refused: microseconds), sends, closes — as an agent thread for the
// hooks (so its own calls are not traced), with its descriptor at the top of the program's table.
void send_on_this_thread(State* st, uint64_t deadline) {
  st->exit_deadline_ns.store(deadline, std::memory_order_release);
  st->exit_requested.store(true, std::memory_order_seq_cst);
  ThreadKind kind = hooks::t_kind;
  hooks::mark_agent_thread();
  Sender(st).run();
  hooks::t_kind = kind;
}

// The process's State; in a forked child, made on first use (after_fork_child).
State* state() {
  State* st = g_state.load(std::memory_order_acquire);
  if (__builtin_expect(st != nullptr, 1) || !g_state_lazy.load(std::memory_order_acquire)) return st;
  int saved = errno;
  auto* fresh = new (std::nothrow) State(config().queue_capacity, read_identity());
  errno = saved;
  if (!fresh) return nullptr;
  State* expected = nullptr;
  if (g_state.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return fresh;
  delete fresh;  // another thread made it first
  return expected;
}

}  // namespace

void init(const Identity& id) {
  g_state.store(new State(config().queue_capacity, id), std::memory_order_release);
  tx::set_sink(sink);
  cpu::perf::set_starter(start_for_samples);
}

void start_for_samples() {
  State* st = state();
  if (st && st->thread_state.load(std::memory_order_relaxed) == 0 && thread_wanted()) start_thread(st);
}

void enqueue(Transaction* t) {
  State* st = state();
  if (!st || st->exit_requested.load(std::memory_order_relaxed) || !st->queue.push(t)) {
    counters().drop(DropReason::queue_full, 1, clock::unix_ns());
    tx::recycle(t);
    return;
  }
  // The agent thread is in its long wait: wake it (push() was a sequentially consistent step, so this
  // read cannot miss a `quiet` set before the thread's last look at the queue).
  if (__builtin_expect(st->quiet.load(std::memory_order_seq_cst), 0) &&
      st->quiet.exchange(false, std::memory_order_acq_rel)) {
    st->woken_by_host.fetch_add(1, std::memory_order_relaxed);
    st->wake.fetch_add(1, std::memory_order_acq_rel);
    futex_wake(&st->wake);
  }
  if (__builtin_expect(st->thread_state.load(std::memory_order_relaxed) == 0, 0)) {
    if (thread_wanted()) start_thread(st);
    else if (!g_exiting.load(std::memory_order_relaxed) && !g_held.load(std::memory_order_relaxed))
      g_held.store(true, std::memory_order_relaxed);
  }
}

void start_held() {
  g_held.store(false, std::memory_order_relaxed);
  if (g_exiting.load(std::memory_order_acquire) || hooks::t_kind == ThreadKind::agent) return;
  State* st = g_state.load(std::memory_order_acquire);
  if (st && st->thread_state.load(std::memory_order_relaxed) == 0) start_thread(st);
}

IdleStats idle_stats() {
  IdleStats r;
  if (State* st = g_state.load(std::memory_order_acquire)) {
    r.quiet_spells = st->quiet_spells.load(std::memory_order_relaxed);
    r.woken_by_host = st->woken_by_host.load(std::memory_order_relaxed);
    r.quiet = st->quiet.load(std::memory_order_relaxed);
  }
  return r;
}

void begin_exit() { g_exiting.store(true, std::memory_order_release); }

bool flush(uint32_t timeout_ms, bool here_too) {
  State* st = g_state.load(std::memory_order_acquire);
  if (!st) return true;
  uint64_t deadline = clock::mono_ns() + uint64_t(timeout_ms) * 1'000'000;
  int expected = 0;
  if (st->thread_state.load() == 0) {
    if (st->queue.empty() || !here_too) return true;
    if (st->thread_state.compare_exchange_strong(expected, 3)) {
      send_on_this_thread(st, deadline);
      return true;
    }
  }
  if (st->thread_state.load() != 1) return true;
  st->exit_deadline_ns.store(deadline, std::memory_order_release);
  st->exit_requested.store(true, std::memory_order_seq_cst);
  // Everything already sent (or counted) and the thread idle: nothing to wait for. The kernel delivers
  // what the connection holds after the process is gone. A short-lived child that sent its one
  // transaction exits with no hand-over to the agent thread at all.
  if (st->queue.empty() && !st->busy.load(std::memory_order_seq_cst)) return true;
  st->wake.fetch_add(1, std::memory_order_acq_rel);
  futex_wake(&st->wake);
  while (!st->exited.load(std::memory_order_acquire)) {
    uint64_t now = clock::mono_ns();
    if (now >= deadline) return false;
    futex_wait(&st->exited, 0, deadline - now);
  }
  return true;
}

void after_fork_child() {
  counters().reset();
  cpu::perfdrain::after_fork_child();  // the parent's sample lists (its rings are not mapped here)
  // The child's copies of the parent's agent descriptors (in the shared table: its collector
  // connection): closed, so that the child's table holds nothing of the agent's and nothing the child
  // sends can interleave with the parent's stream. Its own connection opens on first use.
  std::vector<int> inherited;
  fds::for_each_used(0, (fds::kChunks << fds::kChunkBits) - 1, [&](int fd, FdSlot& s) {
    if (s.kind.load(std::memory_order_relaxed) == FdKind::agent) inherited.push_back(fd);
  });
  for (int fd : inherited) release_fd(fd);
  // The parent's State is abandoned on purpose (its thread does not exist here). The child's own is
  // made when it first sends: a child that execs or exits without a transaction (fork + exec, the
  // common case) pays nothing for it.
  g_state.store(nullptr, std::memory_order_release);
  g_held.store(false, std::memory_order_relaxed);  // the parent's queue, not this child's
  g_state_lazy.store(true, std::memory_order_release);
  g_forked_at_ns.store(clock::mono_ns(), std::memory_order_release);
  forget_private_fd_table();  // the child's own agent thread, if any, takes its own
}

const Identity& identity() {
  static Identity empty;
  State* st = state();
  return st ? st->id : empty;
}

}  // namespace txray::transport
