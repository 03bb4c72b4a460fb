// libFuzzer target: a PostgreSQL connection both ways (agent/protocols/pg), what a program writes and
// reads interleaved as records (fuzz_pg_common.h has the format and the promises checked). Seeds: the
// real drivers' captures of tests/agent/protocols/pg/captures/, made by make_pg_seeds.py.
#include "fuzz_pg_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  txray::pg::fuzz::check(txray::pg::fuzz::records(data, size));
  return 0;
}
