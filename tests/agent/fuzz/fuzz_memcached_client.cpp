// libFuzzer target: what a program writes on a memcached connection (agent/protocols/memcached), after
// storage commands whose data blocks hold a secret no row may show (set, cas with noreply, ms): the
// input is every byte written after them, with no reply (fuzz_cache_common.h has the promises). Seeds:
// the commands of the real clients' captures (make_cache_seeds.py).
#include "fuzz_cache_common.h"
#include "protocols/memcached/memcached_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace txray;
  using cachefuzz::kSecret;
  static const std::string s(kSecret);
  static const std::string prefix = "set k:1 0 0 " + std::to_string(s.size()) + "\r\n" + s + "\r\n" + "cas k:1 0 0 " +
                                    std::to_string(s.size()) + " 7 noreply\r\n" + s + "\r\n" + "ms k:2 " +
                                    std::to_string(s.size()) + " T0 q\r\n" + s + "\r\n";
  std::vector<cachefuzz::Record> recs = {{true, prefix}};
  if (size) recs.push_back({true, std::string(reinterpret_cast<const char*>(data), size)});
  cachefuzz::check(recs, &memcached::make_client, StepKind::MEMCACHED, true, !cachefuzz::holds_secret(data, size));
  return 0;
}
