// libFuzzer target: the collector's decoder + validator, and the writer for whatever they accept
// (into an in-memory store). Built with clang -fsanitize=fuzzer,address,undefined; see CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "decoder.h"
#include "store.h"
#include "writer.h"

namespace {
struct Fixture {
  txray::Db db = txray::open_store(":memory:", txray::OpenMode::kCreate);
  txray::Writer writer{db};
  Fixture() { txray::ingest::silence_protobuf_logging(); }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture();
  txray::v1::Batch batch;
  txray::ingest::Limits limits;
  limits.max_message_bytes = 1 << 20;
  if (txray::ingest::decode_batch(data, size, batch, limits).ok()) {
    f->writer.begin();
    f->writer.write(batch, 1);  // throws (and so aborts the fuzzer) if a validated batch cannot be stored
    f->writer.rollback();       // keep the in-memory store small
  }
  return 0;
}
