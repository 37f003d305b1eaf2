// Malformed GGUF files: each must be refused with a message naming the file and the fault.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/gguf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/raw_gguf.h"

namespace jllm::gguf {
namespace {

using ::testing::HasSubstr;
using testing::RawGguf;
using testing::SmallValidFile;

constexpr uint32_t kF32 = 0, kQ8_0 = 8;

absl::StatusOr<std::unique_ptr<GgufFile>> Parse(const std::vector<uint8_t>& bytes) {
  return GgufFile::OpenBuffer("bad.gguf", bytes);
}

// Parsing fails with InvalidArgument, the message starts with the file name and contains `what`.
void ExpectRejected(const std::vector<uint8_t>& bytes, const std::string& what) {
  auto f = Parse(bytes);
  ASSERT_FALSE(f.ok()) << "accepted a file that should fail with: " << what;
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument) << f.status();
  EXPECT_THAT(std::string(f.status().message()), ::testing::StartsWith("bad.gguf: "));
  EXPECT_THAT(std::string(f.status().message()), HasSubstr(what));
}

// A file with the given KV records (already encoded) and no tensors.
std::vector<uint8_t> WithKvs(int64_t n_kv, const RawGguf& kvs) {
  RawGguf g;
  g.Header(3, 0, n_kv).Raw(kvs.bytes);
  return g.bytes;
}

TEST(GgufBadInput, SmallValidFileParses) {
  const auto small = SmallValidFile();
  auto f = Parse(small.bytes);
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ((*f)->tensors().size(), 2u);
  EXPECT_EQ((*f)->data_offset(), small.data_offset);
  EXPECT_EQ((*f)->tensors()[1].offset, 32u);
  EXPECT_EQ((*f)->tensors()[1].nbytes, 34u);
}

TEST(GgufBadInput, EveryTruncationBeforeTheDataEndIsRejected) {
  const auto small = SmallValidFile();
  for (size_t n = 0; n < small.bytes.size(); ++n) {
    std::vector<uint8_t> prefix(small.bytes.begin(), small.bytes.begin() + n);
    auto f = Parse(prefix);
    if (n < small.data_end) {
      EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes was accepted";
      if (!f.ok()) {
        EXPECT_THAT(std::string(f.status().message()), HasSubstr("bad.gguf: "));
      }
    } else {
      // Only the zero padding after the last tensor is missing: the data are all there.
      EXPECT_TRUE(f.ok()) << "prefix of " << n << " bytes: " << f.status();
    }
  }
}

TEST(GgufBadInput, BadMagic) {
  for (const char* magic : {"GGUG", "gguf", "GGML", "\0\0\0\0"}) {
    auto bytes = SmallValidFile().bytes;
    std::copy(magic, magic + 4, bytes.begin());
    ExpectRejected(bytes, "not a GGUF file");
  }
  ExpectRejected({'G', 'G'}, "too short for the magic");
}

TEST(GgufBadInput, Versions) {
  auto with_version = [](uint32_t v) {
    auto bytes = SmallValidFile().bytes;
    for (int i = 0; i < 4; ++i) bytes[4 + i] = static_cast<uint8_t>(v >> (8 * i));
    return bytes;
  };
  ExpectRejected(with_version(0), "version 0");
  ExpectRejected(with_version(1), "version 1");
  ExpectRejected(with_version(4), "version 4");
  ExpectRejected(with_version(0x7FFF), "version 32767");
  // A big-endian writer stores 3 as bytes 00 00 00 03.
  ExpectRejected(with_version(0x03000000), "wrong endianness");
  // Version 2 has the same layout as 3.
  auto v2 = Parse(with_version(2));
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ((*v2)->version(), 2u);
}

TEST(GgufBadInput, HugeOrNegativeCountsFailWithoutAllocating) {
  ExpectRejected(RawGguf().Header(3, 0, std::numeric_limits<int64_t>::max()).bytes,
                 "KV count 9223372036854775807 cannot fit");
  ExpectRejected(RawGguf().Header(3, int64_t{1} << 60, 0).bytes, "tensor count");
  ExpectRejected(RawGguf().Header(3, -1, 0).bytes, "tensor count -1 is negative");
  ExpectRejected(RawGguf().Header(3, 0, -5).bytes, "KV count -5 is negative");
  // Three KVs need at least 39 bytes; give 38.
  ExpectRejected(RawGguf().Header(3, 0, 3).Zeros(38).bytes, "KV count 3 cannot fit");
}

TEST(GgufBadInput, HugeStringLengths) {
  RawGguf key;
  key.U64(uint64_t{1} << 62).Zeros(20);
  ExpectRejected(WithKvs(1, key), "string length 4611686018427387904");

  RawGguf value;
  value.Str("k").U32(8).U64(std::numeric_limits<uint64_t>::max()).Zeros(8);
  ExpectRejected(WithKvs(1, value), "key 'k'");

  RawGguf name;
  name.U64(uint64_t{1} << 40).Zeros(40);
  ExpectRejected(RawGguf().Header(3, 1, 0).Raw(name.bytes).bytes, "tensor info #0: name");
}

TEST(GgufBadInput, HugeArrayCounts) {
  RawGguf u8s;
  u8s.Str("k").U32(9).U32(0).U64(uint64_t{1} << 62).Zeros(16);
  ExpectRejected(WithKvs(1, u8s), "array of 4611686018427387904 UINT8 elements cannot fit");
  RawGguf strings;
  strings.Str("k").U32(9).U32(8).U64(std::numeric_limits<uint64_t>::max()).Zeros(16);
  ExpectRejected(WithKvs(1, strings), "STRING elements cannot fit");
  // One element too many for the bytes present: 4 u32 need 16 bytes, 15 remain.
  RawGguf tight;
  tight.Str("k").U32(9).U32(4).U64(4).Zeros(15);
  ExpectRejected(WithKvs(1, tight), "array of 4 UINT32 elements cannot fit");
}

TEST(GgufBadInput, TensorPastTheEndOfTheFile) {
  RawGguf g;
  g.Header(3, 1, 0).TensorInfo("blk.0.attn_q.weight", {8, 4}, kF32, 0).PadTo(32);
  const size_t data = g.size();
  g.Zeros(100);  // the tensor needs 8 * 4 * 4 = 128 bytes
  ExpectRejected(g.bytes, absl::StrCat("tensor 'blk.0.attn_q.weight': data [", data, ", ",
                                       data + 128, ") lies past the end of the file (size ",
                                       data + 100, ")"));
}

TEST(GgufBadInput, TensorWhoseSizeExceedsAnyFile) {
  RawGguf g;
  g.Header(3, 1, 0).TensorInfo("w", {int64_t{1} << 40, int64_t{1} << 20}, kF32, 0).PadTo(32);
  ExpectRejected(g.bytes, "lies past the end of the file");
}

TEST(GgufBadInput, MisalignedOffset) {
  RawGguf g;
  g.Header(3, 2, 0).TensorInfo("a", {4}, kF32, 0).TensorInfo("b", {4}, kF32, 16).PadTo(32);
  g.Zeros(64);
  ExpectRejected(g.bytes, "tensor 'b': offset 16 is not a multiple of the alignment 32");
}

TEST(GgufBadInput, NonContiguousOffsets) {
  RawGguf gap;  // "b" should start at PAD(16, 32) = 32
  gap.Header(3, 2, 0).TensorInfo("a", {4}, kF32, 0).TensorInfo("b", {4}, kF32, 64).PadTo(32);
  gap.Zeros(128);
  ExpectRejected(gap.bytes, "tensor 'b': offset 64 but 32 expected");

  RawGguf first;  // the first tensor must start at 0
  first.Header(3, 1, 0).TensorInfo("a", {4}, kF32, 32).PadTo(32).Zeros(64);
  ExpectRejected(first.bytes, "tensor 'a': offset 32 but 0 expected");

  RawGguf swapped;  // out of info order
  swapped.Header(3, 2, 0).TensorInfo("a", {4}, kF32, 32).TensorInfo("b", {4}, kF32, 0).PadTo(32);
  swapped.Zeros(64);
  ExpectRejected(swapped.bytes, "contiguous");
}

TEST(GgufBadInput, UnknownAndRetiredTypeIds) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u, 0xFFFFFFFFu}) {
    RawGguf g;
    g.Header(3, 1, 0).TensorInfo("w", {256}, id, 0).PadTo(32).Zeros(1024);
    ExpectRejected(g.bytes, absl::StrCat("tensor 'w': unknown or retired ggml type id ", id));
  }
}

