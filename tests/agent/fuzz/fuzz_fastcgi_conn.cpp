// libFuzzer target: an accepted FastCGI connection as php-fpm sees it (agent/protocols/fastcgi/
// fastcgi_conn.h, with the agent's real transaction core): the web server's records the program reads
// (BEGIN_REQUEST, PARAMS with 1- and 4-byte name/value lengths, STDIN, ABORT_REQUEST) and the
// application's records it writes (STDOUT with the CGI head, STDERR, END_REQUEST), multiplexed request
// ids, interleaved as records: [d|len_hi][len_lo][bytes…] (bit 7: 1 = the program wrote them, 0 = it
// read them). Checked, the input replayed whole and in pieces of 1..1 and 1..7 bytes:
//  - the transactions (name, status, error, bytes, attributes, the caller's trace context) are the same
//    however the records are cut;
//  - against a model of the record layer written here from the specification: as many transactions as
//    BEGIN_REQUESTs that found one of the kMaxRequests slots, every refused one counted (internal_errors),
//    STDIN / STDOUT content bytes of followed requests exactly in their transactions' bytes, the stream
//    given up at the first header that is not FastCGI 1 — counted once (streams_unparsed) — and never fed
//    again;
//  - every transaction begun is ended by the connection's end, none left open;
//  - through the accepted connection's tracker (HttpConn, which hands a connection whose first bytes are
//    a BEGIN_REQUEST over), the same transactions, the reads cut or not; none for a stream whose first
//    byte is FastCGI's version but whose first record is no BEGIN_REQUEST.
// Seeds: nginx's and php-fpm's records (tests/agent/protocols/fastcgi/fcgi_bytes.h's shapes and a
// capture of nginx 1.22 → php-fpm 8.2), made by make_cache_seeds.py.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/counters.h"
#include "core/recorder.h"
#include "core/transaction.h"
#include "protocols/fastcgi/fastcgi_conn.h"
#include "protocols/fastcgi/fastcgi_records.h"
#include "protocols/http1/http_conn.h"
#include "protocols/uwsgi/uwsgi_packet.h"

using namespace txray;

namespace {

struct Record {
  bool sent;
  std::string bytes;
};

[[noreturn]] void fail(const char* what, const std::string& a = {}, const std::string& b = {}) {
  fprintf(stderr, "invariant broken: %s\n--- one\n%s\n--- other\n%s\n", what, a.c_str(), b.c_str());
  abort();
}

std::vector<std::unique_ptr<Transaction>>& done() {
  static auto* v = new std::vector<std::unique_ptr<Transaction>>();
  return *v;
}
void collect(Transaction* t) { done().emplace_back(t); }

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) snprintf(b, sizeof b, "%02x", p[i]), s += b;
  return s;
}

std::string describe(const Transaction& t) {
  std::string s = t.kind + "|" + t.name + "|" + std::to_string(t.status) + "|" + t.error + "|R=" +
                  std::to_string(t.bytes_read) + "|W=" + std::to_string(t.bytes_written) + "|" + t.client_addr;
  // the caller's context when there was one (else the ids are the agent's own, random)
  if (t.parent_span_id)
    s += "|trace=" + hex(t.trace_id, 16) + "/" + std::to_string(t.parent_span_id) + "/" + std::to_string(t.trace_flags);
  s += "|ts=" + t.tracestate + "|bg=" + t.baggage;
  for (const Attr& a : t.attrs) s += "|" + a.key + "=" + a.value;
  return s + "\n";
}

// FastCGI's record layer, from the specification, for what the tracker must have made of the stream.
struct Model {
  static constexpr size_t kSlots = FcgiServer::kMaxRequests;
  struct Dir {
    uint8_t hdr[8];
    size_t have = 0;
    bool in_record = false;
    uint8_t type = 0;
    uint16_t id = 0;
    uint32_t content_left = 0, padding_left = 0;
  } in, out;
  uint16_t open[kSlots] = {};  // request ids followed (0: free)
  uint64_t begun = 0, refused = 0, stdin_bytes = 0, stdout_bytes = 0;
  bool dead = false;

