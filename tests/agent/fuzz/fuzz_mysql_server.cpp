// libFuzzer target: what a MySQL/MariaDB server answers, after a real handshake and a pipeline of real
// commands (a query, a prepare, an execute of statement 1 with two parameters, a fetch, a ping) — the
// input is every byte the server sends back: result sets, OK/ERR/EOF, prepare OKs, garbage.
#include "fuzz_mysql_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto recs = txray::mysql::fuzz::handshake();
  auto pkt = [](std::string payload) {
    std::string h(4, '\0');
    h[0] = char(payload.size());
    return h + payload;
  };
  recs.push_back({true, pkt("\x03select id, name from users where id = 2") +
                            pkt("\x16select * from users where id = ? and name = ?") +
                            pkt(std::string("\x17\x01\x00\x00\x00\x01\x01\x00\x00\x00\x00\x01\x03\x00\xfd\x00"
                                            "\x05\x00\x00\x00\x03" "bob", 21)) +
                            pkt(std::string("\x1c\x01\x00\x00\x00\x05\x00\x00\x00", 9)) + pkt("\x0e")});
  recs.push_back({false, std::string(reinterpret_cast<const char*>(data), size)});
  txray::mysql::fuzz::check(recs);
  return 0;
}
