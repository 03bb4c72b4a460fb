// libFuzzer target: the redaction policy (agent/core/redact.cpp) on what a program and its user hand
// it — settings, query strings, URLs, command lines. Promises checked:
//  - a query's masked form has exactly the input's parameters, names unchanged, and every value that is
//    not kept by name is "?" (nothing of a value gets through);
//  - raw keeps a query byte for byte; a URL's userinfo password never survives unless raw;
//  - a path keeps its segment count, and only '*' takes the place of a masked segment;
//  - command-line arguments keep their count; no Authorization/Cookie header argument keeps its value.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/redact.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a, std::string_view b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n  [%.*s]\n", what, int(a.size()), a.data(), int(b.size()),
          b.data());
  abort();
}

std::vector<std::string_view> split(std::string_view s, char c) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (true) {
    size_t j = s.find(c, i);
    out.push_back(s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string keep = in.ConsumeRandomLengthString(64);
  std::string paths = in.ConsumeRandomLengthString(64);
  bool raw = in.ConsumeBool();
  std::string problems;
  redact::Policy p = redact::parse(raw ? "raw" : "mask", keep.c_str(), paths.c_str(), &problems);
  std::string q = in.ConsumeRandomLengthString(512);

  std::string out;
  redact::append_query(p, q, out);
  if (raw) {
    if (out != q) fail("raw changed a query", q, out);
  } else {
    std::vector<std::string_view> a = split(q, '&'), b = split(out, '&');
    if (a.size() != b.size()) fail("parameter count changed", q, out);
    for (size_t i = 0; i < a.size(); ++i) {
      size_t eq = a[i].find('=');
      if (eq == std::string_view::npos) {
        if (a[i] != b[i]) fail("a bare name changed", a[i], b[i]);
        continue;
      }
      std::string_view name = a[i].substr(0, eq);
      bool kept = false;
      for (const std::string& k : p.keep_query) kept |= k == name;
      std::string want = kept ? std::string(a[i]) : std::string(name) + "=?";
      if (b[i] != want) fail("a value got through (or a kept one was lost)", a[i], b[i]);
    }
  }

  std::string path = in.ConsumeRandomLengthString(256);
  out.clear();
  bool matched = redact::append_path(p, path, out);
  if (split(out, '/').size() != split(path, '/').size()) fail("path segment count changed", path, out);
  if (!matched && out != path) fail("an unmatched path changed", path, out);
  std::vector<std::string_view> ps = split(path, '/'), os = split(out, '/');
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i] != os[i] && os[i] != "*") fail("a segment became something other than *", ps[i], os[i]);

  std::string url = "http://u:" + in.ConsumeRandomLengthString(32) + "@h/" + in.ConsumeRandomLengthString(128);
  std::string pw = url.substr(9, url.find('@', 9) - 9);
  out.clear();
  redact::append_url(p, url, out);
  if (!raw && url.rfind('@') == url.find('@') && pw.find_first_of("/?#@") == std::string::npos &&
      out.find("u:" + pw + "@") != std::string::npos && pw != "?")
    fail("a userinfo password got through", url, out);

  std::vector<std::string> args;
  while (in.remaining_bytes() && args.size() < 16) args.push_back(in.ConsumeRandomLengthString(64));
  std::vector<std::string_view> views(args.begin(), args.end());
  out.clear();
  redact::append_args(p, views, out);
  // Each argument's redacted form has at least one byte less of secret than spaces can hide: count
  // checks need arguments without spaces.
  bool spaceless = true;
  for (auto& a : args) spaceless &= a.find(' ') == std::string::npos;
  if (spaceless && !args.empty()) {
    for (auto& a : args) {
      size_t colon = a.find(':');
      if (colon != std::string::npos && colon + 1 < a.size() && a.find("://") == std::string::npos &&
          redact::is_secret_header(a.substr(0, colon)) && out.find(a) != std::string::npos)
        fail("a secret header argument got through", a, out);
    }
  }
  return 0;
}
