#include "collect_service.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_map>
#include <google/protobuf/arena.h>
#include <unordered_set>
#include <zmq.hpp>

#include "batch_tap.h"
#include "bounded_queue.h"
#include "checkpointer.h"
#include "curve_auth.h"
#include "store.h"
#include "writer.h"

namespace txray::ingest {

namespace {

using Clock = std::chrono::steady_clock;

// At the stop, how long the receiver may still take messages libzmq had read before the endpoint closed.
constexpr std::chrono::milliseconds kStopDrain{1000};

// A decoded batch and the arena that holds it: parsing into an arena is one allocation per block instead
// of one per step and string, and freeing it (on the writer thread) is as cheap.
struct DecodedBatch {
  std::unique_ptr<google::protobuf::Arena> arena;
  v1::Batch* batch = nullptr;
};

int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void add(WriteCounts& total, const WriteCounts& c) {
  total.transactions += c.transactions;
  total.steps += c.steps;
  total.summaries += c.summaries;
  total.links += c.links;
}

void count_stored(CollectStats& stats, const WriteCounts& c) {
  stats.stored_tx += c.transactions;
  stats.stored_steps += c.steps;
  stats.links += c.links;
}

// After a failed group: each batch alone, so that one failure (a full disk, a lock held too long) loses
// as little as possible.
void store_one_by_one(Writer& writer, std::vector<DecodedBatch>& group, int64_t now, CollectStats& stats) {
  for (auto& b : group) {
    try {
      writer.begin();
      WriteCounts c = writer.write(*b.batch, now);
      writer.commit();
      count_stored(stats, c);
    } catch (const std::exception& e) {
      writer.rollback();
      auto lost = static_cast<uint64_t>(b.batch->transactions_size());
      stats.lost_tx += lost;
      std::fprintf(stderr, "txray collect: could not store %" PRIu64 " transactions: %s\n", lost, e.what());
    }
  }
}

// SQLite reports a full disk (ENOSPC on the database or its WAL) as SQLITE_FULL.
bool is_disk_full(const std::exception& e) { return std::strstr(e.what(), "database or disk is full") != nullptr; }

// The disk is full: keep the group and try it again every second until it is stored (true), or until the
// collector stops with the disk still full (false: the caller counts the group lost). Meanwhile the queue
// fills, the receiver waits, and the agents drop and count: nothing the collector accepted is lost to a
// full disk that frees up again.
bool wait_for_space(Writer& writer, std::vector<DecodedBatch>& group, int64_t now, BoundedQueue<DecodedBatch>& queue,
                    CollectStats& stats) {
  using namespace std::chrono_literals;
  if (stats.disk_full_since_ns.load() == 0) {
    stats.disk_full_since_ns = unix_now_ns();
    std::fprintf(stderr, "txray collect: the disk is full: keeping %zu batches and trying again every second\n",
                 group.size());
  }
  while (!queue.closed()) {
    std::this_thread::sleep_for(1s);
    try {
      writer.begin();
      WriteCounts total;
      for (auto& b : group) add(total, writer.write(*b.batch, now));
      writer.commit();
      count_stored(stats, total);
      double secs = (unix_now_ns() - stats.disk_full_since_ns.load()) / 1e9;
      stats.disk_full_since_ns = 0;
      std::fprintf(stderr, "txray collect: space again after %.0f s: stored the %zu batches kept\n", secs, group.size());
      return true;
    } catch (const std::exception& e) {
      writer.rollback();
      if (!is_disk_full(e)) return false;
    }
  }
  return false;
}

// The store as the writer thread sees it: the connection, the writer, the checkpointer — and the file
// they were opened on. A store removed or replaced under the collector (rm, mv) would otherwise take
// every later commit into an unlinked file that nobody can read: between groups the writer checks that
// the path still names the file it writes, and if not, reopens the path (creating a new store there).
class StoreSession {
 public:
  explicit StoreSession(const std::string& path) : path_(path) { open(); }
  ~StoreSession() { close(); }

  Writer& writer() { return *writer_; }

