// libFuzzer target: what a Redis server answers (agent/protocols/redis), after a pipeline of real
// commands a program wrote (PING, SELECT, GET, a MULTI/EXEC block, HGETALL, BLPOP, SUBSCRIBE): the input
// is every byte read back — RESP2 and RESP3 replies, errors, pushes, pub/sub messages, garbage
// (fuzz_cache_common.h has the promises). Seeds: the replies of the real servers' captures and the
// replies of this pipeline (make_cache_seeds.py).
#include "fuzz_cache_common.h"
#include "protocols/redis/redis_client.h"

namespace {

std::string command(std::initializer_list<std::string_view> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) s += "$" + std::to_string(a.size()) + "\r\n" + std::string(a) + "\r\n";
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace txray;
  static const std::string pipeline =
      command({"PING"}) + command({"SELECT", "2"}) + command({"GET", "user:1001"}) + command({"MULTI"}) +
      command({"SET", "a:1", "x"}) + command({"GET", "a:1"}) + command({"EXEC"}) + command({"HGETALL", "user:1001"}) +
      command({"BLPOP", "list:9", "1"}) + command({"SUBSCRIBE", "news:1", "news:2"});
  std::vector<cachefuzz::Record> recs = {{true, pipeline}};
  if (size) recs.push_back({false, std::string(reinterpret_cast<const char*>(data), size)});
  cachefuzz::check(recs, &redis::make_client, StepKind::REDIS, false, false, &cachefuzz::redis_blank_lines);
  return 0;
}
