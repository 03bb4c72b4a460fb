// txray_decoder: garbage, oversize and rule-breaking messages are rejected; random and mutated bytes
// never crash it; whatever it accepts, the store's writer can store.
#include <gtest/gtest.h>

#include <google/protobuf/arena.h>

#include <random>

#include "decoder.h"
#include "store.h"
#include "synthetic.h"
#include "writer.h"

namespace txray::ingest {
namespace {

v1::Batch good_batch(int transactions = 3, int steps = 10) {
  testing::SynthOptions o;
  o.steps = steps;
  std::mt19937_64 rng(1);
  v1::Batch b = testing::make_batch(o, 1);
  for (int i = 0; i < transactions; ++i) testing::add_transaction(b, o, i, rng, 1700000000000000000ull + i);
  return b;
}

DecodeResult decode(const std::string& bytes, const Limits& l = {}) {
  v1::Batch out;
  return decode_batch(bytes.data(), bytes.size(), out, l);
}

TEST(Decoder, AcceptsAWellFormedBatch) {
  std::string bytes = good_batch().SerializeAsString();
  v1::Batch out;
  DecodeResult r = decode_batch(bytes.data(), bytes.size(), out);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(out.transactions_size(), 3);
  EXPECT_EQ(out.transactions(0).steps_size(), 10);
}

TEST(Decoder, AcceptsAnUnattributedContainerAndTheWriterStoresIt) {
  v1::Batch b = good_batch(1);
  std::mt19937_64 rng(2);
  testing::add_unattributed(b, 1, 12, rng, 1700000001000000000ull);
  std::string bytes = b.SerializeAsString();
  v1::Batch out;
  DecodeResult r = decode_batch(bytes.data(), bytes.size(), out);
  ASSERT_TRUE(r.ok()) << r.reason;
  ASSERT_EQ(out.transactions_size(), 2);
  EXPECT_EQ(out.transactions(1).kind(), "unattributed");
  EXPECT_EQ(out.transactions(1).steps_size(), 14);
  Db db = open_store(":memory:", OpenMode::kCreate);
  Writer w(db);
  w.begin();
  auto counts = w.write(out, 1);
  w.commit();
  EXPECT_EQ(counts.transactions, 2u);
  EXPECT_EQ(counts.steps, 10u + 14u);
}

TEST(Decoder, RejectsGarbage) {
  silence_protobuf_logging();
  EXPECT_EQ(decode("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").status, DecodeStatus::kMalformed);
  EXPECT_EQ(decode("").status, DecodeStatus::kInvalid);  // parses as an empty batch: no agent
  // A string field with a length running past the end.
  EXPECT_EQ(decode(std::string("\x0a\x50\x09", 3)).status, DecodeStatus::kMalformed);
}

TEST(Decoder, RejectsOversize) {
  std::string bytes = good_batch().SerializeAsString();
  Limits l;
  l.max_message_bytes = bytes.size() - 1;
  DecodeResult r = decode(bytes, l);
  EXPECT_EQ(r.status, DecodeStatus::kOversize);
  EXPECT_NE(r.reason.find("limit"), std::string::npos);
  l.max_message_bytes = bytes.size();
  EXPECT_TRUE(decode(bytes, l).ok());
}

TEST(Decoder, RejectsWhatTheWriterCannotStore) {
  auto rejects = [](auto mutate, const char* why) {
    v1::Batch b = good_batch();
    mutate(b);
    DecodeResult r = decode(b.SerializeAsString());
    EXPECT_EQ(r.status, DecodeStatus::kInvalid) << why;
  };
  rejects([](v1::Batch& b) { b.clear_agent(); }, "no agent");
  rejects([](v1::Batch& b) { b.mutable_agent()->set_instance_id(0); }, "instance 0");
  rejects([](v1::Batch& b) { b.mutable_transactions(1)->mutable_steps(3)->set_parent(3); }, "parent = self");
  rejects([](v1::Batch& b) { b.mutable_transactions(1)->mutable_steps(3)->set_parent(7); }, "parent later");
  rejects([](v1::Batch& b) { b.mutable_transactions(1)->mutable_steps(3)->set_parent(-2); }, "parent -2");
  rejects([](v1::Batch& b) { b.mutable_transactions(0)->mutable_steps(2)->set_kind(static_cast<v1::StepKind>(42)); },
          "unknown kind");
  rejects([](v1::Batch& b) { b.mutable_transactions(0)->mutable_steps(2)->set_kind(v1::STEP_KIND_UNSPECIFIED); },
          "kind 0");
  rejects([](v1::Batch& b) { b.mutable_transactions(0)->set_trace_id("abc"); }, "trace id length");
  rejects([](v1::Batch& b) { b.mutable_transactions(0)->set_start_unix_ns(~0ull); }, "time out of range");
}

// Over-long strings and attribute lists are cut with a marker: the batch is kept, and what was cut says so.
TEST(Decoder, TruncatesOverlongFieldsWithAMarker) {
  v1::Batch b = good_batch();
  b.mutable_transactions(0)->set_name(std::string(5000, 'n'));
  // A multi-byte character straddling the cut: the result stays valid UTF-8.
  std::string text(1000, 't');
  for (int i = 0; i < 600000; ++i) text += "\xc3\xa9";  // é
  b.mutable_transactions(0)->mutable_steps(1)->set_text(text);
  for (int i = 0; i < 300; ++i) b.mutable_transactions(1)->mutable_steps(2)->add_attributes()->set_key("k" + std::to_string(i));
  b.mutable_agent()->set_command_line(std::string(3 << 20, 'c'));
  std::string bytes = b.SerializeAsString();
  v1::Batch out;
  DecodeResult r = decode_batch(bytes.data(), bytes.size(), out);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.truncated, 4u);
  EXPECT_EQ(r.reason, "command_line of 3145728 bytes");
  const auto& name = out.transactions(0).name();
  EXPECT_LE(name.size(), 4096u);
  const std::string marker = std::string(kTruncatedMarker) + "5000 bytes]";
  EXPECT_EQ(marker, "\xe2\x80\xa6[truncated from 5000 bytes]");
  EXPECT_EQ(name.substr(name.size() - marker.size()), marker);
  const auto& t = out.transactions(0).steps(1).text();
  EXPECT_LE(t.size(), 1u << 20);
  EXPECT_GT(t.size(), (1u << 20) - 64);
  EXPECT_NE(t.find("[truncated from 1201000 bytes]"), std::string::npos);
  v1::Step copy;
  EXPECT_TRUE(copy.ParseFromString(out.transactions(0).steps(1).SerializeAsString()));  // still valid UTF-8
  const auto& attrs = out.transactions(1).steps(2).attributes();
  ASSERT_EQ(attrs.size(), 256);
  EXPECT_EQ(attrs[254].key(), "k254");
  EXPECT_EQ(attrs[255].key(), "txray.truncated_attributes");
  EXPECT_EQ(attrs[255].value(), "45");
  // … and the writer stores it.
  Db db = open_store(":memory:", OpenMode::kCreate);
  Writer w(db);
  w.begin();
  EXPECT_EQ(w.write(out, 1).transactions, 3u);
  w.commit();
}

// A message of tiny repeated fields decodes to far more than its size: it is refused before parsing,
// by an estimate that follows the arena's real use.
TEST(Decoder, RefusesMessagesThatWouldDecodeToTooMuch) {
  v1::Batch b = good_batch(1, 10);
  std::string bytes = b.SerializeAsString();
  // 2,000,000 empty steps (3 bytes each on the wire) appended to transaction 0 by hand.
  v1::Transaction tx = b.transactions(0);
  std::string tx_bytes = tx.SerializeAsString();
  for (int i = 0; i < 2000000; ++i) tx_bytes += std::string("\x9a\x01\x00", 3);  // field 19 (2-byte tag), length 0
  v1::Batch head = b;
  head.clear_transactions();
  std::string msg = head.SerializeAsString();
  msg += '\x2a';  // field 5, length-delimited
  for (uint64_t n = tx_bytes.size(); ; n >>= 7) {  // varint length
    if (n < 0x80) { msg += char(n); break; }
    msg += char((n & 0x7f) | 0x80);
  }
  msg += tx_bytes;
  size_t est = estimate_decoded_bytes(msg.data(), msg.size());
  EXPECT_GT(est, 20 * msg.size());  // ~6 MB on the wire
  Limits l;
  l.max_decoded_bytes = 100u << 20;
  DecodeResult r = decode(msg, l);
  EXPECT_EQ(r.status, DecodeStatus::kOversize);
  EXPECT_NE(r.reason.find("would decode to"), std::string::npos) << r.reason;

  // The estimate against the arena's real use, on ordinary batches: never far below it.
  for (int steps : {2, 10, 200}) {
    std::string ok = good_batch(50, steps).SerializeAsString();
    google::protobuf::Arena arena;
    auto* parsed = google::protobuf::Arena::CreateMessage<v1::Batch>(&arena);
    ASSERT_TRUE(parsed->ParseFromString(ok));
    size_t used = static_cast<size_t>(arena.SpaceUsed());
    size_t e = estimate_decoded_bytes(ok.data(), ok.size());
    EXPECT_GT(e, used / 2) << steps << " steps: estimate " << e << " used " << used;
    EXPECT_LT(e, used * 4) << steps << " steps: estimate " << e << " used " << used;
  }
}

// Random bytes, and valid messages with flipped bits, cut short or spliced: the decoder returns a
// status for each (no crash, no exception), and every batch it accepts is stored without error.
TEST(Decoder, StacksAreCheckedCutAndCounted) {
  v1::Batch b = good_batch(1, 4);
  auto* stack = b.mutable_transactions(0)->mutable_steps(1)->mutable_stack();
  auto* f = stack->add_frames();
  f->set_function(std::string(10000, 'f'));
  f->set_module("m");
  f->set_offset(7);
  std::string bytes = b.SerializeAsString();
  v1::Batch out;
  DecodeResult r = decode_batch(bytes.data(), bytes.size(), out);
  ASSERT_TRUE(r.ok()) << r.reason;
  EXPECT_EQ(r.truncated, 1u);  // the name cut to max_name_bytes
  EXPECT_LE(out.transactions(0).steps(1).stack().frames(0).function().size(), Limits{}.max_name_bytes);
  EXPECT_EQ(out.transactions(0).steps(1).stack().frames(0).offset(), 7u);
  // The estimate counts the nested Stack and Frame objects.
  v1::Batch plain = good_batch(1, 4);
  EXPECT_GT(estimate_decoded_bytes(bytes.data(), bytes.size()),
            estimate_decoded_bytes(plain.SerializeAsString().data(), plain.ByteSizeLong()) + sizeof(v1::Frame));
  for (int i = 0; i < kMaxStackFrames; ++i) stack->add_frames()->set_module("m");
  bytes = b.SerializeAsString();
  r = decode_batch(bytes.data(), bytes.size(), out);
  EXPECT_EQ(r.status, DecodeStatus::kInvalid);
  EXPECT_NE(r.reason.find("stack of"), std::string::npos) << r.reason;
}

TEST(Decoder, RandomAndMutatedBytes) {
  silence_protobuf_logging();
  Db db = open_store(":memory:", OpenMode::kCreate);
  Writer writer(db);
  writer.begin();
  std::mt19937_64 rng(12345);
  const std::string valid = good_batch(4, 12).SerializeAsString();
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string m;
    switch (i % 4) {
      case 0:
        m.resize(rng() % 512);
        for (auto& c : m) c = static_cast<char>(rng());
        break;
      case 1:
        m = valid;
        for (int k = 0, n = 1 + rng() % 8; k < n; ++k) m[rng() % m.size()] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 2:
        m = valid.substr(0, rng() % valid.size());
        break;
      default: {
        size_t a = rng() % valid.size(), b = rng() % valid.size();
        m = valid.substr(0, a) + valid.substr(b);
      }
    }
    v1::Batch out;
    DecodeResult r = decode_batch(m.data(), m.size(), out);
    if (r.ok()) {
      ++accepted;
      EXPECT_NO_THROW(writer.write(out, i));
    } else {
      ++rejected;
      EXPECT_FALSE(r.reason.empty());
    }
  }
  writer.commit();
  EXPECT_GT(rejected, 1000);
  EXPECT_GT(accepted, 10);  // bit flips in payload bytes keep many messages valid
}

}  // namespace
}  // namespace txray::ingest
