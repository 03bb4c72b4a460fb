// libFuzzer target: inserting the traceparent line into the bytes a program writes
// (agent/protocols/http1/http_inject.cpp), against a kernel that accepts any number of bytes of each write, as
// agent/protocols/dispatch/http_out.cpp's write_through() drives it. The program must see exactly its own byte counts,
// and the wire must carry exactly the program's bytes with each committed line inserted once, at its
// point, whole. Checked:
//  - gather() never lays out more than iovcnt + kExtraIov entries, and lays out pending + program bytes
//    (+ the line) in order;
//  - commit() never reports more program bytes than offered, nor program bytes before pending ones;
//  - after the program wrote everything and the pending bytes were flushed, the wire is the program's
//    stream with every committed line at its offset.
#include <fuzzer/FuzzedDataProvider.h>

#include <sys/uio.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "protocols/http1/http_inject.h"

using namespace txray;

namespace {

[[noreturn]] void fail(const char* what, std::string_view a = {}, std::string_view b = {}) {
  fprintf(stderr, "invariant broken: %s\n  [%.*s]\n  [%.*s]\n", what, int(a.size()), a.data(), int(b.size()),
          b.data());
  abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string prog = in.ConsumeRandomLengthString(4096);  // everything the program will write
  HeaderInjector inj;
  std::string wire, expected;  // what the kernel took; what it should have taken in the end
  size_t done = 0;             // program bytes the program was told were written
  int guard = 0;
  while (done < prog.size() && in.remaining_bytes() && ++guard < 256) {
    // The program's next write: the rest of its bytes (or a part), in up to 6 iovecs, some empty.
    size_t len = in.ConsumeIntegralInRange<size_t>(0, prog.size() - done);
    std::vector<iovec> iov;
    size_t cut = 0;
    int cnt = in.ConsumeIntegralInRange(0, 6);
    for (int i = 0; i < cnt; ++i) {
      size_t k = i + 1 == cnt ? len - cut : in.ConsumeIntegralInRange<size_t>(0, len - cut);
      iov.push_back({prog.data() + done + cut, k});
      cut += k;
    }
    if (cnt == 0) len = 0;
    // Whether to insert, where, and what (the glue inserts 70 bytes; any length is tried here).
    size_t at = HeaderInjector::kNoInsert;
    std::string line;
    if (in.ConsumeBool()) {
      at = in.ConsumeIntegralInRange<size_t>(0, len + 2);
      line = in.ConsumeRandomLengthString(HeaderInjector::kMaxLine + 24);  // traceparent + tracestate + baggage lines, and past the room
    }
    // write_through's loop: write, commit, again while only pending bytes went out.
    for (int rounds = 0; rounds < 64; ++rounds) {
      iovec out[6 + HeaderInjector::kExtraIov];
      size_t pending_before = inj.pending_bytes();
      int k = inj.gather(iov.data(), int(iov.size()), at, line, out);
      if (k < 0 || k > int(iov.size()) + HeaderInjector::kExtraIov) fail("gather laid out too many entries");
      std::string laid;
      for (int i = 0; i < k; ++i) laid.append(static_cast<const char*>(out[i].iov_base), out[i].iov_len);
      size_t kept_line = std::min(line.size(), HeaderInjector::kMaxLine);
      bool placed = at != HeaderInjector::kNoInsert && at <= len && kept_line > 0 && !iov.empty();
      if (laid.size() != pending_before + len + (placed ? kept_line : 0)) fail("gather laid out the wrong bytes");
      if (laid.compare(pending_before, std::string::npos,
                       placed ? prog.substr(done, at) + line.substr(0, kept_line) + prog.substr(done + at, len - at)
                              : prog.substr(done, len)) != 0)
        fail("gather laid out the bytes in the wrong order", laid);
      if (in.ConsumeIntegralInRange(0, 15) == 0) break;  // the write failed (EAGAIN): nothing committed
      size_t r = in.ConsumeIntegralInRange<size_t>(0, laid.size());
      wire.append(laid, 0, r);
      size_t mine = inj.commit(r);
      if (mine > len) fail("commit reports more program bytes than offered");
      if (r < pending_before && mine != 0) fail("program bytes counted before the pending ones went out");
      if (placed && inj.inserted()) {
        expected.append(prog, done, at);
        expected.append(line, 0, kept_line);
        expected.append(prog, done + at, mine - at);
        at = HeaderInjector::kNoInsert;
      } else {
        expected.append(prog, done, mine);
      }
      if (placed && at != HeaderInjector::kNoInsert && mine > at) fail("bytes after the insertion point without the line");
      done += mine;
      // The program's next write starts after what it was told was written.
      if (mine > 0 || len == 0 || r == 0) break;
    }
  }
  // Flush what is pending (the program always writes again after an insertion: here, with nothing).
  for (int i = 0; i < 4 && inj.has_pending(); ++i) {
    iovec out[HeaderInjector::kExtraIov];
    int k = inj.gather(nullptr, 0, HeaderInjector::kNoInsert, {}, out);
    size_t r = 0;
    for (int j = 0; j < k; ++j) {
      wire.append(static_cast<const char*>(out[j].iov_base), out[j].iov_len);
      r += out[j].iov_len;
    }
    if (inj.commit(r) != 0) fail("program bytes in a flush of pending bytes");
  }
  if (inj.has_pending()) fail("pending bytes never flushed");
  if (wire != expected) fail("the wire is not the program's bytes with the lines inserted", wire, expected);
  return 0;
}