  // Before each group: a stat() of the path (~1 us), compared with the file opened. (It was rate-limited
  // to ten a second: a group arriving within 100 ms of the last check after a replacement went into the
  // unlinked file, lost — e2e.test_collector_store_replaced failed about one run in three.)
  void follow_path() {
    if (!writer_) {  // the path named nothing usable: tried again once a second, not at every group
      auto now = Clock::now();
      if (now - last_retry_ < std::chrono::seconds(1)) return;
      last_retry_ = now;
    }
    struct stat st;
    bool gone = ::stat(path_.c_str(), &st) != 0;
    if (!gone && st.st_dev == dev_ && st.st_ino == ino_) return;
    std::fprintf(stderr, "txray collect: %s was %s under the collector: %s it\n", path_.c_str(),
                 gone ? "removed" : "replaced", gone ? "creating a new store in place of" : "storing into");
    close();
    try {
      open();
    } catch (const std::exception& e) {
      // Not a txray store, a directory, no permission…: stored batches fail and are counted lost until the
      // path is usable again (checked again on the next group).
      std::fprintf(stderr, "txray collect: %s\n", e.what());
      dev_ = ino_ = 0;
    }
  }

  void stop() {
    if (ckpt_) ckpt_->stop();  // after the last commit: leaves the file with an empty WAL
  }

  bool usable() const { return writer_ != nullptr; }

 private:
  void open() {
    db_ = open_store(path_, OpenMode::kCreate);
    db_.exec("PRAGMA wal_autocheckpoint=0");  // checkpoints run on the checkpointer's thread
    ckpt_ = std::make_unique<Checkpointer>(path_, std::chrono::milliseconds(500));
    writer_ = std::make_unique<Writer>(db_);
    struct stat st;
    if (::stat(path_.c_str(), &st) == 0) {
      dev_ = st.st_dev;
      ino_ = st.st_ino;
    }
  }

  // The checkpointer first, the main connection last: its close checkpoints and removes the -wal and -shm.
  void close() {
    ckpt_.reset();
    writer_.reset();
    db_ = Db();
  }

  std::string path_;
  Db db_;
  std::unique_ptr<Checkpointer> ckpt_;
  std::unique_ptr<Writer> writer_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  Clock::time_point last_retry_{};
};

// Test/debug only (--debug-store-delay-us): makes the store take at most one transaction per delay. The
// delays are owed and paid in sleeps of at least 20 ms, the time actually slept counting: one short sleep
// per batch would cost a wake-up each on a busy machine (milliseconds), and the store would be slower
// than asked, by an amount that depends on the machine's load.
class DebugStoreDelay {
 public:
  void pay(std::chrono::microseconds owed) {
    debt_ += owed;
    if (debt_ < std::chrono::milliseconds(20)) return;
    auto t0 = Clock::now();
    std::this_thread::sleep_for(debt_);
    debt_ -= std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
    debt_ = std::max(debt_, std::chrono::microseconds(-20000));  // an oversleep is credit, a little of it
  }