TEST(GgufBadInput, DuplicateKeys) {
  RawGguf kvs;
  kvs.Str("a").U32(4).U32(1).Str("b").U32(4).U32(2).Str("a").U32(4).U32(3);
  ExpectRejected(WithKvs(3, kvs), "key 'a': duplicate key (KV #2)");
}

TEST(GgufBadInput, DuplicateTensorNames) {
  RawGguf g;
  g.Header(3, 2, 0).TensorInfo("w", {4}, kF32, 0).TensorInfo("w", {4}, kF32, 32).PadTo(32);
  g.Zeros(64);
  ExpectRejected(g.bytes, "tensor 'w': duplicate tensor name");
}

TEST(GgufBadInput, TooManyDims) {
  RawGguf g;
  g.Header(3, 1, 0).TensorInfo("w", {1, 1, 1, 1, 1}, kF32, 0).PadTo(32).Zeros(32);
  ExpectRejected(g.bytes, "tensor 'w': n_dims is 5");
}

TEST(GgufBadInput, BadShapes) {
  RawGguf negative;
  negative.Header(3, 1, 0).TensorInfo("w", {4, -1}, kF32, 0).PadTo(32).Zeros(32);
  ExpectRejected(negative.bytes, "tensor 'w': ne[1] = -1 is negative");

  RawGguf partial_block;
  partial_block.Header(3, 1, 0).TensorInfo("w", {48}, kQ8_0, 0).PadTo(32).Zeros(64);
  ExpectRejected(partial_block.bytes, "ne[0] = 48 is not a multiple of the q8_0 block size 32");

  const int64_t big = int64_t{1} << 32;
  RawGguf overflow;
  overflow.Header(3, 1, 0).TensorInfo("w", {big, big, big}, kF32, 0).PadTo(32).Zeros(32);
  ExpectRejected(overflow.bytes, "overflows 64 bits");
}

