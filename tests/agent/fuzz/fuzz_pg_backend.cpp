// libFuzzer target: what a PostgreSQL server answers (agent/protocols/pg) to a fixed conversation of the
// program — a StartupMessage, a simple Query of two statements, a pipeline of two extended statements
// before one Sync, a prepare (Parse, Describe, Flush), a portal run with a row limit and a COPY — as
// one stream of backend bytes (fuzz_pg_common.h has the promises checked). Seeds: the right answers,
// made by make_pg_seeds.py, and the real drivers' backend bytes.
#include "fuzz_pg_common.h"

namespace {

std::string be32(uint32_t v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }
std::string be16(uint16_t v) { return {char(v >> 8), char(v)}; }
std::string msg(char t, const std::string& b) { return std::string(1, t) + be32(uint32_t(b.size() + 4)) + b; }
std::string z(const std::string& s) { return s + std::string(1, '\0'); }

const std::string& script() {
  static const std::string s = [] {
    std::string body = be32(196608) + z("user") + z("app") + z("database") + z("shop") + std::string(1, '\0');
    std::string out = be32(uint32_t(body.size() + 4)) + body;
    out += msg('p', z(txray::pg::fuzz::kSecret));
    out += msg('Q', z("SELECT 1; UPDATE t SET a = 1"));
    for (const char* q : {"SELECT * FROM t WHERE id = $1", "INSERT INTO t VALUES ($1)"}) {
      out += msg('P', z("") + z(q) + be16(1) + be32(23));
      out += msg('B', z("") + z("") + be16(1) + be16(1) + be16(1) + be32(4) + be32(42) + be16(0));
      out += msg('D', "P" + z(""));
      out += msg('E', z("") + be32(0));
    }
    out += msg('S', "");
    out += msg('P', z("s1") + z("SELECT a FROM t WHERE b = $1") + be16(0)) + msg('D', "S" + z("s1")) + msg('H', "");
    out += msg('B', z("c1") + z("s1") + be16(0) + be16(1) + be32(2) + "xy" + be16(0)) + msg('E', z("c1") + be32(2)) +
           msg('S', "");
    out += msg('Q', z("COPY t FROM STDIN")) + msg('d', "1\n") + msg('c', "");
    return out;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<txray::pg::fuzz::Record> recs{{true, script()}};
  if (size) recs.push_back({false, std::string(reinterpret_cast<const char*>(data), size)});
  txray::pg::fuzz::check(recs, true);
  return 0;
}
