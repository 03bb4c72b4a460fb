// libFuzzer target: what a memcached server answers (agent/protocols/memcached), after a pipeline of real
// commands a program wrote (a multi-key get, gets, set, add, delete, incr, touch, stats, version, meta
// mg/ms/md/ma with quiet ones and mn): the input is every byte read back — values, status words, meta
// flags, STAT lines, errors, garbage (fuzz_cache_common.h has the promises). Seeds: the replies of the
// captures and of this pipeline (make_cache_seeds.py).
#include "fuzz_cache_common.h"
#include "protocols/memcached/memcached_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace txray;
  static const std::string pipeline =
      "get item:42 missing:7 item:43\r\n"
      "gets item:42\r\n"
      "set n:1 0 0 2\r\n10\r\n"
      "add item:42 0 0 5\r\nagain\r\n"
      "delete item:42\r\n"
      "incr n:1 5\r\n"
      "touch n:1 100\r\n"
      "stats items\r\n"
      "version\r\n"
      "mg meta:5 v f t\r\n"
      "mg meta:6 v q k\r\n"
      "mg meta:5 s v q k Oab\r\n"
      "ms meta:7 2 q\r\nhi\r\n"
      "md meta:8 q\r\n"
      "mn\r\n"
      "ma counter:1 N0 J13 v\r\n";
  std::vector<cachefuzz::Record> recs = {{true, pipeline}};
  if (size) recs.push_back({false, std::string(reinterpret_cast<const char*>(data), size)});
  cachefuzz::check(recs, &memcached::make_client, StepKind::MEMCACHED, true);
  return 0;
}