  int slot(uint16_t id) const {
    for (size_t i = 0; i < kSlots; ++i)
      if (open[i] == id) return int(i);
    return -1;
  }
  void header(bool sent, uint8_t type, uint16_t id) {
    if (!sent && type == 1 && id) {
      int s = slot(id);
      if (s >= 0) open[s] = 0;  // the same id again: the old request ends
      s = slot(0);
      if (s < 0) {
        ++refused;
      } else {
        open[s] = id;
        ++begun;
      }
    }
  }
  void content(bool sent, uint8_t type, uint16_t id, size_t n) {
    if (!id || slot(id) < 0) return;
    if (!sent && type == 5) stdin_bytes += n;
    if (sent && type == 6) stdout_bytes += n;
  }
  void record_end(bool sent, uint8_t type, uint16_t id) {
    if (sent && type == 3 && id) {
      int s = slot(id);
      if (s >= 0) open[s] = 0;
    }
  }
  // Returns how many bytes were taken (all, unless the stream died in them).
  size_t feed(bool sent, const uint8_t* p, size_t n) {
    Dir& d = sent ? out : in;
    size_t i = 0;
    while (i < n && !dead) {
      if (!d.in_record) {
        d.hdr[d.have++] = p[i++];
        if (d.have < 8) continue;
        d.have = 0;
        if (d.hdr[0] != 1 || d.hdr[1] < 1 || d.hdr[1] > 11) {
          dead = true;
          return i;
        }
        d.in_record = true;
        d.type = d.hdr[1];
        d.id = uint16_t(d.hdr[2] << 8 | d.hdr[3]);
        d.content_left = uint32_t(d.hdr[4] << 8 | d.hdr[5]);
        d.padding_left = d.hdr[6];
        header(sent, d.type, d.id);
      } else if (d.content_left) {
        size_t k = std::min<size_t>(d.content_left, n - i);
        content(sent, d.type, d.id, k);
        d.content_left -= uint32_t(k);
        i += k;
      } else {
        size_t k = std::min<size_t>(d.padding_left, n - i);
        d.padding_left -= uint32_t(k);
        i += k;
      }
      if (d.in_record && !d.content_left && !d.padding_left) {
        d.in_record = false;
        record_end(sent, d.type, d.id);
      }
    }
    return i;
  }
};

std::string replay(const std::vector<Record>& recs, size_t piece, const Model& m) {
  static bool init = [] {
    tx::set_sink(collect);
    return true;
  }();
  (void)init;
  done().clear();
  uint64_t unparsed0 = counters().streams_unparsed.load(), internal0 = counters().internal_errors.load();
  auto srv = std::make_unique<FcgiServer>();
  srv->reset("unix", 9);
  bool dead = false;
  std::string copy;
  for (const Record& r : recs) {
    size_t at = 0, k = 0;
    while (at < r.bytes.size() && !dead) {
      size_t n = r.bytes.size() - at;
      if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
      copy.assign(r.bytes, at, n);
      bool ok = r.sent ? srv->on_write(copy.data(), n) : srv->on_read(copy.data(), n);
      if (copy.compare(0, n, r.bytes, at, n) != 0) fail("the tracker changed the program's bytes");
      if (!ok != srv->dead()) fail("on_read/on_write and dead() disagree");
      dead = !ok;
      at += n;
    }
    if (dead && (srv->on_read("\x01", 1) || srv->on_write("\x01", 1))) fail("given up, then not");
  }
  srv->on_close();
  if (srv->busy()) fail("requests still open after the connection's end");
  uint64_t unparsed = counters().streams_unparsed.load() - unparsed0;
  uint64_t internal = counters().internal_errors.load() - internal0;
  std::string out;
  uint64_t rd = 0, wr = 0;
  for (auto& t : done()) {
    out += describe(*t);
    rd += t->bytes_read;
    wr += t->bytes_written;
  }
  char want[200], got[200];
  snprintf(want, sizeof want, "tx=%llu refused=%llu stdin=%llu stdout=%llu dead=%d", (unsigned long long)m.begun,
           (unsigned long long)m.refused, (unsigned long long)m.stdin_bytes, (unsigned long long)m.stdout_bytes,
           int(m.dead));
  snprintf(got, sizeof got, "tx=%zu refused=%llu stdin=%llu stdout=%llu dead=%d", done().size(),
           (unsigned long long)internal, (unsigned long long)rd, (unsigned long long)wr, int(dead));
  if (strcmp(want, got) != 0) fail("the tracker and the record model disagree", want, got + ("\n" + out));
  if (unparsed != (dead ? 1u : 0u)) fail("a stream given up not counted once", std::to_string(unparsed));
  done().clear();
  return out;
}