 private:
  std::chrono::microseconds debt_{0};
};

// Writer thread: groups queued batches into SQLite transactions of up to commit_rows rows or
// commit_window of time, whichever comes first, or until the queue stays empty for commit_idle. Each batch is written as soon as it is popped (the
// SQLite transaction stays open meanwhile), and kept until the commit in case it must be retried.
void writer_loop(StoreSession& store, BoundedQueue<DecodedBatch>& queue, const CollectOptions& opts,
                 CollectStats& stats) {
  using namespace std::chrono_literals;
  // Load shedding (shedder.h) on the writer thread, on each batch as it is taken from the queue: when the
  // writer is behind, the batches already waiting are shed too, so the writer catches up at once.
  Shedder shedder(opts.shed);
  DebugStoreDelay slow_store;
  auto shed = [&](DecodedBatch& b) {
    const double fill = queue.fill();
    stats.shed_share_pct = static_cast<uint32_t>(shedder.share(fill) * 100 + 0.5);
    stats.shed_tx += shedder.process(*b.batch, fill);
  };
  while (true) {
    auto first = queue.pop(200ms);
    if (!first) {
      if (queue.closed_and_empty()) return;
      continue;
    }
    store.follow_path();
    if (!store.usable()) {  // the path names no usable store (reported by follow_path)
      stats.lost_tx += static_cast<uint64_t>(first->batch->transactions_size());
      continue;
    }
    Writer& writer = store.writer();
    std::vector<DecodedBatch> group;
    shed(*first);
    group.push_back(std::move(*first));
    int64_t now = unix_now_ns();
    WriteCounts total;
    try {
      writer.begin();
      auto deadline = Clock::now() + opts.commit_window;
      for (size_t i = 0;; ++i) {
        add(total, writer.write(*group[i].batch, now));
        if (opts.debug_store_delay.count() > 0) slow_store.pay(opts.debug_store_delay * group[i].batch->transactions_size());
        if (total.transactions + total.steps + total.summaries >= opts.commit_rows) break;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() <= 0) break;
        // A pause in the stream (a burst's end) commits at once rather than at the window's end.
        auto next = queue.pop(std::min(left, opts.commit_idle));
        if (!next) break;
        shed(*next);
        group.push_back(std::move(*next));
      }
      writer.commit();
      count_stored(stats, total);
    } catch (const std::exception& e) {
      writer.rollback();
      if (is_disk_full(e) && wait_for_space(writer, group, now, queue, stats)) continue;
      std::fprintf(stderr, "txray collect: could not store %zu batches together (%s); trying one by one\n",
                   group.size(), e.what());
      store_one_by_one(writer, group, now, stats);
    }
  }
}

void print_status(const CollectStats& s, double secs, uint64_t prev_recv, uint64_t prev_stored, uint64_t prev_shed,
                  size_t queued, bool final_line) {
  uint64_t recv = s.received_tx, stored = s.stored_tx, shed = s.shed_tx;
  std::string full;
  // Load shedding (shedder.h): while it sheds, how much and how hard; afterwards the total only.
  char shedding[192] = "";
  if (shed > prev_shed && !final_line)
    std::snprintf(shedding, sizeof shedding,
                  ", SHEDDING %.0f tx/s (%.0f%% of those the writer took; %u%% of the fast successful ones), %" PRIu64
                  " shed in total",
                  secs > 0 ? (shed - prev_shed) / secs : 0.0,
                  100.0 * static_cast<double>(shed - prev_shed) /
                      static_cast<double>((shed - prev_shed) + (stored - prev_stored)),
                  s.shed_share_pct.load(), shed);
  else if (shed > 0)
    std::snprintf(shedding, sizeof shedding, ", %" PRIu64 " shed in total", shed);
  std::string sampled;
  if (uint64_t n = s.agent_sampled_out.load(); n > 0) sampled = ", agents sampled out " + std::to_string(n);
  if (uint64_t n = s.agent_samples_lost.load(); n > 0) sampled += ", agents lost cpu samples " + std::to_string(n);
  if (uint64_t n = s.agent_stacks_missed.load(); n > 0) sampled += ", agents missed stacks " + std::to_string(n);
  if (uint64_t n = s.agent_streams_unparsed.load(); n > 0)
    sampled += ", agents stopped parsing " + std::to_string(n) + " connections";
  if (int64_t since = s.disk_full_since_ns.load(); since != 0)
    full = ", DISK FULL for " + std::to_string((unix_now_ns() - since) / 1000000000) + " s (storing again when space returns)";
  if (s.tap) full += s.tap->status();  // the OTLP export's counters
  std::fprintf(stderr,
               "txray collect: %s%.0f tx/s received, %.0f tx/s stored, %" PRIu64 " stored in total (%" PRIu64
               " received), agents dropped %" PRIu64
               ", rejected messages: malformed %" PRIu64 " invalid %" PRIu64 " oversize %" PRIu64 ", lost %" PRIu64
               ", truncated fields %" PRIu64 ", masked values %s, refused peers %" PRIu64 " (unlisted keys %" PRIu64
               "), queue %zu%s%s%s\n",
               final_line ? "exit: " : "", secs > 0 ? (recv - prev_recv) / secs : 0.0,
               secs > 0 ? (stored - prev_stored) / secs : 0.0, stored, recv, s.agent_drops.load(), s.malformed.load(),
               s.invalid.load(), s.oversize.load(), s.lost_tx.load(), s.truncated_fields.load(),
               s.redact_off ? "OFF" : std::to_string(s.masked_values.load()).c_str(), s.refused_peers.load(),
               s.unlisted_keys.load(), queued, shedding, sampled.c_str(), full.c_str());
}

// Receiving side: decode one message and queue it. Returns false only when the queue was closed.
class Receiver {
 public:
  Receiver(const CollectOptions& o, CollectStats& s, BoundedQueue<DecodedBatch>& q)
      : opts_(o), stats_(s), queue_(q) {}
  // Called every 200 ms while a batch waits for room in the queue.
  void on_waiting(std::function<void()> f) { waiting_ = std::move(f); }

