// libFuzzer target: a MySQL/MariaDB connection both ways (agent/protocols/mysql), what a program writes
// and reads interleaved as records (fuzz_mysql_common.h has the format and the promises checked). Seeds:
// the real drivers' captures of tests/agent/protocols/mysql/captures/, made by make_mysql_seeds.py.
#include "fuzz_mysql_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  txray::mysql::fuzz::check(txray::mysql::fuzz::records(data, size));
  return 0;
}
