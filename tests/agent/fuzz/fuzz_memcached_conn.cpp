// libFuzzer target: a memcached connection both ways (agent/protocols/memcached), what a program writes
// (text and meta commands, data blocks) and reads (VALUE/END, STORED…, VA/HD/EN/MN, STAT lines, errors)
// interleaved as records (fuzz_cache_common.h has the format and the promises checked). Seeds: the
// conversations of pymemcache, libmemcached's tools and meta commands against memcached 1.6 in
// tests/agent/protocols/memcached/captures/, made by make_cache_seeds.py.
#include "fuzz_cache_common.h"
#include "protocols/memcached/memcached_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace txray;
  cachefuzz::check(cachefuzz::records(data, size), &memcached::make_client, StepKind::MEMCACHED, true);
  return 0;
}
