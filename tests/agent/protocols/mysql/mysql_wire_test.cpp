// The MySQL packet framer and decoders alone: no core.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocols/mysql/mysql_client.h"
#include "protocols/mysql/mysql_wire.h"
#include "mysql_test_util.h"

using namespace txray::mysql;

namespace {

struct Seen {
  uint8_t seq, last_seq;
  uint64_t len;
  std::string head;
};

struct Sink final : PacketSink {
  size_t keep = 64;
  std::vector<Seen> got;
  std::vector<int> firsts;
  size_t begin(uint8_t, uint32_t, int first) override {
    firsts.push_back(first);
    return keep;
  }
  bool packet(const Packet& p) override {
    got.push_back({p.seq, p.last_seq, p.len, std::string(p.head)});
    return true;
  }
};

std::string packet(uint8_t seq, const std::string& payload) {
  std::string h(4, '\0');
  h[0] = char(payload.size() & 0xff);
  h[1] = char((payload.size() >> 8) & 0xff);
  h[2] = char((payload.size() >> 16) & 0xff);
  h[3] = char(seq);
  return h + payload;
}

TEST(MysqlFramer, PacketsSplitAnywhereGiveTheSamePackets) {
  std::string wire = packet(0, "\x03select 1") + packet(1, "") + packet(2, std::string(300, 'x'));
  for (size_t step = 1; step <= wire.size(); ++step) {
    Framer f;
    Sink s;
    for (size_t i = 0; i < wire.size(); i += step) ASSERT_TRUE(f.feed(wire.data() + i, std::min(step, wire.size() - i), s));
    ASSERT_EQ(s.got.size(), 3u) << step;
    EXPECT_EQ(s.got[0].head, "\x03select 1");
    EXPECT_EQ(s.got[0].len, 9u);
    EXPECT_EQ(s.got[1].len, 0u);
    EXPECT_EQ(s.got[1].seq, 1);
    EXPECT_EQ(s.got[2].len, 300u);
    EXPECT_EQ(s.got[2].head, std::string(64, 'x'));  // the head kept, the rest skipped by length
    EXPECT_EQ(s.firsts, (std::vector<int>{3, -1, 'x'}));
  }
}

TEST(MysqlFramer, MaxLengthPacketsAreContinued) {
  // 0xffffff bytes, then 10 more in the next packet (sequence + 1): one logical packet.
  std::string big(kMaxPayload, 'a');
  std::string wire = packet(0, big) + packet(1, "0123456789") + packet(2, "\x0e");
  Framer f;
  Sink s;
  for (size_t i = 0; i < wire.size(); i += 65536) ASSERT_TRUE(f.feed(wire.data() + i, std::min<size_t>(65536, wire.size() - i), s));
  ASSERT_EQ(s.got.size(), 2u);
  EXPECT_EQ(s.got[0].len, uint64_t(kMaxPayload) + 10);
  EXPECT_EQ(s.got[0].seq, 0);
  EXPECT_EQ(s.got[0].last_seq, 1);
  EXPECT_EQ(s.got[0].head.size(), 64u);
  EXPECT_EQ(s.got[1].head, "\x0e");
  EXPECT_LE(f.held(), 4096u);

  // Exactly 0xffffff bytes end with an empty packet.
  Framer g;
  Sink t;
  std::string exact = packet(0, big) + packet(1, "");
  ASSERT_TRUE(g.feed(exact.data(), exact.size(), t));
  ASSERT_EQ(t.got.size(), 1u);
  EXPECT_EQ(t.got[0].len, uint64_t(kMaxPayload));
}

TEST(MysqlFramer, ContinuationOutOfSequenceBreaksTheFraming) {
  std::string wire = packet(0, std::string(kMaxPayload, 'a')) + packet(5, "x");
  Framer f;
  Sink s;
  EXPECT_FALSE(f.feed(wire.data(), wire.size(), s));
  EXPECT_TRUE(s.got.empty());
}

TEST(MysqlDecode, LengthEncodedIntegers) {
  std::string_view s("\xfa\xfc\x01\x02\xfd\x01\x02\x03\xfe\x01\x00\x00\x00\x00\x00\x00\x80", 17);
  uint64_t v = 0;
  ASSERT_TRUE(take_lenenc(s, &v));
  EXPECT_EQ(v, 250u);
  ASSERT_TRUE(take_lenenc(s, &v));
  EXPECT_EQ(v, 0x0201u);
  ASSERT_TRUE(take_lenenc(s, &v));
  EXPECT_EQ(v, 0x030201u);
  ASSERT_TRUE(take_lenenc(s, &v));
  EXPECT_EQ(v, 0x8000000000000001ull);
  EXPECT_TRUE(s.empty());
  std::string_view bad("\xfb", 1), cut("\xfc\x01", 2), err("\xff", 1);
  EXPECT_FALSE(take_lenenc(bad, &v));
  EXPECT_FALSE(take_lenenc(cut, &v));
  EXPECT_FALSE(take_lenenc(err, &v));
}

TEST(MysqlDecode, RealGreetingAndResponse) {
  auto cap = txray::mysql::test::load_capture("mysql2");
  ASSERT_GE(cap.size(), 2u);
  Greeting g;
  ASSERT_TRUE(parse_greeting(std::string_view(cap[0].bytes).substr(4), &g));
  EXPECT_EQ(g.version, "5.5.5-10.11.19-MariaDB-0+deb12u1");
  EXPECT_TRUE(g.caps & cap::kDeprecateEof);
  EXPECT_TRUE(g.caps & cap::kProtocol41);
  EXPECT_FALSE(g.caps & cap::kMysql);
  HandshakeResponse r;
  ASSERT_TRUE(parse_response(std::string_view(cap[1].bytes).substr(4), &r));
  EXPECT_FALSE(r.ssl_request);
  EXPECT_EQ(r.user, "root");
  EXPECT_EQ(r.database, "txray");
  EXPECT_FALSE(r.caps & cap::kDeprecateEof);  // mysql2 does not ask for it
  EXPECT_TRUE(r.caps & cap::kConnectWithDb);
}

TEST(MysqlDecode, ErrOkPrepareOk) {
  Err e;
  ASSERT_TRUE(parse_err(std::string_view("\xff\x7a\x04#42S02Table 'x' doesn't exist"), &e));
  EXPECT_EQ(e.code, 1146);
  EXPECT_EQ(e.sqlstate, "42S02");
  EXPECT_EQ(e.message, "Table 'x' doesn't exist");
  Ok ok;
  ASSERT_TRUE(parse_ok(std::string_view("\x00\x05\xfc\x10\x27\x0a\x02\x00\x00", 9), &ok));
  EXPECT_EQ(ok.affected, 5u);
  EXPECT_EQ(ok.insert_id, 10000u);
  EXPECT_EQ(ok.status, 0x020a);
  PrepareOk po;
  ASSERT_TRUE(parse_prepare_ok(std::string_view("\x00\x06\x00\x00\x00\x04\x00\x02\x00\x00\x00\x00", 12), &po));
  EXPECT_EQ(po.id, 6u);
  EXPECT_EQ(po.columns, 4);
  EXPECT_EQ(po.params, 2);
}

TEST(MysqlDecode, ExecuteParamsNullBitmapTypesAndValues) {
  // Connector/J: statement 7, params (int 100, NULL as MYSQL_TYPE_NULL).
  std::string_view p("\x17\x07\x00\x00\x00\x00\x01\x00\x00\x00\x02\x01\x03\x00\x06\x00\x64\x00\x00\x00", 20);
  std::string types, long_data;
  std::vector<WireParam> got;
  ASSERT_TRUE(decode_execute(p, 2, types, long_data, false, [&](uint16_t, const WireParam& w) { got.push_back(w); }));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, 3);
  EXPECT_TRUE(got[0].have_value);
  EXPECT_EQ(got[0].value, std::string_view("\x64\x00\x00\x00", 4));
  EXPECT_TRUE(got[1].is_null);
  EXPECT_EQ(types.size(), 4u);
  // The next execution does not send the types again: the remembered ones are used.
  std::string_view again("\x17\x07\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x05\x00\x00\x00\x02hi", 19);
  got.clear();
  ASSERT_TRUE(decode_execute(again, 2, types, long_data, false, [&](uint16_t, const WireParam& w) { got.push_back(w); }));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, 3);
  EXPECT_EQ(got[0].value, std::string_view("\x05\x00\x00\x00", 4));
  EXPECT_EQ(got[1].type, 6);  // still the type it was sent with
  // Too short for its own null bitmap.
  EXPECT_FALSE(decode_execute(p.substr(0, 10), 2, types, long_data, false, [](uint16_t, const WireParam&) {}));
}

