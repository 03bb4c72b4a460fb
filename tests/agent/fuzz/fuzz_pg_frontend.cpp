// libFuzzer target: what a program writes on a PostgreSQL connection (agent/protocols/pg), from its first
// byte, as one stream: the StartupMessage / SSLRequest, then any frontend messages (fuzz_pg_common.h has
// the promises checked). Seeds: the frontend bytes of the real drivers' captures, and the same after a
// server that answered nothing.
#include "fuzz_pg_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<txray::pg::fuzz::Record> recs;
  if (size) recs.push_back({true, std::string(reinterpret_cast<const char*>(data), size)});
  txray::pg::fuzz::check(recs);
  return 0;
}
