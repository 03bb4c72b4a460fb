// The redaction policy (agent/core/redact.h): what each setting keeps and masks.
#include "core/redact.h"

#include <gtest/gtest.h>

#include <string>

namespace txray {
namespace {

std::string query(const redact::Policy& p, std::string_view q) {
  std::string out;
  redact::append_query(p, q, out);
  return out;
}
std::string path(const redact::Policy& p, std::string_view s) {
  std::string out;
  redact::append_path(p, s, out);
  return out;
}
std::string authority(const redact::Policy& p, std::string_view s) {
  std::string out;
  redact::append_authority(p, s, out);
  return out;
}

TEST(Redact, QueryValuesMaskedByDefault) {
  redact::Policy p;
  EXPECT_EQ(query(p, "password=PASSWORD777&next=/home"), "password=?&next=?");
  EXPECT_EQ(query(p, "debug&a=&b=1"), "debug&a=?&b=?");
  EXPECT_EQ(query(p, ""), "");
  EXPECT_EQ(query(p, "&&x=1&"), "&&x=?&");
  EXPECT_EQ(query(p, "a=b=c"), "a=?");
}

TEST(Redact, KeepQueryKeepsOnlyTheNamedParameters) {
  std::string problems;
  redact::Policy p = redact::parse(nullptr, " page, sort ,", nullptr, &problems);
  EXPECT_EQ(problems, "");
  ASSERT_EQ(p.keep_query.size(), 2u);
  EXPECT_EQ(query(p, "page=2&sort=name&token=T0K&Page=9"), "page=2&sort=name&token=?&Page=?");
}

TEST(Redact, RawKeepsValuesOnlyWhenAskedFor) {
  std::string problems;
  redact::Policy p = redact::parse("raw", nullptr, nullptr, &problems);
  EXPECT_TRUE(p.raw);
  EXPECT_EQ(query(p, "password=PASSWORD777"), "password=PASSWORD777");
  EXPECT_EQ(authority(p, "bob:pw@h:80"), "bob:pw@h:80");
  EXPECT_FALSE(redact::parse("mask", nullptr, nullptr, &problems).raw);
  EXPECT_EQ(problems, "");
  redact::Policy bad = redact::parse("yes", nullptr, nullptr, &problems);
  EXPECT_FALSE(bad.raw);  // an unknown value never turns raw on
  EXPECT_NE(problems.find("TXRAY_VALUES=yes"), std::string::npos);
}

TEST(Redact, UserinfoPasswordMasked) {
  redact::Policy p;
  EXPECT_EQ(authority(p, "bob:SECRET@127.0.0.1:8080"), "bob:?@127.0.0.1:8080");
  EXPECT_EQ(authority(p, "bob@host"), "bob@host");
  EXPECT_EQ(authority(p, "a:b:c@d@host"), "a:?@host");  // the last '@' ends the userinfo
  EXPECT_EQ(authority(p, "host:443"), "host:443");
  EXPECT_EQ(authority(p, ""), "");
}

TEST(Redact, PathSegmentsOnlyWhereATemplateSaysSo) {
  redact::Policy none;
  EXPECT_FALSE(redact::masks_paths(none));
  EXPECT_EQ(path(none, "/reset/8f2a9c"), "/reset/8f2a9c");
  std::string problems;
  redact::Policy p = redact::parse(nullptr, nullptr, "/reset/*,/users/*/keys/*,nope,/plain", &problems);
  EXPECT_NE(problems.find("nope"), std::string::npos);
  EXPECT_NE(problems.find("/plain"), std::string::npos);
  ASSERT_EQ(p.path_templates.size(), 2u);
  EXPECT_EQ(path(p, "/reset/8f2a9c"), "/reset/*");
  EXPECT_EQ(path(p, "/reset/8f2a9c/confirm"), "/reset/*/confirm");
  EXPECT_EQ(path(p, "/reset/"), "/reset/");  // an empty segment has nothing to hide
  EXPECT_EQ(path(p, "/reset"), "/reset");
  EXPECT_EQ(path(p, "/users/42/keys/AKIA123"), "/users/*/keys/*");
  EXPECT_EQ(path(p, "/users/42/profile"), "/users/42/profile");
  EXPECT_EQ(path(p, "reset/x"), "reset/*");  // relative stays relative
  EXPECT_EQ(path(p, ""), "");
}

TEST(Redact, Urls) {
  std::string problems;
  redact::Policy p = redact::parse(nullptr, "page", "/reset/*", &problems);
  std::string out;
  redact::append_url(p, "https://bob:PW@h:8443/reset/T0K/x?page=2&token=T#frag", out);
  EXPECT_EQ(out, "https://bob:?@h:8443/reset/*/x?page=2&token=?");
  out.clear();
  redact::append_url(p, "not a url", out);
  EXPECT_EQ(out, "not a url");
  out.clear();
  redact::append_url(p, "http://h?k=v", out);
  EXPECT_EQ(out, "http://h?k=?");
  out.clear();
  redact::append_url(p, "x#y://z", out);  // a scheme inside a fragment (found by agent.fuzz_redact)
  EXPECT_EQ(out, "x#y://z");
}

std::string args(const redact::Policy& p, std::vector<std::string_view> a, std::string_view program = {}) {
  std::string out;
  redact::append_args(p, a, out, program);
  return out;
}

TEST(Redact, CommandLineArguments) {
  redact::Policy p;
  EXPECT_EQ(args(p, {"-s", "-H", "Authorization: Bearer T0K", "http://bob:PW@h/y?token=T&user=u"}),
            "-s -H Authorization: ? http://bob:?@h/y?token=?&user=?");
  EXPECT_EQ(args(p, {"--password=PW", "--db-token=T", "-x=1", "--name=bob"}),
            "--password=? --db-token=? -x=1 --name=bob");
  EXPECT_EQ(args(p, {"--password", "PW", "--token", "T", "--port", "5432", "-u", "bob:PW", "-u", "bob"}),
            "--password ? --token ? --port 5432 -u bob:? -u bob");
  EXPECT_EQ(args(p, {"--anyauth", "http://h/x"}), "--anyauth http://h/x");  // a flag hides nothing after it
  EXPECT_EQ(args(p, {"cookie:abc"}), "cookie: ?");
  EXPECT_EQ(args(p, {}), "");
  EXPECT_EQ(args(p, {"", "x"}), " x");
  redact::Policy raw = redact::parse("raw", nullptr, nullptr, nullptr);
  EXPECT_EQ(args(raw, {"--password", "PW", "http://bob:PW@h/?k=v", "-H", "Cookie: c=1"}),
            "--password PW http://bob:PW@h/?k=v -H Cookie: ?");  // headers never, raw or not
}

// Clients whose password flag is a short one of their own.
TEST(Redact, RedisAndMysqlPasswordFlags) {
  redact::Policy p;
  EXPECT_EQ(args(p, {"-h", "db", "-a", "PW", "GET", "k"}, "/usr/bin/redis-cli"), "-h db -a ? GET k");
  EXPECT_EQ(args(p, {"-a", "PW", "-P", "16"}, "redis-benchmark"), "-a ? -P 16");
  EXPECT_EQ(args(p, {"-u", "redis://bob:PW@h:6379/0"}, "redis-cli"), "-u redis://bob:?@h:6379/0");
  EXPECT_EQ(args(p, {"-uroot", "-pPW", "-p", "shop"}, "mysql"), "-uroot -p? -p shop");  // -p alone prompts
  EXPECT_EQ(args(p, {"-pPW", "db"}, "/usr/bin/mariadb-dump"), "-p? db");
  EXPECT_EQ(args(p, {"-a", "file"}, "tar"), "-a file");  // other programs' -a is no secret
  EXPECT_EQ(args(p, {"-pPW"}, "ssh"), "-pPW");
  redact::Policy raw = redact::parse("raw", nullptr, nullptr, nullptr);
  EXPECT_EQ(args(raw, {"-a", "PW"}, "redis-cli"), "-a PW");
}

TEST(Redact, CredentialNames) {
  for (const char* n : {"password", "DB_PASSWD", "pwd", "client-secret", "api_key", "x-auth-token", "credentials"})
    EXPECT_TRUE(redact::credential_name(n)) << n;
  for (const char* n : {"page", "sort", "user", "name", ""}) EXPECT_FALSE(redact::credential_name(n)) << n;
}

TEST(Redact, SecretHeadersInAnyCase) {
  for (const char* h : {"Authorization", "cookie", "SET-COOKIE", "Proxy-Authorization"})
    EXPECT_TRUE(redact::is_secret_header(h)) << h;
  for (const char* h : {"Host", "User-Agent", "traceparent", "Cookies", ""})
    EXPECT_FALSE(redact::is_secret_header(h)) << h;
}

}  // namespace
}  // namespace txray
