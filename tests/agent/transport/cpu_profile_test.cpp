// CPU samples on the agent thread (transport/cpu_profile.h): each sample goes to the row whose GAP it fell
// in, rows get their hottest (innermost named) functions, the transaction its folded stacks; the encoder
// writes them in the wire format's cpuprof fields. A fake resolver names addresses: no process needed.
#include <gtest/gtest.h>

#include <string>

#include "core/transaction.h"
#include "transport/cpu_profile.h"
#include "transport/encode.h"
#include "txray/v1/txray.pb.h"

using namespace txray;

namespace {

// 0x100: "deflate" in libz, 0x200: unnamed libz code, 0x300: "gzip_compress" in the program,
// 0x400: "main" in the program, 0x500: "memcpy" in libc; any other address a function of its own.
cpu::Symbol fake(uintptr_t ip, bool, void* calls) {
  ++*static_cast<int*>(calls);
  switch (ip & ~uintptr_t(0xf)) {
    case 0x100: return {"deflate", "libz.so.1"};
    case 0x200: return {"", "libz.so.1"};
    case 0x300: return {"gzip_compress", "relay"};
    case 0x400: return {"main", "relay"};
    case 0x500: return {"memcpy", "libc.so.6"};
  }
  return {"f" + std::to_string(ip), "other.so"};  // every other address a function of its own
}

cpu::RawSample sample(uint64_t mono, std::initializer_list<uintptr_t> ips) {
  cpu::RawSample s{};
  s.mono_ns = mono;
  for (uintptr_t ip : ips) s.ip[s.frames++] = ip;
  return s;
}

void rows_at(Transaction& t, std::initializer_list<uint64_t> offsets) {
  t.start_mono_ns = 1000;
  for (uint64_t off : offsets) {
    Step s;
    s.kind = t.steps.empty() ? StepKind::START : StepKind::MESSAGE;
    s.start_offset_ns = off;
    t.steps.push_back(s);
  }
  t.steps.back().kind = StepKind::END;
}

}  // namespace

TEST(CpuProfileTest, SamplesGoToTheRowWhoseGapTheyFellIn) {
  Transaction t;
  rows_at(t, {0, 100, 500});  // rows at +0, +100, +500 ns
  t.cpu.samples = {sample(1000 + 50, {0x500, 0x400}),            // GAP of row 1
                   sample(1000 + 100, {0x500, 0x400}),           // at row 1's start: still row 1
                   sample(1000 + 300, {0x200, 0x100, 0x300, 0x400}),  // row 2: unnamed libz under deflate
                   sample(1000 + 400, {0x101, 0x300, 0x400}),    // row 2
                   sample(1000 + 450, {0x200, 0x100, 0x300, 0x400}),  // row 2
                   sample(1000 + 900, {0x500, 0x400})};          // after END: END
  int calls = 0;
  cpu::build_profile(t, fake, &calls);
  EXPECT_TRUE(t.cpu.samples.empty());
  const auto& rows = t.cpu_profile.rows;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].row, 1u);
  EXPECT_EQ(rows[0].samples, 2u);
  EXPECT_EQ(rows[0].top.at(0).function, "memcpy");
  EXPECT_EQ(rows[1].row, 2u);
  EXPECT_EQ(rows[1].samples, 4u);  // three in its GAP, one after END (the last row)
  ASSERT_EQ(rows[1].top.size(), 2u);
  EXPECT_EQ(rows[1].top[0].function, "deflate");  // the innermost named frame
  EXPECT_EQ(rows[1].top[0].module, "libz.so.1");
  EXPECT_EQ(rows[1].top[0].samples, 3u);
  EXPECT_EQ(rows[1].top[1].function, "memcpy");
  // Folded stacks, root first; an unnamed frame shows as its module.
  uint32_t total = 0;
  bool deflate_stack = false;
  for (const auto& s : t.cpu_profile.stacks) {
    total += s.samples;
    if (s.folded == "main;gzip_compress;deflate;[libz.so.1]") deflate_stack = s.samples == 2;
  }
  EXPECT_EQ(total, 6u);
  EXPECT_TRUE(deflate_stack);
  EXPECT_LE(calls, 8);  // each address resolved once per transaction

  // The wire: Step.hot (19), Step.cpu_samples (20), Transaction.cpu_stacks (24), cpu_samples_dropped (25).
  t.cpu.samples_dropped = 3;
  Identity id;
  id.instance_id = 1;
  Counters c;
  std::string wire;
  ASSERT_TRUE(encode_batch(id, c, 1, {&t}, &wire));
  v1::Batch b;
  ASSERT_TRUE(b.ParseFromString(wire));
  const auto& pt = b.transactions(0);
  EXPECT_EQ(pt.steps(0).cpu_samples(), 0u);
  EXPECT_EQ(pt.steps(1).cpu_samples(), 2u);
  EXPECT_EQ(pt.steps(2).cpu_samples(), 4u);
  EXPECT_EQ(pt.steps(2).hot(0).function(), "deflate");
  EXPECT_EQ(pt.steps(2).hot(0).samples(), 3u);
  EXPECT_EQ(pt.cpu_stacks_size(), int(t.cpu_profile.stacks.size()));
  EXPECT_EQ(pt.cpu_samples_dropped(), 3u);
  EXPECT_FALSE(b.agent().cpu_sampler().empty());  // the sampler's status rides on every batch
}

TEST(CpuProfileTest, StacksPastTheCapFoldIntoOther) {
  Transaction t;
  rows_at(t, {0, 1000000});
  for (uintptr_t i = 0; i < cpu::kMaxStacks + 50; ++i) t.cpu.samples.push_back(sample(1000 + 10, {0x10000 + i * 16, 0x400}));
  int calls = 0;
  cpu::build_profile(t, fake, &calls);
  ASSERT_EQ(t.cpu_profile.stacks.size(), cpu::kMaxStacks);
  EXPECT_EQ(t.cpu_profile.stacks.back().folded, "(other)");
  EXPECT_EQ(t.cpu_profile.stacks.back().samples, 51u);
  EXPECT_LE(t.cpu_profile.rows.at(0).top.size(), cpu::kTopPerRow);
}
