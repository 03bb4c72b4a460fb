// The short form of real C++ frames: names taken from the samples' binaries (`nm -C build/bin/txray-relay`,
// GCC 12's demangler) and from libstdc++/CLI11 frames seen in their stacks. Each row is what a person
// would write for that frame.
#include <gtest/gtest.h>

#include "frame_name.h"
#include "profile_json.h"
#include "profile_text.h"

namespace {

using txray::names::short_frame_name;

constexpr const char* kStr = "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >";

std::string with_str(std::string s) {  // "$S" -> the libstdc++ spelling of std::string
  for (size_t at; (at = s.find("$S")) != std::string::npos;) s.replace(at, 2, kStr);
  return s;
}

struct Row {
  std::string full;
  std::string expected;
};

TEST(FrameName, RealFramesFromTheSamples) {
  const std::vector<Row> table = {
      {"txray::samples::HttpReader::read_request(txray::samples::HttpRequest&)",
       "txray::samples::HttpReader::read_request(…)"},
      {"txray::samples::HttpReader::fill() [clone .cold]", "txray::samples::HttpReader::fill() [clone .cold]"},
      {with_str("txray::samples::HttpReader::read_body(std::map<$S, $S, std::less<$S >, "
                "std::allocator<std::pair<$S const, $S > > > const&, $S&)"),
       "txray::samples::HttpReader::read_body(…)"},
      {with_str("txray::samples::HttpClient::request($S const&, $S const&, std::map<$S, $S, std::less<$S >, "
                "std::allocator<std::pair<$S const, $S > > > const&, std::basic_string_view<char, "
                "std::char_traits<char> >, bool) [clone .cold]"),
       "txray::samples::HttpClient::request(…) [clone .cold]"},
      {with_str("(anonymous namespace)::handle_page((anonymous namespace)::Options const&, $S const&, unsigned "
                "short, txray::samples::HttpRequest const&, txray::samples::HttpResponse&)"),
       "(anonymous namespace)::handle_page(…)"},
      {with_str("$S::substr(unsigned long, unsigned long) const"), "std::string::substr(…) const"},
      {with_str("$S::compare(char const*) const [clone .isra.0]"), "std::string::compare(…) const [clone .isra.0]"},
      {with_str("std::vector<$S, std::allocator<$S > >::_M_realloc_insert<$S const&>(__gnu_cxx::__normal_iterator<"
                "$S*, std::vector<$S, std::allocator<$S > > >, $S const&)"),
       "std::vector<…>::_M_realloc_insert<…>(…)"},
      {with_str("CLI::App::add_option($S, std::function<bool (std::vector<$S, std::allocator<$S > > const&)>, $S, "
                "bool, std::function<$S ()>)"),
       "CLI::App::add_option(…)"},
      {with_str("$S CLI::detail::to_string<int&, (CLI::detail::enabler)0>(int&)"),
       "std::string CLI::detail::to_string<…>(…)"},
      {"std::ctype<char>::do_widen(char) const", "std::ctype<…>::do_widen(…) const"},
      {"txray::samples::Pool::run()::{lambda()#1}::operator()() const",
       "txray::samples::Pool::run()::{lambda()#1}::operator()() const"},
      {"txray::samples::Pool::submit(std::function<void ()>)::{lambda(int)#2}::operator()(int) const",
       "txray::samples::Pool::submit(…)::{lambda(…)#2}::operator()(…) const"},
      {with_str("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> "
                ">(std::basic_ostream<char, std::char_traits<char> >&, char const*)"),
       "std::ostream& std::operator<< <…>(…)"},
      {"bool std::operator< <int>(std::vector<int, std::allocator<int> > const&, std::vector<int, "
       "std::allocator<int> > const&)",
       "bool std::operator< <…>(…)"},
      {"std::_Rb_tree<int, int, std::_Identity<int>, std::less<int>, std::allocator<int> >::operator=(std::_Rb_tree<"
       "int, int, std::_Identity<int>, std::less<int>, std::allocator<int> > const&)",
       "std::_Rb_tree<…>::operator=(…)"},
      {"Foo::operator->() const", "Foo::operator->() const"},
      {"Foo::operator[](unsigned long)", "Foo::operator[](…)"},
      // Not C++ demangled names: unchanged.
      {"main", "main"},
      {"__libc_start_call_main", "__libc_start_call_main"},
      {"[libc.so.6]", "[libc.so.6]"},
      {"handler (app.py:12)", "handler (app.py:12)"},
      {"<module>", "<module>"},
      {"", ""},
  };
  for (const auto& r : table) EXPECT_EQ(short_frame_name(r.full), r.expected) << r.full;
}

TEST(FrameName, LlvmSpellingsAndClosingBrackets) {
  EXPECT_EQ(txray::names::std_spellings_shortened(
                "f(std::__1::basic_string<char, std::__1::char_traits<char>, std::__1::allocator<char>> const&)"),
            "f(std::string const&)");
  EXPECT_EQ(txray::names::std_spellings_shortened(with_str("std::map<$S, int>")), "std::map<std::string, int>");
}

TEST(FrameName, ShowPrintsTheShortFormAndJsonKeepsTheFullName) {
  const std::string full = with_str("txray::samples::HttpReader::read_body(std::map<$S, $S, std::less<$S >, "
                                    "std::allocator<std::pair<$S const, $S > > > const&, $S&)");
  txray::Transaction t;
  t.txid = 0xabc;
  txray::Step s;
  s.no = 0;
  s.kind = "SOCKET";
  s.stack = {{full, "txray-relay", 0x1a2b}};
  t.steps = {s};
  const std::string p = txray::show::profile_text(t, "");
  EXPECT_NE(p.find("at txray::samples::HttpReader::read_body(…) (txray-relay+0x1a2b)\n"), std::string::npos) << p;
  EXPECT_EQ(p.find("basic_string"), std::string::npos) << p;
  const auto j = txray::show::transaction_json(t);
  EXPECT_EQ(j["steps"][0]["stack"][0]["function"], full);
}

}  // namespace
