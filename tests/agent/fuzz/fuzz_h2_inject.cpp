// libFuzzer target: the byte accounting of traceparent fields put into HTTP/2 HEADERS frames
// (agent/protocols/http2/h2_inject.cpp), against a kernel that accepts any number of bytes of each write, driven as
// agent/protocols/dispatch/http_out.cpp's h2_write_through() drives it. Checked:
//  - gather() lays out pending bytes, then the program's bytes with each edit's replacement in place of
//    the bytes it replaces, in order, within max_out() entries;
//  - commit() never reports more program bytes than offered, nor any while pending bytes remain;
//  - the insertion point is before the end of the program's write (as the planner guarantees), so no
//    pending byte is ever left behind: when the program has written everything, the wire is exactly the
//    program's stream with every committed edit applied once (frame length grown by the field, field at
//    its point), whole.
#include <fuzzer/FuzzedDataProvider.h>

#include <sys/uio.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocols/http2/h2_inject.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what) {
  fprintf(stderr, "invariant broken: %s\n", what);
  abort();
}

struct Planned {
  size_t frame_at, at;  // offsets in the write
  uint32_t frame_len;
  std::string field;
};

std::string replacement(const std::string& prog, size_t frame_at, size_t at, uint32_t frame_len,
                        const std::string& field) {
  std::string r = prog.substr(frame_at, at - frame_at);
  uint32_t grown = frame_len + uint32_t(field.size());
  r[0] = char(grown >> 16);
  r[1] = char(grown >> 8);
  r[2] = char(grown);
  return r + field;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string prog = in.ConsumeRandomLengthString(8192);
  H2Injector inj;
  std::string wire;
  struct Done {
    size_t at, len;
    std::string r;
  };
  std::vector<Done> committed;  // absolute program offsets
  size_t done = 0;
  int guard = 0;
  while (done < prog.size() && in.remaining_bytes() && ++guard < 256) {
    size_t len = in.ConsumeIntegralInRange<size_t>(1, prog.size() - done);
    std::vector<iovec> iov;
    size_t cut = 0;
    int cnt = in.ConsumeIntegralInRange(1, 6);
    for (int i = 0; i < cnt; ++i) {
      size_t k = i + 1 == cnt ? len - cut : in.ConsumeIntegralInRange<size_t>(0, len - cut);
      iov.push_back({prog.data() + done + cut, k});
      cut += k;
    }
    std::string mine_bytes = prog.substr(done, len);
    // Edits as the planner makes them: in order, 9 bytes of frame header at least, the insertion point
    // before the end of the write.
    std::vector<Planned> plan;
    inj.begin();
    size_t pos = 0;
    int nedits = in.ConsumeIntegralInRange(0, 5);
    for (int e = 0; e < nedits && pos + 10 < len; ++e) {
      size_t frame_at = in.ConsumeIntegralInRange<size_t>(pos, len - 10);
      size_t at = in.ConsumeIntegralInRange<size_t>(frame_at + 9, std::min(len - 1, frame_at + 9 + 1100));
      uint32_t frame_len = in.ConsumeIntegralInRange<uint32_t>(0, 0xffffff);
      std::string field = in.ConsumeRandomLengthString(H2Injector::kMaxField + 16);  // all three fields, and past the room
      if (inj.add(frame_at, at, mine_bytes.data() + frame_at, frame_len, field.data(), field.size(), uint32_t(plan.size())))
        plan.push_back({frame_at, at, frame_len, field});
      pos = at;
    }
    for (int rounds = 0; rounds < 64; ++rounds) {
      std::vector<iovec> out(inj.max_out(cnt));
      std::string pending_before;
      int k = inj.gather(iov.data(), cnt, out.data());
      if (k < 0 || size_t(k) > out.size()) fail("gather laid out too many entries");
      std::string laid;
      for (int i = 0; i < k; ++i) laid.append(static_cast<const char*>(out[i].iov_base), out[i].iov_len);
      std::string expect_prog;
      size_t cur = 0;
      for (const Planned& p : plan) {
        expect_prog += mine_bytes.substr(cur, p.frame_at - cur);
        expect_prog += replacement(mine_bytes, p.frame_at, p.at, p.frame_len, p.field);
        cur = p.at;
      }
      expect_prog += mine_bytes.substr(cur);
      if (laid.size() < expect_prog.size() || laid.compare(laid.size() - expect_prog.size(), std::string::npos, expect_prog) != 0)
        fail("gather laid out the wrong bytes");
      if (in.ConsumeIntegralInRange(0, 15) == 0) break;  // EAGAIN: nothing went
      size_t r = in.ConsumeIntegralInRange<size_t>(0, laid.size());
      wire.append(laid, 0, r);
      uint32_t tags[H2Injector::kMaxEdits];
      size_t ntags = 0;
      size_t mine = inj.commit(r, tags, &ntags);
      if (mine > len) fail("commit reports more program bytes than offered");
      if (inj.has_pending() && mine > 0) {
        // allowed only when an edit was cut: the program was told its bytes up to that insertion point went
        if (ntags == 0) fail("program bytes reported while pending bytes remain");
      }
      for (size_t t = 0; t < ntags; ++t) {
        const Planned& p = plan[tags[t]];
        committed.push_back({done + p.frame_at, p.at - p.frame_at, replacement(mine_bytes, p.frame_at, p.at, p.frame_len, p.field)});
      }
      if (mine > 0 || r == 0) {
        done += mine;
        break;
      }
    }
  }
  if (done < prog.size()) return 0;  // not finished: nothing more to compare
  if (inj.has_pending()) fail("pending bytes left after the program's last write");
  std::string expected;
  size_t cur = 0;
  for (const Done& d : committed) {
    if (d.at < cur) fail("edits committed out of order");
    expected += prog.substr(cur, d.at - cur) + d.r;
    cur = d.at + d.len;
  }
  expected += prog.substr(cur);
  if (wire != expected) fail("the wire is not the program's stream with the committed edits");
  return 0;
}