TEST(MysqlGreeting, RecognisedFromItsFirstBytes) {
  for (const char* name : {"pymysql", "mysql2", "pdo_native", "jdbc_prepared", "mysqli"}) {
    auto cap = txray::mysql::test::load_capture(name);
    ASSERT_FALSE(cap.empty());
    ASSERT_FALSE(cap[0].client);
    const std::string& g = cap[0].bytes;
    // From the header alone (Connector/J reads it first) to the whole packet.
    for (size_t n = 4; n <= g.size(); ++n) EXPECT_TRUE(looks_like_greeting(g.data(), n)) << name << " " << n;
    EXPECT_FALSE(looks_like_greeting(g.data(), 3));
  }
  for (std::string s : {"220 mail.example.com ESMTP\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "+OK POP3 ready\r\n",
                        "* OK IMAP4rev1\r\n", "HTTP/1.1 200 OK\r\n"})
    EXPECT_FALSE(looks_like_greeting(s.data(), s.size())) << s;
  // Protocol 9, a sequence other than 0, a version with a control character, an empty version.
  std::string v9("\x10\x00\x00\x00\x09" "5.1\0xxxxxxxxxxxx", 20), seq1("\x10\x00\x00\x01\x0a" "5.1\0xxxxxxxxxxxx", 20),
      ctl("\x10\x00\x00\x00\x0a" "5\n1\0xxxxxxxxxxxx", 20), empty("\x10\x00\x00\x00\x0a\0xxxxxxxxxxxxxxx", 20);
  for (const std::string& s : {v9, seq1, ctl, empty}) EXPECT_FALSE(looks_like_greeting(s.data(), s.size()));
}

}  // namespace
