// libFuzzer target: inbound uwsgi (agent/protocols/uwsgi/uwsgi_conn.cpp, uwsgi_packet.cpp) behind the
// HTTP/1 connection tracker that hands it the connection, with the agent's real transaction core: what
// an application server (uWSGI `--socket`) reads from and writes to an accepted connection. Input: records
// (fuzz_uwsgi_common.h): reads, writes, sendfile writes (kind 3: the length only), connection ends. Checked:
//  - the same transactions (name, status, error, bytes both ways, parent span, attributes) whether each
//    record is fed whole or cut in pieces of 1..7 bytes: no state depends on where the calls split;
//  - after the connection's end no request is in flight (every transaction begun was ended);
//  - a transaction never counts more bytes than the program read / wrote;
//  - a stream given up is counted at most once per connection.
#include <string>
#include <vector>

#include "core/counters.h"
#include "fuzz_uwsgi_common.h"
#include "protocols/http1/http_conn.h"

using namespace txray;
using namespace txray::uwsgi::fuzz;

namespace {

std::string describe(const Transaction& t) {
  return t.name + "|" + std::to_string(t.status) + "|" + t.error + "|" + std::to_string(t.bytes_read) + "|" +
         std::to_string(t.bytes_written) + "|" + std::to_string(t.parent_span_id) + describe_attrs(t.attrs) + "\n";
}

std::string replay(const std::vector<Record>& recs, size_t piece) {
  install_sink();
  done().clear();
  counters().reset();
  std::string out;
  uint64_t read = 0, written = 0, connections = 1;
  {
    HttpConn conn;
    conn.reset("unix", 7);
    for (const Record& r : recs) {
      if (r.kind == 2) {
        conn.on_close();
        if (conn.in_request()) fail("a request in flight after the connection's end");
        conn.reset("unix", 7);
        ++connections;
        continue;
      }
      if (r.kind == 3) {
        uint64_t n = r.bytes.size() * 97;
        written += n;
        conn.on_write_opaque(n);
        continue;
      }
      size_t at = 0, k = 0;
      while (at < r.bytes.size()) {
        size_t n = r.bytes.size() - at;
        if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
        if (r.kind == 0) read += n, conn.on_read(r.bytes.data() + at, n);
        else written += n, conn.on_write(r.bytes.data() + at, n);
        at += n;
      }
    }
    conn.on_close();
    if (conn.in_request()) fail("a request in flight after the connection's end");
  }
  tx::make_current(nullptr);
  uint64_t txr = 0, txw = 0;
  for (auto& t : done()) {
    out += describe(*t);
    txr += t->bytes_read;
    txw += t->bytes_written;
  }
  if (txr > read) fail("transactions read more bytes than the program", out);
  if (txw > written) fail("transactions wrote more bytes than the program", out);
  if (counters().streams_unparsed.load() > connections) fail("a stream given up counted twice", out);
  done().clear();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Record> recs = records(data, size);
  std::string whole = replay(recs, 0);
  for (size_t piece : {1, 7}) {
    std::string cut = replay(recs, piece);
    if (cut != whole) fail("transactions differ with the records cut in pieces", whole, cut);
  }
  return 0;
}
