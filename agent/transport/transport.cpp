#include "transport.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <zmq.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "../core/clock.h"
#include "../core/config.h"
#include "../core/counters.h"
#include "../core/unattributed.h"
#include "../hooks/hook.h"
#include "encode.h"
#include "mpsc_queue.h"

namespace txray::transport {
namespace {

constexpr size_t kMaxBatch = 256;            // transactions per ZeroMQ message
constexpr int kLingerMs = 200;               // bounded wait for unsent messages at close (PITFALLS 11)
constexpr int kSndHwm = 64;                  // batches queued in libzmq at most
constexpr uint64_t kConnectGraceNs = 250'000'000;  // first sends may wait this long for the connection
constexpr uint64_t kHeartbeatNs = 1'000'000'000;   // counters-only batch when drops changed meanwhile
constexpr long kIdleSleepNs = 5'000'000;
constexpr uint64_t kRotateNs = 1'000'000'000;     // unattributed steps are sent about once a second

// Everything one process's transport owns. A forked child gets a fresh one; the parent's is abandoned
// (never freed in the child: its ZeroMQ objects belong to threads that do not exist there).
struct State {
  MpscQueue<Transaction> queue;
  Identity id;
  std::atomic<int> thread_state{0};  // 0 not started, 1 running, 2 start failed
  std::atomic<bool> exit_requested{false};
  std::atomic<bool> exited{false};
  explicit State(size_t cap, const Identity& i) : queue(cap), id(i) {}
};

std::atomic<State*> g_state{nullptr};

// The counters only grow, so their sum changes exactly when one of them does.
uint64_t drops_signature(const Counters& c) {
  return c.queue_full.load() + c.send_failed.load() + c.encode_failed.load() + c.internal_errors.load() +
         c.steps_summarized.load();
}

class Sender {
 public:
  explicit Sender(State* st) : st_(st) {}

  void run() {
    open_socket();
    std::vector<Transaction*> batch;
    batch.reserve(kMaxBatch);
    uint64_t last_sent = 0, last_sig = drops_signature(counters()), last_rotate = clock::mono_ns();
    for (;;) {
      bool exiting = st_->exit_requested.load(std::memory_order_acquire);  // read before draining
      if (uint64_t t = clock::mono_ns(); t - last_rotate >= kRotateNs) {
        unattr::rotate(false);  // the unattributed steps of the last second, as one container
        last_rotate = t;
      }
      while (batch.size() < kMaxBatch)
        if (Transaction* t = st_->queue.pop()) batch.push_back(t);
        else break;
      uint64_t now = clock::mono_ns();
      uint64_t sig = drops_signature(counters());
      if (!batch.empty() || (sig != last_sig && now - last_sent > kHeartbeatNs)) {
        send(batch);
        for (Transaction* t : batch) delete t;
        batch.clear();
        last_sent = now;
        last_sig = drops_signature(counters());
        continue;
      }
      if (exiting) break;
      timespec ts{0, kIdleSleepNs};
      nanosleep(&ts, nullptr);
    }
    close_socket();
    st_->exited.store(true, std::memory_order_release);
  }

