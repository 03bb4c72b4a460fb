// txray-bench-wire-pg: the cost of one PostgreSQL statement as a program sees it, through libpq or
// through a client that speaks the protocol itself (as asyncpg, node-postgres and JDBC do).
//
//   txray-bench-wire-pg HOST PORT USER DATABASE N BATCH libpq|wire
//
// A table of 1,000 rows; each statement is a primary-key lookup returning one row, prepared once:
//   libpq: PQprepare, then per statement PQexecPrepared (text parameter) + PQgetvalue + PQclear — under
//          the agent the libpq hooks record it (its socket is left to them);
//   wire:  the same messages libpq sends (Bind, Describe portal, Execute, Sync) written in one write(),
//          the answer read up to ReadyForQuery, the int4 parameter in binary as asyncpg sends it — under
//          the agent the wire parser (agent/protocols/pg) records it.
// BATCH = 0: the statements simply run (TXRAY_MODE=process: one transaction, folded past the step
// limit); BATCH > 0: a transaction per BATCH statements through the C API, each statement a full row.
// Only the statements are timed, inside run_statements() (callgrind counts that function). Prints
// "ns_per_stmt WALL CPU" (thread CPU: the client's own work, where the agent adds).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <postgresql/libpq-fe.h>
#include <sys/socket.h>
#include <txray/txray.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRows = 1000;
constexpr const char* kLookup = "SELECT v FROM kv WHERE id = $1";

long thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

[[noreturn]] void die(const char* what, const char* detail = "") {
  std::fprintf(stderr, "txray-bench-wire-pg: %s %s\n", what, detail);
  std::exit(1);
}

// --- libpq ---------------------------------------------------------------------------------------------

PGconn* g_pq = nullptr;

void pq_exec(const char* q) {
  PGresult* r = PQexec(g_pq, q);
  ExecStatusType st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) die(q, PQerrorMessage(g_pq));
  PQclear(r);
}

long pq_lookup(int id) {
  char v[16];
  std::snprintf(v, sizeof v, "%d", id);
  const char* values[1] = {v};
  PGresult* r = PQexecPrepared(g_pq, "lookup", 1, values, nullptr, nullptr, 0);
  if (PQresultStatus(r) != PGRES_TUPLES_OK) die("lookup", PQerrorMessage(g_pq));
  long n = PQntuples(r) ? long(PQgetlength(r, 0, 0)) : 0;
  PQclear(r);
  return n;
}

// --- the wire, by hand -----------------------------------------------------------------------------------

int g_fd = -1;
std::string g_in;

void put32(std::string& s, uint32_t v) {
  s.push_back(char(v >> 24)), s.push_back(char(v >> 16)), s.push_back(char(v >> 8)), s.push_back(char(v));
}
void put16(std::string& s, uint16_t v) { s.push_back(char(v >> 8)), s.push_back(char(v)); }
void message(std::string& out, char type, const std::string& body) {
  out.push_back(type);
  put32(out, uint32_t(body.size() + 4));
  out += body;
}
uint32_t get32(const char* p) {
  auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) << 24 | uint32_t(u[1]) << 16 | uint32_t(u[2]) << 8 | u[3];
}

void send_all(const std::string& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t w = write(g_fd, b.data() + off, b.size() - off);
    if (w <= 0) die("write");
    off += size_t(w);
  }
}

// Reads up to ReadyForQuery; returns the bytes of the first column of the DataRows.
long read_until_ready() {
  long got = 0;
  char buf[8192];
  size_t at = 0;
  for (;;) {
    while (g_in.size() - at >= 5) {
      uint32_t len = get32(g_in.data() + at + 1);
      if (g_in.size() - at < 1 + size_t(len)) break;
      char t = g_in[at];
      const char* body = g_in.data() + at + 5;
      if (t == 'E') die("server error", std::string(body, len - 4).c_str());
      if (t == 'D' && len >= 10) got += long(int32_t(get32(body + 2)));
      at += 1 + len;
      if (t == 'Z') {
        g_in.erase(0, at);
        return got;
      }
    }
    ssize_t r = read(g_fd, buf, sizeof buf);
    if (r <= 0) die("read");
    g_in.append(buf, size_t(r));
  }
}

