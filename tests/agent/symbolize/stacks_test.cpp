// Stack capture and symbolization, alone and through the recorder and the encoder: a stack taken in a
// function of this program names it; a libc function is named from libc's .dynsym; a stripped library's
// local function is given as module+offset; a failed or slow step carries a stack to the wire.
#include <dlfcn.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/recorder.h"
#include "support/recorder_fixture.h"
#include "cpu/stack_capture.h"
#include "symbolize/symbolizer.h"
#include "core/transaction.h"
#include "transport/encode.h"
#include "txray/v1/txray.pb.h"

using namespace txray;

namespace stack_test {

// Not inlined, and the call is not a tail call (the result is used after it): its frame is on the stack.
__attribute__((noinline)) int capture_here(uintptr_t* ips, int max) {
  int n = stacks::capture(ips, max);
  __asm__ volatile("" ::: "memory");
  return n;
}

__attribute__((noinline)) int outer_caller(uintptr_t* ips, int max, int depth) {
  int n = depth > 0 ? outer_caller(ips, max, depth - 1) : capture_here(ips, max);
  __asm__ volatile("" ::: "memory");
  return n;
}

}  // namespace stack_test

namespace {

std::vector<std::string> names(const uintptr_t* ips, int n) {
  sym::Symbolizer s;
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(sym::format(s.resolve(ips[i])));
  return out;
}

bool any_has(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

std::string program_name() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string p(buf, size_t(n > 0 ? n : 0));
  return p.substr(p.rfind('/') + 1);
}

TEST(Capture, FramesStartAtTheCallerAndNameItsFunctions) {
  ASSERT_TRUE(stacks::preload()) << "libunwind.so.8 could not be loaded";
  uintptr_t ips[stacks::kMaxFrames];
  int n = stack_test::outer_caller(ips, stacks::kMaxFrames, 3);
  ASSERT_GE(n, 5);
  auto v = names(ips, n);
  std::string all;
  for (auto& s : v) all += s + "\n";
  // Frame 0 is capture()'s caller, not capture() itself nor libunwind.
  EXPECT_NE(v[0].find("stack_test::capture_here(unsigned long*, int)"), std::string::npos) << all;
  EXPECT_NE(v[0].find("(" + program_name() + "+0x"), std::string::npos) << all;
  EXPECT_NE(v[1].find("stack_test::outer_caller(unsigned long*, int, int)"), std::string::npos) << all;
  EXPECT_FALSE(any_has(v, "stacks::capture")) << all;
  EXPECT_FALSE(any_has(v, "libunwind")) << all;
}

TEST(Capture, FrameLimitIsKept) {
  uintptr_t ips[stacks::kMaxFrames];
  int n = stack_test::outer_caller(ips, 4, 20);
  EXPECT_EQ(n, 4);
  n = stack_test::outer_caller(ips, stacks::kMaxFrames, 60);
  EXPECT_EQ(n, stacks::kMaxFrames);
}

TEST(Symbolizer, NamesALibcFunctionFromItsDynamicSymbols) {
  sym::Symbolizer s;
  void* fn = dlsym(RTLD_DEFAULT, "qsort");
  ASSERT_NE(fn, nullptr);
  sym::Frame f = s.resolve(reinterpret_cast<uintptr_t>(fn) + 4, false);
  EXPECT_EQ(f.function, "qsort");
  EXPECT_EQ(f.module, "libc.so.6");
  // The offset is the address in libc's own numbering: libc's symbol table says the same.
  Dl_info info{};
  ASSERT_TRUE(dladdr(fn, &info));
  EXPECT_EQ(f.offset, reinterpret_cast<uintptr_t>(fn) + 4 - reinterpret_cast<uintptr_t>(info.dli_fbase));
}

TEST(Symbolizer, AStrippedLibraryLoadedLaterGivesModuleAndOffset) {
  sym::Symbolizer s;
  s.resolve(reinterpret_cast<uintptr_t>(&stack_test::capture_here), false);  // the module list is read now
  void* h = dlopen(STRIPPED_PROBE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto get = reinterpret_cast<int (*(*)())(int)>(dlsym(h, "txray_probe_hidden"));
  ASSERT_NE(get, nullptr);
  auto hidden = reinterpret_cast<uintptr_t>(get());
  sym::Frame f = s.resolve(hidden + 1, false);
  EXPECT_EQ(f.module, "libtxray_stripped_probe.so");
  EXPECT_EQ(f.function, "");  // a local function of a stripped file has no name anywhere
  Dl_info info{};
  ASSERT_TRUE(dladdr(reinterpret_cast<void*>(get), &info));
  EXPECT_EQ(f.offset, hidden + 1 - reinterpret_cast<uintptr_t>(info.dli_fbase));
  EXPECT_EQ(sym::format(f).rfind("libtxray_stripped_probe.so+0x", 0), 0u) << sym::format(f);
  // Its exported function is still named, from .dynsym.
  sym::Frame e = s.resolve(reinterpret_cast<uintptr_t>(dlsym(h, "txray_probe_exported")), false);
  EXPECT_EQ(e.function, "txray_probe_exported");
  dlclose(h);
}

TEST(Symbolizer, AnUnmappedAddressIsAQuestionMark) {
  sym::Symbolizer s;
  sym::Frame f = s.resolve(0x10, false);
  EXPECT_EQ(f.module, "?");
  EXPECT_EQ(f.function, "");
}

class StepStacks : public test::RecorderFixture {
 protected:
  StepStacks() : RecorderFixture("GET /x", "http", 200) {}
  void TearDown() override {
    stacks::configure(stacks::Settings{});
    RecorderFixture::TearDown();
  }
};

__attribute__((noinline)) void failing_statement(Transaction* t) {
  StepRef s = rec::open(t, StepKind::SQL);
  rec::set_error(s, "no such table: nope");
  rec::close(s);
  __asm__ volatile("" ::: "memory");
}

TEST_F(StepStacks, AFailedStepCarriesTheCallersStackToTheWire) {
  Transaction* t = begin();
  failing_statement(t);
  StepRef ok = rec::open(t, StepKind::SQL);  // succeeded and quick: no stack
  test::FakeClock::advance(1'000'000);
  rec::close(ok);
  Transaction& done = end(t);
  ASSERT_EQ(done.steps.size(), 4u);
  ASSERT_TRUE(done.steps[1].stack);
  EXPECT_FALSE(done.steps[2].stack);

  std::vector<Transaction*> txs{&done};
  std::string bytes;
  Counters c;
  ASSERT_TRUE(encode_batch(Identity{}, c, 1, txs, &bytes));
  txray::v1::Batch b;
  ASSERT_TRUE(b.ParseFromString(bytes));
  const auto& step = b.transactions(0).steps(1);
  ASSERT_GT(step.stack().frames_size(), 1);
  // Linked into this program, the recorder's own frames come first (the preloaded agent drops them: its
  // frames are those of its own module; tests/e2e/test_stacks.py shows that), then the caller's.
  int i = 0;
  while (i < step.stack().frames_size() && step.stack().frames(i).function().rfind("txray::", 0) == 0) ++i;
  ASSERT_LT(i, step.stack().frames_size());
  EXPECT_EQ(step.stack().frames(i).function(), "(anonymous namespace)::failing_statement(txray::Transaction*)");
  EXPECT_EQ(step.stack().frames(i).module(), program_name());
  EXPECT_GT(step.stack().frames(i).offset(), 0u);
  EXPECT_EQ(b.transactions(0).steps(2).stack().frames_size(), 0);
}

TEST_F(StepStacks, SlowStepsFromTheThresholdAndFailedCallsFromTheirStatus) {
  stacks::configure({.on = true, .slow_ns = 100'000'000});
  Transaction* t = begin();
  StepRef quick = rec::open(t, StepKind::DNS);
  test::FakeClock::advance(99'999'999);
  rec::close(quick);
  StepRef slow = rec::open(t, StepKind::DNS);
  test::FakeClock::advance(100'000'000);
  rec::close(slow);
  StepRef call = rec::open(t, StepKind::HTTP_CALL);
  rec::set_status(call, 503);
  rec::close(call);
  StepRef fine = rec::open(t, StepKind::HTTP_CALL);
  rec::set_status(fine, 404);
  rec::close(fine);
  Transaction& done = end(t);
  EXPECT_FALSE(done.steps[1].stack);
  EXPECT_TRUE(done.steps[2].stack);
  EXPECT_TRUE(done.steps[3].stack);
  EXPECT_FALSE(done.steps[4].stack);
}

TEST_F(StepStacks, ZeroMsMeansFailedStepsOnlyAndOffMeansNone) {
  stacks::configure({.on = true, .slow_ns = 0});
  Transaction* t = begin();
  StepRef slow = rec::open(t, StepKind::SQL);
  test::FakeClock::advance(5'000'000'000);
  rec::close(slow);
  StepRef failed = rec::open(t, StepKind::SQL);
  rec::set_error(failed, "boom");
  rec::close(failed);
  stacks::configure({.on = false, .slow_ns = 1});
  StepRef off = rec::open(t, StepKind::SQL);
  rec::set_error(off, "boom");
  test::FakeClock::advance(5'000'000'000);
  rec::close(off);
  Transaction& done = end(t);
  EXPECT_FALSE(done.steps[1].stack);
  EXPECT_TRUE(done.steps[2].stack);
  EXPECT_FALSE(done.steps[3].stack);
}

TEST_F(StepStacks, AStepFoldedPastTheStepLimitTakesNone) {
  Config c;
  c.max_steps = 3;  // START, one row, END: the second step is folded into a summary line
  set_config(c);
  Transaction* t = begin();
  StepRef row = rec::open(t, StepKind::SQL);
  rec::set_error(row, "first");
  rec::close(row);
  uint64_t before = stacks::taken();
  StepRef folded = rec::open(t, StepKind::SQL);
  rec::set_error(folded, "second");
  rec::close(folded);
  EXPECT_EQ(stacks::taken(), before);
  Transaction& done = end(t);
  EXPECT_TRUE(done.steps[1].stack);
  ASSERT_EQ(done.summary.size(), 1u);
  EXPECT_EQ(done.summary[0].errors, 1u);
}

TEST(StackConfig, Environment) {
  auto cfg = parse_config([](const char* k) -> const char* {
    if (!std::strcmp(k, "TXRAY_STACKS")) return "0";
    if (!std::strcmp(k, "TXRAY_STACK_MS")) return "250";
    return nullptr;
  });
  EXPECT_FALSE(cfg.stacks);
  EXPECT_EQ(cfg.stack_ms, 250u);
  auto bad = parse_config([](const char* k) -> const char* { return !std::strcmp(k, "TXRAY_STACK_MS") ? "soon" : nullptr; });
  EXPECT_TRUE(bad.stacks);
  EXPECT_EQ(bad.stack_ms, 100u);
  EXPECT_NE(bad.problems.find("TXRAY_STACK_MS"), std::string::npos);
}

}  // namespace
