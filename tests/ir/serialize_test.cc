// Binary graph form: exact round trip, and corrupt or truncated input is an error, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tests/ir/tiny_model_ir.h"

namespace jllm::ir {
namespace {

using ::testing::HasSubstr;

Graph Tiny() {
  auto g = Parse(testing::kTinyModelIr);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

// The tiny model with every fused form and an int8 cache, so all attribute field types travel.
Graph TinyFused() {
  const std::string text =
      absl::StrReplaceAll(testing::TinyModelFusedIr(),
                          {{"kv_cache f16", "kv_cache int8"},
                           {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: i8[2,S,8]"}});
  auto g = Parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  return *std::move(g);
}

// The tiny model with an f32 cache (the validation storage type).
Graph TinyF32Kv() {
  auto g = Parse(absl::StrReplaceAll(testing::kTinyModelIr,
                                     {{"kv_cache f16", "kv_cache f32"},
                                      {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: f32[2,S,8]"}}));
  EXPECT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  return *std::move(g);
}

TEST(SerializeTest, RoundTripIsExact) {
  for (const Graph& g : {Tiny(), TinyFused(), TinyF32Kv()}) {
    const std::string bytes = SerializeGraph(g);
    auto back = DeserializeGraph(bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, g);
    EXPECT_EQ(Print(*back), Print(g));
  }
}

TEST(SerializeTest, StartsWithMagicAndVersion) {
  const std::string bytes = SerializeGraph(Tiny());
  ASSERT_GE(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(0, 4), "JIRG");
  EXPECT_EQ(bytes.substr(4, 4), std::string("\x01\x00\x00\x00", 4));
}

TEST(SerializeTest, EveryTruncationIsAnError) {
  const std::string bytes = SerializeGraph(TinyFused());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto g = DeserializeGraph(bytes.substr(0, n), "plan.bin");
    ASSERT_FALSE(g.ok()) << "a prefix of " << n << " bytes was accepted";
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("plan.bin: "));
  }
}

TEST(SerializeTest, TrailingBytesAreAnError) {
  auto g = DeserializeGraph(SerializeGraph(Tiny()) + "x");
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("1 unexpected bytes after the graph"));
}

TEST(SerializeTest, BadMagicAndFutureVersionAreNamed) {
  std::string bytes = SerializeGraph(Tiny());
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_THAT(std::string(DeserializeGraph(bad_magic).status().message()), HasSubstr("bad magic"));
  std::string future = bytes;
  future[4] = 2;
  EXPECT_THAT(std::string(DeserializeGraph(future).status().message()),
              HasSubstr("graph format version 2 is not supported"));
}

// Every single-byte corruption either fails cleanly or yields a graph that passes Verify
// (e.g. a changed offset or float); it must never crash or hang. Run under ASan in CI.
TEST(SerializeTest, ByteCorruptionNeverCrashes) {
  const std::string bytes = SerializeGraph(TinyFused());
  int rejected = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xFF}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      auto g = DeserializeGraph(bad);
      if (g.ok()) {
        EXPECT_TRUE(Verify(*g).ok());
      } else {
        ++rejected;
      }
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(SerializeTest, HugeCountIsRefusedWithoutAllocating) {
  // A valid prefix up to the KV count, then a count of 2^32-1 types with nothing behind it.
  Graph g = Tiny();
  ByteWriter w;
  w.Bytes("JIRG");
  w.U32(kGraphFormatVersion);
  fields::Write(g.config, w);
  w.U32(0xFFFFFFFFu);
  auto back = DeserializeGraph(w.data());
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(std::string(back.status().message()),
              HasSubstr("kv_cache types: count 4294967295 cannot fit"));
}

TEST(SerializeTest, OutOfRangeIdIsRefused) {
  Graph g = Tiny();
  g.nodes[0].inputs[0] = static_cast<ValueId>(g.values.size());  // one past the end
  auto back = DeserializeGraph(SerializeGraph(g));
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(std::string(back.status().message()), HasSubstr("node inputs: id"));
}

TEST(SerializeTest, SemanticallyInvalidGraphIsRefused) {
  Graph g = Tiny();
  g.kv_dtypes[0] = KvDType::kInt8;  // cache values still say f16
  auto back = DeserializeGraph(SerializeGraph(g));
  ASSERT_FALSE(back.ok());
  EXPECT_THAT(std::string(back.status().message()), HasSubstr("invalid graph"));
}

}  // namespace
}  // namespace jllm::ir
