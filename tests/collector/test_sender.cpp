// txray-test-sender: plays agents for the collector's end-to-end tests and ingest benchmark.
//   --endpoint E            send over a ZeroMQ PUSH socket to a `txray collect` on E
//   --raw-sqlite FILE       instead insert the same rows straight into a fresh store (the benchmark's
//                           baseline: prepared statements, one big transaction)
//   --decode-bench ROUNDS   instead time the collector's decoder on the same messages, masking on and off
//   --batch-json FILE       also send this batch (protobuf's JSON form of a txray.v1.Batch) as it is:
//                           content an agent of another kind or version could send (repeatable)
// Batches are generated (and serialized) before the clock starts. Prints one JSON line on stdout:
// {"transactions":…, "batches":…, "seconds":…, "tx_per_s":…, "txids":[…] (with --print-txids),
//  "container_txid":… (with --unattributed)}.
#include <sqlite3.h>

#include <CLI/CLI.hpp>
#include <time.h>

#include <google/protobuf/arena.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <unordered_map>
#include <zmq.hpp>

#include "decoder.h"
#include "ids.h"
#include "store.h"
#include "synthetic.h"
#include "writer.h"

namespace {

using Clock = std::chrono::steady_clock;

// CPU time this thread used, in seconds (the inserting modes run on the main thread).
double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
double g_cpu_s = 0;  // CPU seconds of the timed section of --raw-sqlite / --writer-sqlite

struct Args {
  std::string endpoint, raw_db, write_dir, writer_db;
  uint64_t transactions = 100, per_batch = 50, seed = 1;
  int steps = 10;
  std::string app = "synthetic";
  uint64_t instance_id = 0x1234567890abcdefull;
  uint64_t garbage = 0, invalid = 0, oversize = 0, oversize_bytes = (3u << 20) / 2;
  uint64_t drops = 0;
  uint64_t hostile = 0, hostile_steps = 20000000;  // 3 bytes each on the wire: 60 MB, under the 64 MiB limit
  uint64_t long_text_bytes = 0;
  bool print_txids = false;
  bool linked = false;
  bool raw_no_checkpoint = false;
  bool queries = false;
  int unattributed = 0;
  int decode_bench = 0;
  std::vector<std::string> batch_json;
};

uint64_t g_container_txid = 0;  // the unattributed container sent (--unattributed)

std::vector<txray::v1::Batch> generate(const Args& a) {
  txray::testing::SynthOptions o;
  o.steps = a.steps;
  o.app = a.app;
  o.instance_id = a.instance_id;
  o.queries = a.queries;
  std::mt19937_64 rng(a.seed);
  uint64_t start = 1700000000000000000ull + a.seed * 1000000000ull;
  txray::v1::Batch all = txray::testing::make_batch(o, 0);
  for (uint64_t i = 0; i < a.transactions; ++i) txray::testing::add_transaction(all, o, i, rng, start + i * 1000000);
  if (a.linked) {
    // Pairs (caller, callee): the callee joins the caller's trace with the span id of the caller's
    // first HTTP_CALL as its parent. Every other pair is sent callee first.
    for (int i = 0; i + 1 < all.transactions_size(); i += 2) {
      auto* caller = all.mutable_transactions(i);
      auto* callee = all.mutable_transactions(i + 1);
      for (const auto& s : caller->steps())
        if (s.kind() == txray::v1::HTTP_CALL) {
          callee->set_parent_span_id(s.id());
          break;
        }
      callee->set_trace_id(caller->trace_id());
      callee->set_start_unix_ns(caller->start_unix_ns() + 1000);
      if ((i / 2) % 2 == 1) all.mutable_transactions()->SwapElements(i, i + 1);
    }
  }
  if (a.unattributed > 0) {
    // Last, after its callee: the agent's container of unattributed steps. Its first HTTP_CALL was
    // answered by the first transaction (the collector links them as for any call).
    auto* c = txray::testing::add_unattributed(all, a.transactions, a.unattributed, rng,
                                               start + a.transactions * 1000000);
    g_container_txid = c->txid();
    if (all.transactions_size() > 1) {
      auto* callee = all.mutable_transactions(0);
      callee->set_parent_span_id(c->steps(1).id());
    }
  }
  std::vector<txray::v1::Batch> out;
  for (auto& tx : *all.mutable_transactions()) {
    if (out.empty() || static_cast<uint64_t>(out.back().transactions_size()) >= a.per_batch)
      out.push_back(txray::testing::make_batch(o, out.size() + 1));
    *out.back().add_transactions() = std::move(tx);
  }
  // Agents report cumulative counters; the last batch carries the final values.
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t d = a.drops * (i + 1) / out.size();
    out[i].mutable_drops()->set_queue_full(d);
    out[i].mutable_drops()->set_send_failed(d / 2);
  }
  return out;
}

