#include "transport/self_cost.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <vector>

#include "core/attribution.h"
#include "cpu/clock.h"
#include "core/fd_table.h"
#include "protocols/http1/http_conn.h"
#include "cpu/perf_sampler.h"
#include "protocols/dispatch/socket_events.h"
#include "core/transaction.h"
#include "transport/encode.h"
#include "core/mpsc_queue.h"

namespace txray::selfcost {
namespace {

Units g_units;  // written once by calibrate() on the agent thread before its first batch; read there only
bool g_calibrated = false;

// This thread's CPU time, read directly (clock::thread_cpu_ns may be a test's clock).
uint64_t cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

constexpr int kReps = 5;

// Median over kReps repetitions of fn(), which returns the CPU ns of one repetition and how many units
// it ran: ns per unit.
template <typename Fn>
double median_per_unit(Fn fn) {
  double v[kReps];
  for (int r = 0; r < kReps; ++r) {
    uint64_t units = 0;
    uint64_t ns = fn(&units);
    v[r] = units ? double(ns) / double(units) : 0;
  }
  std::sort(v, v + kReps);
  return v[kReps / 2];
}

// A typical small request head (what curl or wrk send) and response.
constexpr char kHead[] =
    "GET /calibrate?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
constexpr char kResponse[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok";

constexpr int kTxLoop = 48;     // requests per repetition (~3 us each here)
constexpr int kRowLoop = 64;    // rows per repetition
constexpr int kIoLoop = 2000;   // follow paths per repetition
constexpr int kSysLoop = 100;   // system calls per repetition

// Host side of kTxLoop requests on a private connection (fd -1: no descriptor of the program's is
// touched); the finished transactions (kept alive by an extra reference) go through a private ring.
void run_requests(std::vector<Transaction*>* out, uint64_t* host_ns) {
  HttpConn conn;
  conn.reset("127.0.0.1:40000", -1);
  MpscQueue<Transaction> ring(kTxLoop * 2);
  out->clear();
  uint64_t t0 = cpu_now();
  for (int i = 0; i < kTxLoop; ++i) {
    conn.on_read(kHead, sizeof kHead - 1);
    Transaction* t = conn.tx;
    if (!t) break;
    t->refs.fetch_add(1, std::memory_order_relaxed);  // end() must not hand it to the sink
    conn.on_write(kResponse, sizeof kResponse - 1);
    ring.push(t);
  }
  *host_ns = cpu_now() - t0;
  while (Transaction* t = ring.pop()) out->push_back(t);
  conn.on_close();
  tx::make_current(nullptr);  // request_began made them this thread's current one
  attr::t_window_fd = -1;
}

// A calibration transaction lets go of its perf ring's reference before it is deleted: deleted with the
// reference held, the agent thread's own ring looked "in flight" for ever, and the thread never went into
// its long wait (transport.cpp). Deleted, not recycled into begin()'s pool: handed to the host's threads,
// these transactions (allocated here, on the agent thread) made nginx's own mallocs dearer for the rest of
// its life (+470 instructions per request in libc's _int_malloc and unlink_chunk, bench/nginx_static
// instructions.sh).
void let_go(Transaction* t) {
  if (t->cpu.ring) {
    cpu::perf::on_end(&t->cpu, t->last_row_mono_ns);  // the rows' one never ended: its ring still names it
    cpu::perf::release(&t->cpu);
  }
  delete t;
}

}  // namespace

void calibrate() {
  if (g_calibrated) return;  // a forked child keeps its parent's units
  g_calibrated = true;
  int saved = errno;
  uint64_t start = cpu_now();
  Units u;

  u.cpu_clock_ns = median_per_unit([](uint64_t* n) {
    uint64_t t0 = cpu_now();
    for (int i = 0; i < kSysLoop; ++i) cpu_now();
    *n = kSysLoop + 1;  // the loop's reads and the closing one
    return cpu_now() - t0;
  });

  // Requests: host side, then the agent thread's part (encode in batches of kTxLoop, free).
  std::vector<Transaction*> txs;
  txs.reserve(kTxLoop);
  BatchBuffer buf;  // as the transport's
  Identity id;
  Counters c;
  double agent_tx[kReps];
  double host_tx[kReps];
  double host_tx_fast[kReps];
  bool fast_reads_seen = false;
  for (int r = 0; r < kReps; ++r) {
    // The units price every CPU clock read as a system call: the loop runs with this thread's reads
    // forced to it (its calibration transactions may have given it a perf ring, cpu/clock.h).
    uint64_t host = 0;
    clock::force_syscall_on_this_thread(true);
    run_requests(&txs, &host);
    clock::force_syscall_on_this_thread(false);
    uint64_t t0 = cpu_now();
    encode_batch(id, c, 1, txs, &buf);
    for (Transaction* t : txs) let_go(t);
    uint64_t agent = cpu_now() - t0;
    size_t n = txs.size() ? txs.size() : 1;
    host_tx[r] = double(host) / double(n);
    agent_tx[r] = double(agent) / double(n);
    // The same requests with the reads switch-checked where this thread can: what one such read saves,
    // in the context of a request (more than the system call's own price in a loop: its entry and exit
    // also cost the code around it its caches).
    uint64_t fast = 0;
    double fast_reads = 0;
    run_requests(&txs, &fast);
    for (Transaction* t : txs) fast_reads += double(t->rows) - double(t->cpu_clock_syscalls);
    for (Transaction* t : txs) let_go(t);
    host_tx_fast[r] = fast_reads > 0 ? double(fast) / double(n) : host_tx[r];
    if (fast_reads > 0) fast_reads_seen = true;
  }
  std::sort(host_tx, host_tx + kReps);
  std::sort(host_tx_fast, host_tx_fast + kReps);
  std::sort(agent_tx, agent_tx + kReps);
  u.tx_ns = host_tx[kReps / 2];
  u.encode_tx_ns = agent_tx[kReps / 2];
  // Two reads per request (START and END): the saving per switch-checked read.
  u.fast_read_saving_ns = fast_reads_seen ? std::max(0.0, (u.tx_ns - host_tx_fast[kReps / 2]) / 2) : 0;

  // Rows: the recorder adding MESSAGE rows to a private transaction, then encoding it.
  double enc_row[kReps];
  int rep = 0;
  u.row_ns = median_per_unit([&](uint64_t* n) {
    Transaction* t = tx::begin("calibrate", "api");
    t->max_rows = kRowLoop * 2;
    t->steps.reserve(kRowLoop + 2);
    clock::force_syscall_on_this_thread(true);
    uint64_t t0 = cpu_now();
    for (int i = 0; i < kRowLoop; ++i) rec::add(t, StepKind::MESSAGE, "calibration row");
    uint64_t ns = cpu_now() - t0;
    clock::force_syscall_on_this_thread(false);
    std::vector<Transaction*> one{t};
    uint64_t e0 = cpu_now();
    encode_batch(id, c, 1, one, &buf);
    enc_row[rep++ % kReps] = double(cpu_now() - e0) / kRowLoop;
    let_go(t);
    *n = kRowLoop;
    return ns;
  });
  std::sort(enc_row, enc_row + kReps);
  u.encode_row_ns = enc_row[kReps / 2];
  // A folded step is a row without the CPU clock read (and without its encoding: it is summed).
  u.folded_ns = std::max(0.0, u.row_ns - u.cpu_clock_ns);

  // The follow path of a read/write on a followed connection with nothing to record: the fd slot's byte
  // counter, the connection's guard (the HTTP bookkeeping of the bytes is in tx_ns).
  u.io_ns = median_per_unit([](uint64_t* n) {
    FdSlot slot;
    HttpConn conn;
    conn.reset("127.0.0.1:40000", -1);
    slot.conn.store(&conn, std::memory_order_relaxed);
    slot.kind.store(FdKind::inbound, std::memory_order_relaxed);
    uint64_t t0 = cpu_now();
    for (int i = 0; i < kIoLoop; ++i) {
      FdKind k = slot.kind.load(std::memory_order_relaxed);
      if (k == FdKind::none) break;
      slot.add_written(2);
      sock::inbound_write(&slot, "ok", 2);
    }
    uint64_t ns = cpu_now() - t0;
    slot.conn.store(nullptr, std::memory_order_relaxed);
    *n = kIoLoop;
    return ns;
  });

  // A system call the agent makes itself in a hook (the connect hook's getsockopt and getsockname).
  u.syscall_ns = median_per_unit([](uint64_t* n) {
    int type = 0;
    socklen_t len = sizeof type;
    uint64_t t0 = cpu_now();
    for (int i = 0; i < kSysLoop; ++i) getsockopt(-1, SOL_SOCKET, SO_TYPE, &type, &len);
    *n = kSysLoop;
    return cpu_now() - t0;
  });

  u.calibration_ns = cpu_now() - start;
  g_units = u;
  errno = saved;
}

const Units& units() { return g_units; }

uint64_t host_estimate(const Transaction& t) {
  const Units& u = g_units;
  if (!u.valid()) return 0;
  uint64_t folded = 0, sockets = 0;
  for (const auto& s : t.summary) folded += s.count;
  for (const auto& s : t.steps)
    if (s.kind == StepKind::SOCKET) ++sockets;
  double extra_rows = t.rows > 2 ? double(t.rows - 2) : 0;  // START and END are in tx_ns
  // tx_ns holds the bookkeeping of the head read and of one response write, not their follow paths.
  double io = double(t.io_calls) + 1;
  double ns = u.tx_ns + extra_rows * u.row_ns + double(folded) * u.folded_ns + io * u.io_ns +
              double(sockets) * 2 * u.syscall_ns;
  // The units hold a system call per CPU clock read (one per real row); the reads that were
  // switch-checked saved what the calibration measured one to save.
  if (!t.shared && t.rows > t.cpu_clock_syscalls)
    ns -= double(t.rows - t.cpu_clock_syscalls) * u.fast_read_saving_ns;
  if (ns < 0) ns = 0;
  return uint64_t(ns + 0.5);
}

double agent_thread_weight(const Transaction& t) {
  const Units& u = g_units;
  if (!u.valid()) return 0;
  double extra_rows = t.steps.size() > 2 ? double(t.steps.size() - 2) : 0;
  return u.encode_tx_ns + extra_rows * u.encode_row_ns;
}

void set_units_for_test(const Units& u) {
  g_units = u;
  g_calibrated = true;
}

void reset_for_test() {
  g_units = Units{};
  g_calibrated = false;
}

}  // namespace txray::selfcost