TEST(GgufBadInput, TensorNameLength) {
  const std::string ok(63, 'n'), too_long(64, 'n');
  RawGguf g;
  g.Header(3, 1, 0).TensorInfo(ok, {4}, kF32, 0).PadTo(32).Zeros(32);
  EXPECT_TRUE(Parse(g.bytes).ok());
  RawGguf bad;
  bad.Header(3, 1, 0).TensorInfo(too_long, {4}, kF32, 0).PadTo(32).Zeros(32);
  ExpectRejected(bad.bytes, "is 64 bytes; the limit is 63");
}

TEST(GgufBadInput, AlignmentKey) {
  auto with_alignment = [](uint32_t type, uint64_t value, int size) {
    RawGguf g;
    g.Header(3, 0, 1).Str("general.alignment").U32(type);
    if (size == 4) g.U32(static_cast<uint32_t>(value));
    if (size == 8) g.U64(value);
    return g.bytes;
  };
  ExpectRejected(with_alignment(/*INT32*/ 5, 32, 4), "'general.alignment' must be UINT32, not INT32");
  ExpectRejected(with_alignment(/*UINT64*/ 10, 32, 8), "must be UINT32, not UINT64");
  ExpectRejected(with_alignment(4, 0, 4), "'general.alignment' is 0, not a power of two");
  ExpectRejected(with_alignment(4, 48, 4), "is 48, not a power of two");

  // A valid non-default alignment moves the blob and the padding.
  RawGguf g;
  g.Header(3, 2, 1).Str("general.alignment").U32(4).U32(64);
  g.TensorInfo("a", {4}, kF32, 0).TensorInfo("b", {4}, kF32, 64).PadTo(64);
  const size_t blob = g.size();
  g.Zeros(80);
  auto f = Parse(g.bytes);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset(), blob);
  EXPECT_EQ(blob % 64, 0u);
}

TEST(GgufBadInput, NestedArray) {
  RawGguf kvs;
  kvs.Str("k").U32(9).U32(9).U64(1).U32(4).U64(1).U32(7);
  ExpectRejected(WithKvs(1, kvs), "key 'k': nested arrays are not supported");
}

TEST(GgufBadInput, UnknownValueTypes) {
  RawGguf scalar;
  scalar.Str("k").U32(13).U32(0);
  ExpectRejected(WithKvs(1, scalar), "key 'k': unknown value type id 13");
  RawGguf element;
  element.Str("k").U32(9).U32(99).U64(0);
  ExpectRejected(WithKvs(1, element), "unknown array element type id 99");
}

TEST(GgufBadInput, BoolOutOfRange) {
  RawGguf kvs;
  kvs.Str("flag").U32(7).U8(2);
  ExpectRejected(WithKvs(1, kvs), "key 'flag': bool at offset");
  RawGguf arr;
  arr.Str("flags").U32(9).U32(7).U64(3).U8(0).U8(1).U8(7);
  ExpectRejected(WithKvs(1, arr), "element 2: bool");
}

TEST(GgufBadInput, OpenReportsMissingFilesAndDirectories) {
  auto missing = GgufFile::Open("/nonexistent/dir/model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/dir/model.gguf"));
  auto dir = GgufFile::Open("/");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(std::string(dir.status().message()), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace jllm::gguf
