// libFuzzer target: a Redis connection both ways (agent/protocols/redis), what a program writes (RESP
// commands) and reads (RESP2 and RESP3 replies, pushes, pub/sub messages) interleaved as records
// (fuzz_cache_common.h has the format and the promises checked). Seeds: the conversations of redis-py and
// redis-cli (RESP2 and HELLO 3) in tests/agent/protocols/redis/captures/, made by make_cache_seeds.py.
#include "fuzz_cache_common.h"
#include "protocols/redis/redis_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace txray;
  cachefuzz::check(cachefuzz::records(data, size), &redis::make_client, StepKind::REDIS, false, false,
                   &cachefuzz::redis_blank_lines);
  return 0;
}