// The same through HttpConn, as the socket hooks feed an accepted connection.
std::string replay_http(const std::vector<Record>& recs, size_t piece) {
  done().clear();
  auto conn = std::make_unique<HttpConn>();
  conn->reset("unix", 9);
  for (const Record& r : recs) {
    size_t at = 0, k = 0;
    while (at < r.bytes.size()) {
      size_t n = r.bytes.size() - at;
      if (piece) n = std::min(n, 1 + size_t(uint8_t(r.bytes[k++ % r.bytes.size()])) % piece);
      if (r.sent) conn->on_write(r.bytes.data() + at, n);
      else conn->on_read(r.bytes.data() + at, n);
      at += n;
    }
  }
  conn->on_close();
  std::string out;
  for (auto& t : done()) out += describe(*t);
  done().clear();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Record> recs;
  for (size_t i = 0; i + 2 <= size;) {
    bool sent = data[i] & 0x80;
    size_t len = size_t(data[i] & 0x7f) << 8 | data[i + 1];
    i += 2;
    len = std::min(len, size - i);
    if (len) recs.push_back({sent, std::string(reinterpret_cast<const char*>(data + i), len)});
    i += len;
  }
  Model m;
  for (const Record& r : recs) m.feed(r.sent, reinterpret_cast<const uint8_t*>(r.bytes.data()), r.bytes.size());
  std::string whole = replay(recs, 0, m);
  for (size_t piece : {1, 7}) {
    std::string cut = replay(recs, piece, m);
    if (cut != whole) fail("transactions differ with the records cut in pieces", whole, cut);
  }
  // A server reads first; HttpConn takes the connection as FastCGI from a BEGIN_REQUEST's first 10 bytes
  // (whatever their reads), and from then on feeds the tracker every byte both ways.
  if (!recs.empty() && !recs[0].sent) {
    std::string first;
    for (const Record& r : recs) {
      if (r.sent) break;
      first += r.bytes;
    }
    if (first.size() >= 10 && fcgi::looks_like_begin(first.data(), first.size()) == 1 && uint8_t(first[1]) == fcgi::kBeginRequest) {
      for (size_t piece : {0, 1, 7}) {
        std::string h = replay_http(recs, piece);
        if (h != whole) fail("HttpConn's transactions differ from the tracker's", whole, h);
      }
    } else if (first.size() >= 10 && uint8_t(first[0]) == 1 && fcgi::looks_like_begin(first.data(), first.size()) < 0 &&
               uwsgi::looks_like_packet(first.data(), first.size()) < 0) {
      // not FastCGI (nor uwsgi, nor HTTP: no request line begins with 0x01), however the reads came
      for (size_t piece : {0, 1, 7})
        if (std::string h = replay_http(recs, piece); !h.empty()) fail("transactions of a stream that is no request", h);
    }
  }
  return 0;
}