  void handle(const zmq::message_t& msg) {
    ++stats_.messages;
    google::protobuf::ArenaOptions ao;
    ao.start_block_size = std::clamp<size_t>(msg.size() * 2, 4096, 8u << 20);
    ao.max_block_size = 8u << 20;
    DecodedBatch batch;
    batch.arena = std::make_unique<google::protobuf::Arena>(ao);
    batch.batch = google::protobuf::Arena::CreateMessage<v1::Batch>(batch.arena.get());
    DecodeResult r = decode_batch(msg.data(), msg.size(), *batch.batch, opts_.limits);
    if (!r.ok()) {
      count_rejected(r);
      return;
    }
    if (r.truncated) {
      stats_.truncated_fields += r.truncated;
      if (++truncated_logged_ <= 10)
        std::fprintf(stderr, "txray collect: truncated %" PRIu64 " fields of a batch (first: %s)%s\n", r.truncated,
                     r.reason.c_str(), truncated_logged_ == 10 ? " (further truncations are only counted)" : "");
    }
    if (r.masked) {
      stats_.masked_values += r.masked;
      // Which agent still sends credentials matters more than how many: the first few batches are named.
      if (++masked_logged_ <= 10) {
        const auto& a = batch.batch->agent();
        std::fprintf(stderr,
                     "txray collect: masked %" PRIu64 " values that looked like credentials in a batch of app %s "
                     "(%s, pid %" PRIu64 " on %s; first: %s)%s\n",
                     r.masked, a.app().c_str(), a.program().c_str(), static_cast<uint64_t>(a.pid()), a.host().c_str(),
                     r.masked_first.c_str(), masked_logged_ == 10 ? " (further ones are only counted)" : "");
      }
    }
    note_drops(*batch.batch);
    uint64_t n = static_cast<uint64_t>(batch.batch->transactions_size());
    stats_.received_tx += n;
    if (opts_.tap) opts_.tap->offer(msg.data(), msg.size(), *batch.batch);  // copies and queues, never waits
    using namespace std::chrono_literals;
    // Block while the writer catches up (back-pressure). The queue is closed only after the last
    // receive, so this always ends with the batch queued. Its weight is the decoded size (the arena's),
    // so queue_bytes bounds the memory the queue holds, whatever the encoding's ratio.
    size_t weight = std::max<size_t>(msg.size(), static_cast<size_t>(batch.arena->SpaceAllocated()));
    while (!queue_.push(std::move(batch), weight, 200ms)) {
      if (waiting_) waiting_();  // the status line goes on while the writer is behind
    }
  }

 private:
  void count_rejected(const DecodeResult& r) {
    switch (r.status) {
      case DecodeStatus::kOversize: ++stats_.oversize; break;
      case DecodeStatus::kMalformed: ++stats_.malformed; break;
      default: ++stats_.invalid; break;
    }
    // One line per rejected message would let a sender flood the log: report the first few.
    if (++rejected_logged_ <= 10) {
      std::fprintf(stderr, "txray collect: dropped a message (%s): %s%s\n", to_string(r.status), r.reason.c_str(),
                   rejected_logged_ == 10 ? " (further rejections are only counted)" : "");
    }
  }

