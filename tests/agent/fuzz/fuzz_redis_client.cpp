// libFuzzer target: what a program writes on a Redis connection (agent/protocols/redis), after commands
// that carry a secret where no row may show it (AUTH's password, HELLO's AUTH arguments, a SET value):
// the input is every byte written after them, with no reply (fuzz_cache_common.h has the promises).
// Seeds: the commands of the real clients' captures (make_cache_seeds.py).
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
  using cachefuzz::kSecret;
  static const std::string prefix = command({"AUTH", "default", kSecret}) +
                                    command({"HELLO", "3", "AUTH", "default", kSecret}) +
                                    command({"SET", "session:1", kSecret}) + command({"MIGRATE", "h", "1", "k", "0", "5", "AUTH", kSecret});
  std::vector<cachefuzz::Record> recs = {{true, prefix}};
  if (size) recs.push_back({true, std::string(reinterpret_cast<const char*>(data), size)});
  cachefuzz::check(recs, &redis::make_client, StepKind::REDIS, false, !cachefuzz::holds_secret(data, size),
                   &cachefuzz::redis_blank_lines);
  return 0;
}
