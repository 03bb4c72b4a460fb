// libFuzzer target: what a program writes on a MySQL/MariaDB connection, after a real handshake — the
// input is every byte the client sends (commands, their texts and binds), with none of the server's
// replies: bounds on what is owed, and rows the same however the writes are cut.
#include "fuzz_mysql_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto recs = txray::mysql::fuzz::handshake();
  recs.push_back({true, std::string(reinterpret_cast<const char*>(data), size)});
  txray::mysql::fuzz::check(recs);
  return 0;
}