double send_all(const Args& a, const std::vector<std::string>& messages) {
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.set(zmq::sockopt::sndhwm, 0);   // never drop: the test counts every message
  push.set(zmq::sockopt::linger, -1);  // close() waits until everything reached the collector
  push.connect(a.endpoint);
  // Tells a benchmark driver that generation is over and the clock may start.
  std::fprintf(stderr, "sending %zu messages\n", messages.size());
  std::fflush(stderr);
  auto t0 = Clock::now();
  for (const auto& m : messages) push.send(zmq::buffer(m), zmq::send_flags::none);
  push.close();
  ctx.close();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The baseline: the same transaction and step rows (texts deduplicated, attributes as JSON), inserted
// with prepared statements in one transaction. Everything but the inserts is done before timing.
double raw_insert(const Args& a, const std::vector<txray::v1::Batch>& batches) {
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);  // the same SQLite tuning as the collector
  txray::Db db = txray::open_store(a.raw_db, txray::OpenMode::kCreate);
  if (a.raw_no_checkpoint) db.exec("PRAGMA wal_autocheckpoint=0");  // the commit leaves everything in the WAL
  struct StepRow {
    const txray::v1::Step* s;
    int64_t text_id;
    std::string attrs;
  };
  std::unordered_map<uint64_t, int64_t> texts;
  std::vector<std::pair<uint64_t, const std::string*>> new_texts;
  std::vector<std::vector<StepRow>> rows;
  auto json = [](const auto& attrs) {
    std::string j;
    for (const auto& at : attrs) j += (j.empty() ? "{\"" : ",\"") + at.key() + "\":\"" + at.value() + "\"";
    return j.empty() ? j : j + "}";
  };
  for (const auto& b : batches)
    for (const auto& tx : b.transactions()) {
      rows.emplace_back();
      for (const auto& s : tx.steps()) {
        int64_t tid = 0;
        if (!s.text().empty()) {
          uint64_t h = txray::fnv1a64(s.text());
          auto [it, fresh] = texts.emplace(h, static_cast<int64_t>(texts.size() + 1));
          if (fresh) new_texts.emplace_back(h, &s.text());
          tid = it->second;
        }
        rows.back().push_back({&s, tid, json(s.attributes())});
      }
    }

  auto t0 = Clock::now();
  double c0 = thread_cpu_s();
  db.exec("BEGIN");
  db.exec("INSERT INTO agents(id, instance_id, host, pid, program, app) VALUES(1, 1, 'h', 1, 'p', 'a')");
  {
    txray::Stmt ti(db, "INSERT INTO texts(id, hash, text) VALUES(?1, ?2, ?3)");
    for (size_t i = 0; i < new_texts.size(); ++i)
      ti.bind(1, static_cast<int64_t>(i + 1)).bind(2, new_texts[i].first).bind_static(3, *new_texts[i].second).run();
    txray::Stmt tx_ins(db,
                       "INSERT INTO transactions(txid, trace_id, parent_span_id, agent_id, app, name, kind,"
                       " start_unix_ns, end_unix_ns, elapsed_ns, cpu_ns, sql_ns, fetch_ns, call_ns, sql_count,"
                       " call_count, status, error, client_addr, bytes_read, bytes_written, tid, step_count)"
                       " VALUES(?1,?2,?3,1,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)");
    txray::Stmt st_ins(db,
                       "INSERT INTO steps(tx_id, no, parent, kind, start_offset_ns, gap_ns, cpu_ns, elapsed_ns,"
                       " bytes_read, bytes_written, text_id, error, ref_id, rows, fetch_ns, fingerprint, status,"
                       " changes, attributes) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)");
    size_t r = 0;
    for (const auto& b : batches)
      for (const auto& tx : b.transactions()) {
        tx_ins.bind(1, tx.txid()).bind(2, txray::trace_hex(tx.trace_id())).bind(3, tx.parent_span_id());
        tx_ins.bind_static(4, a.app).bind_static(5, tx.name()).bind_static(6, tx.kind());
        tx_ins.bind(7, tx.start_unix_ns()).bind(8, tx.start_unix_ns() + tx.elapsed_ns()).bind(9, tx.elapsed_ns());
        tx_ins.bind(10, tx.cpu_ns()).bind(11, tx.sql_ns()).bind(12, tx.fetch_ns()).bind(13, tx.call_ns());
        tx_ins.bind(14, tx.sql_count()).bind(15, tx.call_count()).bind(16, tx.status());
        tx_ins.bind_text_or_null(17, tx.error()).bind_static(18, tx.client_addr());
        tx_ins.bind(19, tx.bytes_read()).bind(20, tx.bytes_written()).bind(21, tx.tid()).bind(22, tx.steps_size());
        tx_ins.run();
        int64_t id = sqlite3_last_insert_rowid(db.get());
        int no = 0;
        for (const auto& row : rows[r++]) {
          const auto& s = *row.s;
          st_ins.bind(1, id).bind(2, no++).bind(3, s.parent()).bind(4, txray::v1::StepKind_Name(s.kind()));
          st_ins.bind(5, s.start_offset_ns()).bind(6, s.gap_ns()).bind(7, s.cpu_ns()).bind(8, s.elapsed_ns());
          st_ins.bind(9, s.bytes_read()).bind(10, s.bytes_written());
          if (row.text_id) st_ins.bind(11, row.text_id);
          if (s.id()) st_ins.bind(13, s.id());
          if (s.kind() == txray::v1::SQL) st_ins.bind(14, s.rows()).bind(15, s.fetch_ns());
          if (s.fingerprint()) st_ins.bind(16, s.fingerprint());
          if (s.status()) st_ins.bind(17, s.status());
          if (!row.attrs.empty()) st_ins.bind_static(19, row.attrs);
          st_ins.run();
        }
      }
  }
  db.exec("COMMIT");
  g_cpu_s = thread_cpu_s() - c0;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Diagnostic: the store's Writer alone on the same batches (no ZeroMQ, no decoding), commits every
// `commit_rows` rows like the collector.
double writer_insert(const Args& a, const std::vector<txray::v1::Batch>& batches) {
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  txray::Db db = txray::open_store(a.writer_db, txray::OpenMode::kCreate);
  txray::Writer w(db);
  auto t0 = Clock::now();
  double c0 = thread_cpu_s();
  size_t rows = 0;
  w.begin();
  for (const auto& b : batches) {
    auto c = w.write(b, 1);
    rows += c.transactions + c.steps;
    if (rows >= 50000) {
      w.commit();
      w.begin();
      rows = 0;
    }
  }
  w.commit();
  g_cpu_s = thread_cpu_s() - c0;
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The receiving thread's decode (parse, truncate, validate, mask) of every message, ROUNDS times per
// policy, the policies taking turns; prints the median CPU ns per transaction of each.
std::string decode_bench(const Args& a, const std::vector<txray::v1::Batch>& batches) {
  std::vector<std::string> messages;
  uint64_t tx = 0;
  for (const auto& b : batches) {
    messages.push_back(b.SerializeAsString());
    tx += static_cast<uint64_t>(b.transactions_size());
  }
  struct Policy {
    const char* name;
    std::shared_ptr<const txray::ingest::Redactor> r;
    std::vector<double> ns;
    uint64_t masked = 0;
  };
  std::vector<Policy> policies = {
      {"off", nullptr, {}},
      {"default", txray::ingest::Redactor::defaults(), {}},
      {"pattern", std::make_shared<const txray::ingest::Redactor>(txray::ingest::kDefaultRedactPattern), {}}};
  for (int round = 0; round < a.decode_bench; ++round)
    for (auto& p : policies) {
      txray::ingest::Limits l;
      l.redact = p.r;
      p.masked = 0;
      double c0 = thread_cpu_s();
      for (const auto& m : messages) {
        google::protobuf::Arena arena;  // as the receiver: one arena per message
        auto* b = google::protobuf::Arena::CreateMessage<txray::v1::Batch>(&arena);
        auto r = txray::ingest::decode_batch(m.data(), m.size(), *b, l);
        if (!r.ok()) throw std::runtime_error("a generated batch did not decode: " + r.reason);
        p.masked += r.masked;
      }
      p.ns.push_back((thread_cpu_s() - c0) * 1e9 / static_cast<double>(tx));
    }
  std::string out = ",\"decode_ns_per_tx\":{";
  for (auto& p : policies) {
    std::sort(p.ns.begin(), p.ns.end());
    out += std::string(&p == &policies[0] ? "\"" : ",\"") + p.name + "\":" + std::to_string(p.ns[p.ns.size() / 2]);
  }
  out += "},\"masked\":" + std::to_string(policies[1].masked);
  return out;
}

bool read_batch_json(const std::string& path, txray::v1::Batch* b) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f) {
    std::fprintf(stderr, "txray-test-sender: cannot read %s\n", path.c_str());
    return false;
  }
  auto st = google::protobuf::util::JsonStringToMessage(ss.str(), b);
  if (!st.ok()) {
    std::fprintf(stderr, "txray-test-sender: %s is not a txray.v1.Batch in JSON: %s\n", path.c_str(),
                 st.ToString().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Sends synthetic txray batches (and bad messages) to a collector, or inserts them raw."};
  Args a;
  auto* ep = app.add_option("--endpoint", a.endpoint, "collector endpoint");
  auto* raw = app.add_option("--raw-sqlite", a.raw_db, "insert into this fresh SQLite file instead of sending");
  auto* wd = app.add_option("--write-dir", a.write_dir, "write each message to a file here (a fuzz seed corpus)");
  auto* wr = app.add_option("--writer-sqlite", a.writer_db, "insert with the store's Writer (no ZeroMQ): a diagnostic");
  ep->excludes(raw)->excludes(wd)->excludes(wr);
  wr->excludes(raw)->excludes(wd);
  raw->excludes(wd);
  app.add_option("--transactions", a.transactions, "well-formed transactions to send");
  app.add_option("--per-batch", a.per_batch, "transactions per message")->check(CLI::Range(1, 100000));
  app.add_option("--steps", a.steps, "rows per transaction")->check(CLI::Range(2, 100000));
  app.add_option("--seed", a.seed, "random seed (same seed, same data)");
  app.add_option("--app", a.app, "application name");
  app.add_option("--instance-id", a.instance_id, "agent instance id");
  app.add_option("--garbage", a.garbage, "random-byte messages to send first");
  app.add_option("--invalid", a.invalid, "well-formed protobuf that breaks the rules (bad parent) to send");
  app.add_option("--oversize", a.oversize, "oversized messages to send");
  app.add_option("--oversize-bytes", a.oversize_bytes, "size of each oversized message");
  app.add_option("--hostile", a.hostile,
                 "messages to send first that are small on the wire but huge once decoded (one transaction of "
                 "--hostile-steps empty steps, 3 bytes each)");
  app.add_option("--hostile-steps", a.hostile_steps, "empty steps per --hostile message");
  app.add_option("--long-text-bytes", a.long_text_bytes,
                 "make the first step text of each well-formed transaction this long (past the collector's limit, "
                 "it is truncated)");
  app.add_option("--drops", a.drops, "queue_full drops reported in the last batch (send_failed: half)");
  app.add_flag("--print-txids", a.print_txids, "list the txids sent");
  app.add_flag("--queries", a.queries,
               "give transactions a `query` attribute and HTTP_CALL URLs a masked query string (none secret)");
  app.add_option("--decode-bench", a.decode_bench,
                 "time the collector's decoder on the generated messages ROUNDS times, masking off / default / "
                 "as a regex, instead of sending")
      ->check(CLI::Range(1, 1000));
  app.add_option("--batch-json", a.batch_json, "also send this txray.v1.Batch in protobuf's JSON form (repeatable)")
      ->check(CLI::ExistingFile);
  app.add_flag("--raw-no-checkpoint", a.raw_no_checkpoint, "with --raw-sqlite: no automatic WAL checkpoint at the commit");
  app.add_flag("--linked", a.linked, "make pairs of caller and callee transactions (one trace per pair)");
  app.add_option("--unattributed", a.unattributed,
                 "also send an unattributed container of N steps (HTTP_CALL, SOCKET, SQL, DNS, SOCKET_CLOSE, "
                 "DB_CONNECT in turn) whose first call the first transaction answered")
      ->check(CLI::Range(0, 100000));
  CLI11_PARSE(app, argc, argv);
  if (a.endpoint.empty() && a.raw_db.empty() && a.write_dir.empty() && a.writer_db.empty() && !a.decode_bench) {
    std::fprintf(stderr, "txray-test-sender: give --endpoint, --raw-sqlite, --write-dir or --decode-bench\n");
    return 2;
  }

  auto batches = generate(a);
  if (a.decode_bench) {
    std::printf("{\"transactions\":%s%s}\n", std::to_string(a.transactions).c_str(), decode_bench(a, batches).c_str());
    return 0;
  }
  std::vector<txray::v1::Batch> json_batches(a.batch_json.size());
  for (size_t i = 0; i < a.batch_json.size(); ++i)
    if (!read_batch_json(a.batch_json[i], &json_batches[i])) return 2;
  if (a.long_text_bytes > 0)
    for (auto& b : batches)
      for (auto& tx : *b.mutable_transactions())
        if (tx.steps_size() > 1) tx.mutable_steps(1)->set_text(std::string(a.long_text_bytes, 'L'));
  double secs;
  if (!a.raw_db.empty()) {
    secs = raw_insert(a, batches);
  } else if (!a.writer_db.empty()) {
    secs = writer_insert(a, batches);
  } else {
    std::vector<std::string> messages;
    std::mt19937_64 rng(a.seed ^ 0x5eed);
    for (uint64_t i = 0; i < a.garbage; ++i) {
      std::string m(1 + rng() % 4096, '\0');
      for (auto& c : m) c = static_cast<char>(rng());
      messages.push_back(std::move(m));
    }
    if (a.hostile > 0) {
      // Written by hand: building it with protobuf objects would take the memory it is meant to cost.
      std::string tx = "\x09" + std::string(8, '\x01');  // txid (fixed64, field 1)
      tx.reserve(tx.size() + a.hostile_steps * 3);
      for (uint64_t i = 0; i < a.hostile_steps; ++i) tx += std::string("\x9a\x01\x00", 3);  // steps {} (field 19)
      auto head = txray::testing::make_batch({}, 1);
      std::string m = head.SerializeAsString();
      m += '\x2a';  // transactions (field 5), then its length as a varint
      for (uint64_t n = tx.size();; n >>= 7) {
        if (n < 0x80) {
          m += static_cast<char>(n);
          break;
        }
        m += static_cast<char>((n & 0x7f) | 0x80);
      }
      m += tx;
      for (uint64_t i = 0; i < a.hostile; ++i) messages.push_back(m);
    }
    for (uint64_t i = 0; i < a.invalid; ++i) {
      auto b = batches.empty() ? txray::testing::make_batch({}, 1) : batches[0];
      auto* tx = b.add_transactions();
      tx->add_steps()->set_kind(txray::v1::START);
      tx->mutable_steps(0)->set_parent(5);  // a parent that does not exist
      messages.push_back(b.SerializeAsString());
    }
    for (uint64_t i = 0; i < a.oversize; ++i) {
      // A parsable batch, just too big: one huge agent command line.
      auto b = txray::testing::make_batch({}, 1);
      b.mutable_agent()->set_command_line(std::string(a.oversize_bytes, 'x'));
      messages.push_back(b.SerializeAsString());
    }
    for (const auto& b : batches) messages.push_back(b.SerializeAsString());
    for (const auto& b : json_batches) messages.push_back(b.SerializeAsString());
    if (!a.write_dir.empty()) {
      for (size_t i = 0; i < messages.size(); ++i) {
        std::string path = a.write_dir + "/message-" + std::to_string(i) + ".bin";
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f || std::fwrite(messages[i].data(), 1, messages[i].size(), f) != messages[i].size()) {
          std::fprintf(stderr, "txray-test-sender: cannot write %s\n", path.c_str());
          return 1;
        }
        std::fclose(f);
      }
      secs = 0;
    } else {
      secs = send_all(a, messages);
    }
  }
  std::string out = "{\"transactions\":" + std::to_string(a.transactions) +
                    ",\"batches\":" + std::to_string(batches.size()) + ",\"seconds\":" + std::to_string(secs) + ",\"cpu_seconds\":" + std::to_string(g_cpu_s) +
                    ",\"tx_per_s\":" + std::to_string(secs > 0 ? a.transactions / secs : 0.0);
  if (a.print_txids) {
    out += ",\"txids\":[";
    bool first = true;
    for (const auto& b : batches)
      for (const auto& tx : b.transactions()) {
        if (tx.kind() == "unattributed") continue;
        out += (first ? "\"" : ",\"") + txray::hex16(tx.txid()) + "\"";
        first = false;
      }
    out += "]";
  }
  if (g_container_txid) out += ",\"container_txid\":\"" + txray::hex16(g_container_txid) + "\"";
  std::printf("%s}\n", out.c_str());
  return 0;
}
