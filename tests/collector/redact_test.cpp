// The collector's second line (collector/ingest/redact.*): values that look like credentials are masked
// as `?` on ingest — parameters by name, attributes by key, URL userinfo passwords — and nothing else.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "decoder.h"
#include "redact.h"
#include "synthetic.h"

namespace txray::ingest {
namespace {

std::string masked(const Redactor& r, std::string s, uint64_t* n = nullptr) {
  uint64_t c = r.mask_text(&s);
  if (n) *n = c;
  return s;
}

TEST(Redact, TheHandWrittenDefaultAnswersAsTheDefaultPattern) {
  Redactor hand;
  Redactor re(kDefaultRedactPattern);
  ASSERT_TRUE(hand.is_default());
  ASSERT_FALSE(re.is_default());
  for (const char* n : {"password", "PASSWORD", "user_password", "passwd", "Pwd", "secret", "client_secret",
                        "token", "access_token", "X-Auth-Token", "api_key", "api-key", "apikey", "API_KEY",
                        "auth", "oauth_verifier", "author", "session", "sessionid", "JSESSIONID", "signature",
                        "X-Amz-Signature", "code", "status_code", "page", "sort", "user", "q", "passw", "pass", "pw",
                        "api__key", "apiXkey", "sessio", "toke", "cod", "sig", "secre", "", "--password", "api%5Fkey",
                        "p%61ssword", "%", "%4", "pa%zzword", "\xc3\xa9token", "t\xc3\xb6ken"}) {
    EXPECT_EQ(hand.secret_name(n), re.secret_name(n)) << n;
  }
  // Random names over an alphabet made of the words' letters, both cases, and separators.
  const std::string alphabet = "pPaAsSwWoOrRdDeEcCtTkKnNiIgGuUhH_-%5F0 ";
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    std::string n(1 + rng() % 12, ' ');
    for (auto& c : n) c = alphabet[rng() % alphabet.size()];
    ASSERT_EQ(hand.secret_name(n), re.secret_name(n)) << "'" << n << "'";
  }
}

TEST(Redact, QueryValuesWithASecretNameBecomeAQuestionMark) {
  Redactor r;
  uint64_t n = 0;
  EXPECT_EQ(masked(r, "password=PASSWORD777&next=/home", &n), "password=?&next=/home");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(masked(r, "GET /login?password=x&page=2", &n), "GET /login?password=?&page=2");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(masked(r, "http://api:8080/x?api_key=SUPERKEY123&user=bob", &n), "http://api:8080/x?api_key=?&user=bob");
  EXPECT_EQ(masked(r, "a=1&token=2&page=3&Client_Secret=4", &n), "a=1&token=?&page=3&Client_Secret=?");
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(masked(r, "/cb?code=4/0AX4XfWh&state=xyz", &n), "/cb?code=?&state=xyz");
  EXPECT_EQ(masked(r, "/x?token=abc#frag"), "/x?token=?");  // a fragment is part of the value it follows
  EXPECT_EQ(masked(r, "/x?api%5Fkey=K1&p=1"), "/x?api%5Fkey=?&p=1");  // names are percent-decoded
  EXPECT_EQ(masked(r, "/x?sig=1;Signature=abc"), "/x?sig=1;Signature=?");
  // The pattern is a search in the name: `status_code` is masked too (docs/security.md says so).
  EXPECT_EQ(masked(r, "/x?status_code=200"), "/x?status_code=?");
}

TEST(Redact, WhatIsAlreadyMaskedEmptyOrNotAParameterIsLeftAndNotCounted) {
  Redactor r;
  for (const char* s : {"api_key=?&user=?", "token=&x=1", "GET /orders/7", "cache miss for key orders:1",
                        "a = b", "=token", "token", "http://alice@example.com/", "http://alice:?@h/",
                        "http://alice:@h/", "mailto:bob@example.com", "page=2&sort=asc"}) {
    uint64_t n = 1;
    EXPECT_EQ(masked(r, s, &n), s);
    EXPECT_EQ(n, 0u) << s;
  }
}

TEST(Redact, UserinfoPasswordsAreMaskedTheUserKept) {
  Redactor r;
  uint64_t n = 0;
  EXPECT_EQ(masked(r, "https://alice:s3cr3t@db.example:5432/x?page=2", &n), "https://alice:?@db.example:5432/x?page=2");
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(masked(r, "postgresql://app:hunter2@db/orders"), "postgresql://app:?@db/orders");
  EXPECT_EQ(masked(r, "ftp://u:p@ss@host"), "ftp://u:?@host");  // the last '@' ends the userinfo
  EXPECT_EQ(masked(r, "GET http://u:pw@proxy.example/ then http://v:pw2@h2/", &n),
            "GET http://u:?@proxy.example/ then http://v:?@h2/");
  EXPECT_EQ(n, 2u);
  // Inside a masked value: one value; inside a kept one: its password only.
  EXPECT_EQ(masked(r, "/x?token=http://u:p@h/&next=http://v:q@h/", &n), "/x?token=?&next=http://v:?@h/");
  EXPECT_EQ(n, 2u);
}

TEST(Redact, CommandLinesAndConnectionStrings) {
  Redactor r;
  EXPECT_EQ(masked(r, "mysqldump --password=hunter2 --user=root orders"), "mysqldump --password=? --user=root orders");
  EXPECT_EQ(masked(r, "host=db user=app password=hunter2 dbname=orders"), "host=db user=app password=? dbname=orders");
  EXPECT_EQ(masked(r, "Server=db;Database=orders;Pwd=abc;"), "Server=db;Database=orders;Pwd=?;");
  EXPECT_EQ(masked(r, "java -Dapi.key=K -jar x.jar"), "java -Dapi.key=K -jar x.jar");  // `api.key` is not api[_-]?key
  EXPECT_EQ(masked(r, "env AUTH_TOKEN=abc ./run"), "env AUTH_TOKEN=? ./run");
}

TEST(Redact, AUserPatternReplacesTheDefault) {
  Redactor r("^(page|x-internal)$");
  EXPECT_TRUE(r.secret_name("PAGE"));
  EXPECT_TRUE(r.secret_name("--page"));  // leading dashes are not part of the name
  EXPECT_FALSE(r.secret_name("password"));
  EXPECT_FALSE(r.secret_name("pages"));
  EXPECT_EQ(masked(r, "/x?page=2&password=p"), "/x?page=?&password=p");
  EXPECT_EQ(r.pattern(), "^(page|x-internal)$");
}

TEST(Redact, PatternsThatCannotWorkAreRefused) {
  EXPECT_THROW(Redactor("("), std::invalid_argument);
  EXPECT_THROW(Redactor(""), std::invalid_argument);      // matches every name
  EXPECT_THROW(Redactor("token|"), std::invalid_argument);
  EXPECT_THROW(Redactor(".*"), std::invalid_argument);
  EXPECT_NO_THROW(Redactor("token"));
}

// Every attribute key the agent sends (docs/wire-format.md, tracing.md, sql.md, http2.md): none is taken
// for a credential's, so the second line never masks the agent's own figures.
TEST(Redact, NoKeyTheAgentSendsIsASecretName) {
  Redactor r;
  for (const char* k : {"query", "host", "user_agent", "addr", "port", "localport", "method", "ttfb_us", "dns_us",
                        "connect_us", "tls_us", "redirects", "client", "wire_bytes_read", "wire_bytes_written",
                        "database", "user", "socket", "db.system", "server_version", "sqlstate", "binds", "params",
                        "what", "protocol", "upgrade", "grpc_status", "grpc_message", "txray.truncated_attributes"})
    EXPECT_FALSE(r.secret_name(k)) << k;
}

v1::Batch planted() {
  testing::SynthOptions o;
  std::mt19937_64 rng(3);
  v1::Batch b = testing::make_batch(o, 1);
  b.mutable_agent()->set_command_line("svc --db-password=CMDSECRET --port 80");
  auto* tx = testing::add_transaction(b, o, 0, rng, 1700000000000000000ull);
  tx->set_name("GET /login?password=NAMESECRET");
  auto* q = tx->add_attributes();
  q->set_key("query");
  q->set_value("password=QSECRET&page=2");
  auto* t = tx->add_attributes();
  t->set_key("token");
  t->set_value("TOKSECRET");
  for (auto& s : *tx->mutable_steps()) {
    if (s.kind() == v1::HTTP_CALL) s.set_text("http://bob:USERINFO@backend:8080/stock?api_key=CALLSECRET&user=bob");
    if (s.kind() == v1::SQL) s.set_text("SELECT a FROM t WHERE t.session_id=s.id AND token = ?");
  }
  auto* sm = tx->add_summary();
  sm->set_kind(v1::HTTP_CALL);
  sm->set_text("http://backend/x?token=SUMSECRET");
  auto* c = b.add_sampled_out();
  c->set_name("GET /reset?token=SHEDSECRET");
  c->set_kind("http");
  c->set_count(1);
  return b;
}

TEST(Redact, ABatchIsMaskedEverywhereAValueCanHide) {
  v1::Batch b = planted();
  const std::string sql = "SELECT a FROM t WHERE t.session_id=s.id AND token = ?";
  std::string first;
  EXPECT_EQ(Redactor().mask_batch(b, &first), 10u);
  EXPECT_EQ(first, "command line");
  std::string all = b.SerializeAsString();
  for (const char* secret : {"CMDSECRET", "NAMESECRET", "QSECRET", "TOKSECRET", "USERINFO", "CALLSECRET", "SUMSECRET",
                             "SHEDSECRET"})
    EXPECT_EQ(all.find(secret), std::string::npos) << secret;
  const auto& tx = b.transactions(0);
  EXPECT_EQ(tx.name(), "GET /login?password=?");
  EXPECT_EQ(tx.attributes(1).value(), "password=?&page=2");
  EXPECT_EQ(tx.attributes(2).value(), "?");
  EXPECT_EQ(tx.attributes(0).value(), "curl/7.88.1");
  for (const auto& s : tx.steps()) {
    if (s.kind() == v1::HTTP_CALL) {
      EXPECT_EQ(s.text(), "http://bob:?@backend:8080/stock?api_key=?&user=bob");
    }
    if (s.kind() == v1::SQL) {
      EXPECT_EQ(s.text(), sql);  // the agent's statement, not re-parsed
    }
  }
  // Masking again finds nothing: the exporter's second decode of the same message counts nothing new.
  EXPECT_EQ(Redactor().mask_batch(b), 0u);
}

TEST(Redact, TheDecoderMasksByDefaultAndKeepsWithoutAPolicy) {
  std::string bytes = planted().SerializeAsString();
  v1::Batch out;
  DecodeResult r = decode_batch(bytes.data(), bytes.size(), out);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.masked, 10u);
  EXPECT_EQ(r.masked_first, "command line");
  EXPECT_EQ(out.transactions(0).attributes(2).value(), "?");
  Limits keep;
  keep.redact = nullptr;
  r = decode_batch(bytes.data(), bytes.size(), out, keep);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.masked, 0u);
  EXPECT_EQ(out.transactions(0).attributes(2).value(), "TOKSECRET");
}

TEST(Redact, AnOrdinaryBatchHasNothingToMask) {
  testing::SynthOptions o;
  std::mt19937_64 rng(1);
  v1::Batch b = testing::make_batch(o, 1);
  for (int i = 0; i < 50; ++i) testing::add_transaction(b, o, i, rng, 1700000000000000000ull + i);
  testing::add_unattributed(b, 50, 30, rng, 1700000001000000000ull);
  std::string before = b.SerializeAsString();
  EXPECT_EQ(Redactor().mask_batch(b), 0u);
  EXPECT_EQ(b.SerializeAsString(), before);
}

TEST(Redact, TheFirstMaskedAttributeIsNamedByItsKey) {
  v1::Batch b = testing::make_batch({}, 1);
  auto* tx = b.add_transactions();
  auto* a = tx->add_attributes();
  a->set_key("X-Session");
  a->set_value("abc");
  std::string first;
  EXPECT_EQ(Redactor().mask_batch(b, &first), 1u);
  EXPECT_EQ(first, "transaction attribute 'X-Session'");
}

}  // namespace
}  // namespace txray::ingest