  // Agents send cumulative counters: keep the latest total per instance and their sum.
  void note_drops(const v1::Batch& b) {
    const auto& d = b.drops();
    uint64_t total = d.queue_full() + d.send_failed() + d.encode_failed();
    uint64_t& prev = drops_[b.agent().instance_id()];
    if (total > prev) {
      stats_.agent_drops += total - prev;
      prev = total;
    }
    uint64_t& sampled = sampled_[b.agent().instance_id()];
    if (d.sampled_out() > sampled) {
      stats_.agent_sampled_out += d.sampled_out() - sampled;
      sampled = d.sampled_out();
    }
    if (d.cpu_samples_lost() != 0 || d.stacks_missed() != 0 || d.streams_unparsed() != 0) {
      Losses& l = losses_[b.agent().instance_id()];
      if (d.cpu_samples_lost() > l.samples) {
        stats_.agent_samples_lost += d.cpu_samples_lost() - l.samples;
        l.samples = d.cpu_samples_lost();
      }
      if (d.stacks_missed() > l.stacks) {
        stats_.agent_stacks_missed += d.stacks_missed() - l.stacks;
        l.stacks = d.stacks_missed();
      }
      if (d.streams_unparsed() > l.streams) {
        stats_.agent_streams_unparsed += d.streams_unparsed() - l.streams;
        l.streams = d.streams_unparsed();
      }
    }
  }

  const CollectOptions& opts_;
  CollectStats& stats_;
  BoundedQueue<DecodedBatch>& queue_;
  std::unordered_map<uint64_t, uint64_t> drops_;
  std::unordered_map<uint64_t, uint64_t> sampled_;  // instance -> its latest sampled_out counter
  struct Losses {
    uint64_t samples = 0, stacks = 0, streams = 0;
  };
  std::unordered_map<uint64_t, Losses> losses_;  // instance -> its latest cpu_samples_lost, stacks_missed
  uint64_t rejected_logged_ = 0;
  uint64_t truncated_logged_ = 0;
  uint64_t masked_logged_ = 0;
  std::function<void()> waiting_;
};

// Refuses (false, with the message printed) a configuration that would let anyone who can reach the
// endpoint write to the store, or keys that cannot be used.
bool check_security(const CollectOptions& o) {
  bool curve = !o.curve_secret_key_file.empty();
  if (curve != !o.allowed_clients_file.empty()) {
    std::fprintf(stderr, "txray collect: --curve-secret-key and --allowed-clients go together (the server's key, and "
                         "the agents' public keys it lets in)\n");
    return false;
  }
  if (curve && !zmq_has("curve")) {
    std::fprintf(stderr, "txray collect: this libzmq was built without CURVE support: cannot authenticate agents\n");
    return false;
  }
  if (!curve && !o.insecure && !is_local_endpoint(o.listen)) {
    std::fprintf(stderr,
                 "txray collect: refusing to listen on %s without authentication: anyone who can reach it could "
                 "write to %s.\n"
                 "  Make keys with `txray keygen -o DIR`, then give --curve-secret-key DIR/server.key and "
                 "--allowed-clients DIR/client.pub\n"
                 "  (agents: TXRAY_SERVER_KEY=DIR/server.pub TXRAY_CLIENT_SECRET_KEY=DIR/client.key),\n"
                 "  or listen on 127.0.0.1 / an ipc:// path, or pass --insecure to accept any agent.\n",
                 o.listen.c_str(), o.db.c_str());
    return false;
  }
  return true;
}

// CURVE on the PULL socket, with a ZAP handler that admits the listed client keys only.
std::unique_ptr<ZapAuthenticator> setup_curve(const CollectOptions& o, zmq::context_t& ctx, zmq::socket_t& sock) {
  std::string secret = read_single_key(o.curve_secret_key_file, "secret key");
  auto listed = read_key_file(o.allowed_clients_file);
  if (listed.empty()) throw std::runtime_error(o.allowed_clients_file + " lists no client key: no agent could connect");
  auto zap = std::make_unique<ZapAuthenticator>(ctx.handle(), std::unordered_set<std::string>(listed.begin(), listed.end()));
  sock.set(zmq::sockopt::curve_server, 1);
  sock.set(zmq::sockopt::curve_secretkey, secret);
  sock.set(zmq::sockopt::zap_domain, "txray");
  std::fprintf(stderr, "txray collect: CURVE on, %zu client keys allowed\n", listed.size());
  return zap;
}

// Handshake failures seen by the socket monitor: each is a peer refused. The first few are logged with
// the peer's address and libzmq's reason, then only counted.
void count_monitor_events(zmq::socket_t& mon, CollectStats& stats) {
  static uint64_t logged = 0;  // the receiving thread only
  for (zmq::message_t ev; mon.recv(ev, zmq::recv_flags::dontwait);) {
    zmq::message_t addr;
    if (ev.more()) (void)mon.recv(addr, zmq::recv_flags::dontwait);
    if (ev.size() < 6) continue;
    uint16_t event;
    uint32_t value;
    std::memcpy(&event, ev.data(), 2);
    std::memcpy(&value, static_cast<const char*>(ev.data()) + 2, 4);
    const char* why = event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH       ? "authentication refused"
                      : event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol error (no CURVE, wrong key, not ZeroMQ)"
                      : event == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL ? "handshake failed"
                                                                      : nullptr;
    if (!why) continue;
    ++stats.refused_peers;
    if (++logged <= 10)
      std::fprintf(stderr, "txray collect: refused a peer (%.*s): %s, code 0x%x%s\n", static_cast<int>(addr.size()),
                   static_cast<const char*>(addr.data()), why, value,
                   logged == 10 ? " (further refused peers are only counted)" : "");
  }
}

}  // namespace