void wire_connect(const char* host, int port, const char* user, const char* db) {
  g_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  inet_pton(AF_INET, host, &a.sin_addr);
  if (connect(g_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) die("connect");
  int one = 1;
  setsockopt(g_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string body;
  put32(body, 196608);
  for (const char* kv : {"user", user, "database", db}) body.append(kv).push_back('\0');
  body.push_back('\0');
  std::string start;
  put32(start, uint32_t(body.size() + 4));
  send_all(start + body);
  read_until_ready();  // trust authentication: AuthenticationOk … ReadyForQuery
  std::string parse, out;
  parse.append("lookup").push_back('\0');
  parse.append(kLookup).push_back('\0');
  put16(parse, 1);
  put32(parse, 23);  // int4
  message(out, 'P', parse);
  message(out, 'S', "");
  send_all(out);
  read_until_ready();
}

long wire_lookup(int id) {
  std::string bind, out;
  bind.push_back('\0');  // the unnamed portal
  bind.append("lookup").push_back('\0');
  put16(bind, 1), put16(bind, 1);  // one format code: binary
  put16(bind, 1), put32(bind, 4), put32(bind, uint32_t(id));
  put16(bind, 0);  // results in text
  message(out, 'B', bind);
  message(out, 'D', std::string("P") + '\0');
  std::string exec(1, '\0');
  put32(exec, 0);
  message(out, 'E', exec);
  message(out, 'S', "");
  send_all(out);
  return read_until_ready();
}

// The measured loop (callgrind: --toggle-collect=*run_statements*).
__attribute__((noinline)) long run_statements(bool wire, long first, long count) {
  long sink = 0;
  for (long i = first; i < first + count; ++i) {
    int id = int(i * 7919 % kRows);
    sink += wire ? wire_lookup(id) : pq_lookup(id);
  }
  return sink;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: txray-bench-wire-pg HOST PORT USER DATABASE N BATCH libpq|wire\n");
    return 2;
  }
  long n = std::atol(argv[5]), batch = std::atol(argv[6]);
  bool wire = std::strcmp(argv[7], "wire") == 0;
  if (n <= 0 || batch < 0) die("N must be > 0 and BATCH >= 0");
  std::string conninfo = std::string("host=") + argv[1] + " port=" + argv[2] + " user=" + argv[3] + " dbname=" +
                         argv[4] + " sslmode=disable";
  if (!wire) {
    g_pq = PQconnectdb(conninfo.c_str());
    if (PQstatus(g_pq) != CONNECTION_OK) die("connect", PQerrorMessage(g_pq));
    pq_exec("CREATE TABLE IF NOT EXISTS kv (id int PRIMARY KEY, v text NOT NULL)");
    pq_exec("INSERT INTO kv SELECT g, 'value-' || g FROM generate_series(0, 999) g ON CONFLICT DO NOTHING");
    Oid types[1] = {23};
    PGresult* r = PQprepare(g_pq, "lookup", kLookup, 1, types);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die("prepare", PQerrorMessage(g_pq));
    PQclear(r);
  } else {
    wire_connect(argv[1], std::atoi(argv[2]), argv[3], argv[4]);
  }
  long sink = run_statements(wire, 0, 200);  // warm-up

  Clock::duration spent{};
  long cpu = 0, done = 0;
  while (done < n) {
    long chunk = batch ? std::min(batch, n - done) : n;
    if (batch) txray_begin("wire-pg batch");
    long c0 = thread_cpu_ns();
    auto t0 = Clock::now();
    sink += run_statements(wire, done, chunk);
    spent += Clock::now() - t0;
    cpu += thread_cpu_ns() - c0;
    if (batch) txray_end(0, nullptr);
    done += chunk;
  }
  if (g_pq) PQfinish(g_pq);
  if (g_fd >= 0) {
    std::string bye;
    message(bye, 'X', "");
    send_all(bye);
    close(g_fd);
  }
  double ns = double(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count()) / double(n);
  std::printf("ns_per_stmt %.0f %.0f\n", ns, double(cpu) / double(n));
  return sink > 0 ? 0 : 1;
}
