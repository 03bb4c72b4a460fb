#include "synthetic.h"

namespace txray::testing {

namespace {

void attr(google::protobuf::RepeatedPtrField<v1::Attribute>* attrs, const char* k, std::string v) {
  auto* a = attrs->Add();
  a->set_key(k);
  a->set_value(std::move(v));
}

}  // namespace

v1::Batch make_batch(const SynthOptions& o, uint64_t batch_seq) {
  v1::Batch b;
  auto* a = b.mutable_agent();
  a->set_instance_id(o.instance_id);
  a->set_host(o.host);
  a->set_pid(4242);
  a->set_ppid(1);
  a->set_program("synthetic-service");
  a->set_app(o.app);
  a->set_agent_version("0.1.0-test");
  a->set_start_unix_ns(1700000000000000000ull);
  a->set_mode("http");
  a->set_command_line("synthetic-service --port 8080");
  b.set_batch_seq(batch_seq);
  b.set_sent_unix_ns(1700000000000000000ull + batch_seq);
  return b;
}

v1::Transaction* add_transaction(v1::Batch& b, const SynthOptions& o, uint64_t seq, std::mt19937_64& rng,
                                 uint64_t start_unix_ns) {
  auto* tx = b.add_transactions();
  tx->set_txid(rng() | 1);
  std::string trace(16, '\0');
  for (auto& c : trace) c = static_cast<char>(rng());
  tx->set_trace_id(trace);
  tx->set_name("GET /orders/" + std::to_string(seq % 7));
  tx->set_kind("http");
  tx->set_start_unix_ns(start_unix_ns);
  tx->set_client_addr("127.0.0.1:" + std::to_string(40000 + seq % 20000));
  tx->set_status(seq % 50 == 0 ? 500 : 200);
  if (seq % 50 == 0) tx->set_error("HTTP 500");
  tx->set_tid(4243);
  attr(tx->mutable_attributes(), "user_agent", "curl/7.88.1");
  if (o.queries)
    attr(tx->mutable_attributes(), "query",
         "page=" + std::to_string(seq % 9) + "&sort=asc&q=item-" + std::to_string(seq % 11));

  const int n = std::max(2, o.steps);
  uint64_t offset = 0, elapsed = 0, cpu = 0, sql_ns = 0, sql_count = 0, call_ns = 0, call_count = 0;
  int open_socket = -1;
  for (int i = 0; i < n; ++i) {
    auto* s = tx->add_steps();
    uint64_t gap = i == 0 ? 0 : 1000 + rng() % 2000000;
    uint64_t c = i == 0 ? 0 : rng() % (gap + 1);
    offset += gap;
    elapsed += gap;
    cpu += c;
    s->set_gap_ns(gap);
    s->set_cpu_ns(c);
    s->set_start_offset_ns(offset);
    s->set_parent(-1);
    if (i == 0) {
      s->set_kind(v1::START);
    } else if (i == n - 1) {
      s->set_kind(v1::END);
    } else {
      switch (i % 5) {
        case 1:
          s->set_kind(v1::SOCKET);
          s->set_id(rng());
          s->set_elapsed_ns(gap / 2);
          attr(s->mutable_attributes(), "addr", "10.0.0." + std::to_string(seq % 4 + 1));
          attr(s->mutable_attributes(), "port", "5432");
          attr(s->mutable_attributes(), "localport", std::to_string(30000 + seq % 30000));
          open_socket = i;
          break;
        case 2: {
          s->set_kind(v1::SQL);
          s->set_text("SELECT * FROM orders WHERE id = ? AND region = ?" + std::to_string(seq % 13));
          s->set_rows(static_cast<int64_t>(rng() % 100));
          s->set_fetch_ns(gap / 4);
          s->set_elapsed_ns(gap / 2);
          s->set_fingerprint(0xfeed0000ull + seq % 13);
          s->set_changes(-1);
          if (open_socket >= 0) s->set_parent(open_socket);
          sql_ns += gap / 2;
          ++sql_count;
          break;
        }
        case 3:
          s->set_kind(v1::HTTP_CALL);
          s->set_text("http://backend:8080/stock/" + std::to_string(seq % 5) + (o.queries ? "?item=?&key=?" : ""));
          s->set_id(rng());
          s->set_status(200);
          s->set_elapsed_ns(gap / 2);
          s->set_bytes_written(180);
          s->set_bytes_read(1200);
          attr(s->mutable_attributes(), "method", "GET");
          call_ns += gap / 2;
          ++call_count;
          break;
        case 4:
          s->set_kind(v1::SOCKET_CLOSE);
          s->set_id(open_socket >= 0 ? tx->steps(open_socket).id() : rng());
          s->set_bytes_read(rng() % 100000);
          s->set_bytes_written(222);
          open_socket = -1;
          break;
        default:
          s->set_kind(v1::MESSAGE);
          s->set_text("cache miss for key orders:" + std::to_string(seq % 3));
          break;
      }
    }
  }
  tx->set_elapsed_ns(elapsed);
  tx->set_cpu_ns(cpu);
  tx->set_sql_ns(sql_ns);
  tx->set_sql_count(static_cast<uint32_t>(sql_count));
  tx->set_call_ns(call_ns);
  tx->set_call_count(static_cast<uint32_t>(call_count));
  tx->set_bytes_read(300);
  tx->set_bytes_written(1000 + seq % 1000);
  return tx;
}

v1::Transaction* add_unattributed(v1::Batch& b, uint64_t seq, int steps, std::mt19937_64& rng,
                                  uint64_t start_unix_ns) {
  auto* tx = b.add_transactions();
  tx->set_txid(rng() | 1);
  tx->set_name("unattributed steps");
  tx->set_kind("unattributed");
  tx->set_start_unix_ns(start_unix_ns);
  tx->set_tid(4243);
  uint64_t offset = 0, call_ns = 0, sql_ns = 0;
  uint32_t calls = 0, sqls = 0;
  auto row = [&](v1::StepKind k, uint64_t gap) {
    auto* s = tx->add_steps();
    s->set_kind(k);
    s->set_parent(-1);
    offset += gap;
    s->set_gap_ns(gap);
    s->set_start_offset_ns(offset);
    return s;
  };
  row(v1::START, 0);
  for (int i = 0; i < steps; ++i) {
    const uint64_t gap = 1000000 + rng() % 1000000;
    switch (i % 6) {
      case 0: {
        auto* s = row(v1::HTTP_CALL, gap);
        s->set_text("http://backend:8080/b/" + std::to_string(seq * 100 + i));
        s->set_id(rng() | 1);
        s->set_status(200);
        s->set_elapsed_ns(gap / 2);
        attr(s->mutable_attributes(), "method", "GET");
        call_ns += gap / 2;
        ++calls;
        break;
      }
      case 1: {
        auto* s = row(v1::SOCKET, gap);
        s->set_id(rng());
        s->set_elapsed_ns(gap / 4);
        attr(s->mutable_attributes(), "addr", "10.0.0.9");
        attr(s->mutable_attributes(), "port", "8080");
        attr(s->mutable_attributes(), "localport", std::to_string(40000 + i));
        break;
      }
      case 2: {
        auto* s = row(v1::SQL, gap);
        s->set_text("SELECT 1");
        s->set_rows(1);
        s->set_changes(-1);
        s->set_elapsed_ns(gap / 3);
        sql_ns += gap / 3;
        ++sqls;
        break;
      }
      case 3: {
        auto* s = row(v1::DNS, gap);
        s->set_text("backend");
        s->set_elapsed_ns(gap / 5);
        break;
      }
      case 4: {
        auto* s = row(v1::SOCKET_CLOSE, gap);
        s->set_id(rng());
        s->set_bytes_read(100);
        s->set_bytes_written(50);
        break;
      }
      default: {
        auto* s = row(v1::DB_CONNECT, gap);
        s->set_text("dbname=orders");
        s->set_elapsed_ns(gap / 2);
        s->set_error("connection refused");
        break;
      }
    }
  }
  row(v1::END, 1000);
  tx->set_elapsed_ns(offset);
  tx->set_call_ns(call_ns);
  tx->set_call_count(calls);
  tx->set_sql_ns(sql_ns);
  tx->set_sql_count(sqls);
  return tx;
}

}  // namespace txray::testing