 private:
  void open_socket() {
    ctx_ = zmq_ctx_new();
    if (!ctx_) return fail("zmq_ctx_new");
    zmq_ctx_set(ctx_, ZMQ_IO_THREADS, 1);
    sock_ = zmq_socket(ctx_, ZMQ_PUSH);
    if (!sock_) return fail("zmq_socket");
    int linger = kLingerMs, immediate = 1, hwm = kSndHwm;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    // With IMMEDIATE nothing queues while the collector is away: failures are counted right away.
    zmq_setsockopt(sock_, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    zmq_setsockopt(sock_, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (!set_curve_keys()) {
      zmq_close(sock_);
      sock_ = nullptr;
      return fail(nullptr);
    }
    if (zmq_connect(sock_, config().collector.c_str()) != 0) {
      debug_log("cannot connect to collector '%s': %s", config().collector.c_str(), zmq_strerror(zmq_errno()));
      zmq_close(sock_);
      sock_ = nullptr;
      return fail(nullptr);
    }
    opened_ns_ = clock::mono_ns();
  }

  // CURVE client keys when TXRAY_SERVER_KEY is set (config.cpp read and checked them). False when keys
  // were given but cannot be used: then nothing is sent, never clear text in their place.
  bool set_curve_keys() {
    const Config& c = config();
    if (c.curve_unusable) return false;
    if (c.server_key.empty()) return true;
    std::string pub = c.client_public_key;
    if (pub.empty()) {
      char derived[41];
      if (zmq_curve_public(derived, c.client_secret_key.c_str()) != 0) {
        debug_log("cannot derive the public key from TXRAY_CLIENT_SECRET_KEY: %s", zmq_strerror(zmq_errno()));
        return false;
      }
      pub = derived;
    }
    // z85 keys are passed with their terminating NUL (41 bytes), as zmq_setsockopt expects.
    if (zmq_setsockopt(sock_, ZMQ_CURVE_SERVERKEY, c.server_key.c_str(), 41) != 0 ||
        zmq_setsockopt(sock_, ZMQ_CURVE_PUBLICKEY, pub.c_str(), 41) != 0 ||
        zmq_setsockopt(sock_, ZMQ_CURVE_SECRETKEY, c.client_secret_key.c_str(), 41) != 0) {
      debug_log("CURVE keys refused by libzmq: %s", zmq_strerror(zmq_errno()));
      return false;
    }
    return true;
  }

  void fail(const char* what) {
    if (what) debug_log("%s failed: %s", what, zmq_strerror(zmq_errno()));
    counters().internal_errors.fetch_add(1, std::memory_order_relaxed);
  }

  void send(const std::vector<Transaction*>& batch) {
    if (!sock_) {
      counters().send_failed.fetch_add(batch.size(), std::memory_order_relaxed);
      return;
    }
    if (!encode_batch(st_->id, counters(), ++seq_, batch, &buf_)) {
      counters().encode_failed.fetch_add(batch.size(), std::memory_order_relaxed);
      return;
    }
    if (zmq_send(sock_, buf_.data(), buf_.size(), ZMQ_DONTWAIT) >= 0) return;
    // Right after connecting the connection may still be in progress (a short-lived program sends its
    // only batch then): wait for it a bounded time. Later, a refused send means the collector is away:
    // count and move on.
    uint64_t since = clock::mono_ns() - opened_ns_;
    if (zmq_errno() == EAGAIN && since < kConnectGraceNs) {
      zmq_pollitem_t item{sock_, 0, ZMQ_POLLOUT, 0};
      long wait_ms = long((kConnectGraceNs - since) / 1'000'000) + 1;
      if (zmq_poll(&item, 1, wait_ms) > 0 && zmq_send(sock_, buf_.data(), buf_.size(), ZMQ_DONTWAIT) >= 0) return;
    }
    if (!batch.empty()) {
      counters().send_failed.fetch_add(batch.size(), std::memory_order_relaxed);
      debug_log("batch of %zu transactions not sent: %s", batch.size(), zmq_strerror(zmq_errno()));
    }
  }

  void close_socket() {
    if (sock_) zmq_close(sock_);
    // zmq_ctx_term waits for the linger of unsent messages: bounded by kLingerMs.
    if (ctx_) zmq_ctx_term(ctx_);
    sock_ = ctx_ = nullptr;
  }

  State* st_;
  void* ctx_ = nullptr;
  void* sock_ = nullptr;
  uint64_t opened_ns_ = 0;
  uint64_t seq_ = 0;
  std::string buf_;
};

void* thread_main(void* arg) {
  hooks::mark_agent_thread();
  pthread_setname_np(pthread_self(), "txray-agent");
  auto* st = static_cast<State*>(arg);
  Sender(st).run();
  return nullptr;
}

void start_thread(State* st) {
  int expected = 0;
  if (!st->thread_state.compare_exchange_strong(expected, 1)) return;
  // All signals blocked while creating it: the agent thread (and libzmq's threads, which it creates)
  // inherit a full mask, so the host's signals always go to the host's threads (PITFALLS 8).
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

}  // namespace

void init(const Identity& id) {
  g_state.store(new State(config().queue_capacity, id), std::memory_order_release);
  tx::set_sink(sink);
}

void enqueue(Transaction* t) {
  State* st = g_state.load(std::memory_order_acquire);
  if (!st || st->exit_requested.load(std::memory_order_relaxed) || !st->queue.push(t)) {
    counters().queue_full.fetch_add(1, std::memory_order_relaxed);
    delete t;
    return;
  }
  if (__builtin_expect(st->thread_state.load(std::memory_order_relaxed) == 0, 0)) start_thread(st);
}

bool flush(uint32_t timeout_ms) {
  State* st = g_state.load(std::memory_order_acquire);
  if (!st || st->thread_state.load() != 1) return true;
  st->exit_requested.store(true, std::memory_order_release);
  uint64_t deadline = clock::mono_ns() + uint64_t(timeout_ms) * 1'000'000;
  while (!st->exited.load(std::memory_order_acquire)) {
    if (clock::mono_ns() > deadline) return false;
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
  return true;
}

void after_fork_child(const Identity& id) {
  counters().reset();
  // The parent's State is abandoned on purpose (its thread does not exist here).
  g_state.store(new State(config().queue_capacity, id), std::memory_order_release);
}

const Identity& identity() {
  static Identity empty;
  State* st = g_state.load(std::memory_order_acquire);
  return st ? st->id : empty;
}

}  // namespace txray::transport