int run_collector(const CollectOptions& opts, const std::atomic<bool>& stop, CollectStats& stats) {
  if (!check_security(opts)) return 2;
  stats.tap = opts.tap;
  stats.redact_off = !opts.limits.redact;
  silence_protobuf_logging();
  // SQLite's allocation statistics take a global mutex on every malloc; the collector never reads them.
  // (Only possible before SQLite initializes; harmless SQLITE_MISUSE otherwise.)
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  // Decoded batches are allocated on the receiving thread and freed on the writer thread, and SQLite's
  // page cache grows on the writer thread. With glibc's defaults that churns memory maps (big blocks
  // mmap'ed and unmapped, the writer's own heap grown 64 KiB at a time with mprotect and trimmed
  // again): about a thousand mprotect/munmap calls per 50,000 transactions, each taking the process's
  // memory-map lock for milliseconds on a busy machine. One heap, grown in 16 MiB steps, freed memory kept.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TOP_PAD, 16 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  zmq::context_t ctx(1);
  zmq::socket_t sock(ctx, zmq::socket_type::pull);
  std::unique_ptr<ZapAuthenticator> zap;
  zmq::socket_t monitor;
  try {
    if (!opts.curve_secret_key_file.empty()) zap = setup_curve(opts, ctx, sock);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray collect: %s\n", e.what());
    return 2;
  }
  try {
    sock.set(zmq::sockopt::linger, 0);
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(sock.handle(), "inproc://txray-collect-monitor", events) == 0) {
      monitor = zmq::socket_t(ctx, zmq::socket_type::pair);
      monitor.set(zmq::sockopt::linger, 0);
      monitor.connect("inproc://txray-collect-monitor");
    }
    // libzmq drops the connection of a peer that sends more than this: a hard cap on memory. Messages
    // between max_message_bytes and the cap still arrive, and are counted as oversize by the decoder.
    int64_t cap = static_cast<int64_t>(opts.limits.max_message_bytes) * 2 + 1024;
    sock.set(zmq::sockopt::maxmsgsize, cap);
    // libzmq holds up to RCVHWM messages per connection while the receiver waits for the writer (and the
    // writer queue already holds up to queue_batches): at most ~1 GiB of them per connection, 16 at least.
    int hwm = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 30) / cap, 16, 1000));
    sock.set(zmq::sockopt::rcvhwm, hwm);
    sock.bind(opts.listen);
  } catch (const zmq::error_t& e) {
    std::fprintf(stderr, "txray collect: cannot listen on %s: %s\n", opts.listen.c_str(), e.what());
    return 2;
  }

  // The keys and the endpoint were fine: now the store (so that a refused start creates no file).
  std::unique_ptr<StoreSession> store;
  try {
    store = std::make_unique<StoreSession>(opts.db);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "txray collect: %s\n", e.what());
    return 2;
  }

  BoundedQueue<DecodedBatch> queue(opts.queue_batches, opts.queue_bytes);
  std::thread writer_thread([&] {
    // Signals go to the receiving thread, which turns them into a clean stop.
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    pthread_setname_np(pthread_self(), "txray-writer");  // named for top/perf and the ingest benchmark
    writer_loop(*store, queue, opts, stats);
  });

  std::fprintf(stderr, "txray collect: listening on %s, storing into %s\n", opts.listen.c_str(), opts.db.c_str());
  Receiver receiver(opts, stats, queue);
  auto last_status = Clock::now();
  uint64_t prev_recv = 0, prev_stored = 0, prev_shed = 0;
  // The status line every status_interval_s, from the receiving thread: between receives, and while a
  // batch waits for the writer (under back-pressure the receiver may wait for long).
  auto status_tick = [&] {
    if (opts.status_interval_s <= 0) return;
    auto now = Clock::now();
    double secs = std::chrono::duration<double>(now - last_status).count();
    if (secs < opts.status_interval_s) return;
    print_status(stats, secs, prev_recv, prev_stored, prev_shed, queue.size(), false);
    prev_recv = stats.received_tx;
    prev_stored = stats.stored_tx;
    prev_shed = stats.shed_tx;
    last_status = now;
  };
  receiver.on_waiting(status_tick);
  // Waits up to `wait` for agent messages and takes them; monitor events (refused peers) are counted on
  // the way and do not end the wait.
  auto recv_for = [&](std::chrono::milliseconds wait) -> bool {
    auto deadline = Clock::now() + wait;
    zmq::pollitem_t items[2] = {{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0},
                                {static_cast<void*>(monitor), 0, ZMQ_POLLIN, 0}};
    try {
      while (true) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() < 0) return false;
        if (zmq::poll(items, monitor ? 2 : 1, left) <= 0) return false;
        if (monitor && (items[1].revents & ZMQ_POLLIN)) {
          count_monitor_events(monitor, stats);
          if (zap) stats.unlisted_keys = zap->denied();
        }
        if (items[0].revents & ZMQ_POLLIN) break;
      }
      // Take the whole burst before sleeping again: every sleep is a wake-up later, and on a busy
      // machine a wake-up costs milliseconds (and preempts the writer thread).
      int n = 0;
      for (zmq::message_t msg; n < 1024 && sock.recv(msg, zmq::recv_flags::dontwait); ++n) {
        receiver.handle(msg);
        status_tick();
      }
      return n > 0;
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) return false;  // a signal: the loop looks at `stop`
      throw;
    }
  };

  while (!stop.load()) {
    recv_for(std::chrono::milliseconds(100));
    status_tick();
  }

  // Stop requested. First nothing new comes in: unbinding the endpoint closes the listener and the
  // connections it accepted, so the agents stop sending at once (they count what they cannot send, and
  // reconnect when the collector is back). Draining "until the socket is quiet" instead never ended
  // under steady load (agents keep sending), and took the full drain bound every time. Then take what
  // libzmq had already read from those connections (its pipes, up to rcvhwm messages each: readable
  // until their end, after the connection closed), store everything received, and finish. What was
  // still in the connections' kernel buffers is lost in flight: the agents' next batches say how many
  // transactions they had sent, and the store counts the shortfall (writer.h, account_received).
  auto t_stop = Clock::now();
  try {
    sock.unbind(sock.get(zmq::sockopt::last_endpoint));
  } catch (const zmq::error_t& e) {
    std::fprintf(stderr, "txray collect: could not close %s at the stop: %s\n", opts.listen.c_str(), e.what());
  }
  // The connections' close is asynchronous (libzmq's I/O thread): a pipe stays readable until its end.
  // A short quiet time is enough, since no new bytes arrive; the bound keeps a stop whose writer is far
  // behind from waiting for whole pipes (what is left in them is lost in flight, and counted).
  auto drain_deadline = t_stop + kStopDrain;
  while (Clock::now() < drain_deadline && recv_for(std::chrono::milliseconds(50))) {
  }
  queue.close();
  writer_thread.join();
  if (monitor) {
    count_monitor_events(monitor, stats);
    zmq_socket_monitor(sock.handle(), nullptr, 0);
    monitor.close();
  }
  if (zap) {
    stats.unlisted_keys = zap->denied();
    zap->stop();
  }
  store->stop();
  if (opts.tap) opts.tap->finish(opts.tap_finish);
  double secs = std::chrono::duration<double>(Clock::now() - last_status).count();
  print_status(stats, secs, prev_recv, prev_stored, prev_shed, queue.size(), true);
  std::fprintf(stderr, "txray collect: stopped in %.2f s\n",
               std::chrono::duration<double>(Clock::now() - t_stop).count());
  return 0;
}

}  // namespace txray::ingest
