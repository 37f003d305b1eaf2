// GgufWriter -> file -> GgufFile: exact bytes, every value type, tensor layout and padding, and
// the writer's failure behaviour (nothing half-written is left behind).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/temp_files.h"
#include "tests/gguf/raw_gguf.h"

namespace jllm::gguf {
namespace {

using ::testing::HasSubstr;
using testing::RawGguf;

using ::jllm::testing::TempPath;
using ::jllm::testing::ReadFileBytes;

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + 7 * i);
  return v;
}

TEST(GgufRoundTrip, WritesTheExactLayout) {
  const auto t0 = Pattern(12, 1), t1 = Pattern(68, 50);
  GgufWriter w;
  w.SetString("general.architecture", "qwen3");
  w.SetUint32("qwen3.block_count", 2);
  w.SetInt32Array("arr", {1, -2});
  ASSERT_TRUE(w.AddTensor("t0", GgmlType::kF32, {3}, t0).ok());
  ASSERT_TRUE(w.AddTensor("t1", GgmlType::kQ8_0, {32, 2, 1}, t1).ok());
  const std::string path = TempPath("exact.gguf");
  ASSERT_TRUE(w.Write(path).ok());

  RawGguf e;
  e.Header(3, 2, 3);
  e.Str("general.architecture").U32(8).Str("qwen3");
  e.Str("qwen3.block_count").U32(4).U32(2);
  e.Str("arr").U32(9).U32(5).U64(2).U32(1).U32(0xFFFFFFFE);
  e.TensorInfo("t0", {3}, 0, 0);
  e.TensorInfo("t1", {32, 2}, 8, 32);  // trailing ne = 1 is dropped: n_dims 2
  e.PadTo(32).Raw(t0).PadTo(32).Raw(t1).PadTo(32);
  EXPECT_EQ(ReadFileBytes(path), e.bytes);
  std::remove(path.c_str());
}

// One value of every GGUF type, and an array of every element type.
std::vector<KeyValue> EveryValueType() {
  auto scalar = [](ValueType t, std::variant<uint64_t, int64_t, double, std::string> x) {
    Value v;
    v.type = t;
    v.scalar = std::move(x);
    return v;
  };
  auto array = [](ValueType e) {
    Value v;
    v.type = ValueType::kArray;
    v.array_type = e;
    return v;
  };
  std::vector<KeyValue> kvs = {
      {"u8", scalar(ValueType::kUint8, uint64_t{200})},
      {"i8", scalar(ValueType::kInt8, int64_t{-100})},
      {"u16", scalar(ValueType::kUint16, uint64_t{65535})},
      {"i16", scalar(ValueType::kInt16, int64_t{-32768})},
      {"u32", scalar(ValueType::kUint32, uint64_t{4000000000u})},
      {"i32", scalar(ValueType::kInt32, int64_t{-2000000000})},
      {"f32", scalar(ValueType::kFloat32, double{1.5f})},
      {"bool", scalar(ValueType::kBool, uint64_t{1})},
      {"str", scalar(ValueType::kString, std::string("h\xC3\xA9llo\n\0x", 9))},
      {"u64", scalar(ValueType::kUint64, uint64_t{0xFEDCBA9876543210})},
      {"i64", scalar(ValueType::kInt64, int64_t{-1234567890123456789})},
      {"f64", scalar(ValueType::kFloat64, 3.141592653589793)},
  };
  Value a = array(ValueType::kUint8); a.ints = {0, 255}; kvs.push_back({"a.u8", a});
  a = array(ValueType::kInt8); a.ints = {-128, 127}; kvs.push_back({"a.i8", a});
  a = array(ValueType::kUint16); a.ints = {0, 65535}; kvs.push_back({"a.u16", a});
  a = array(ValueType::kInt16); a.ints = {-32768, 32767}; kvs.push_back({"a.i16", a});
  a = array(ValueType::kUint32); a.ints = {0, 4294967295}; kvs.push_back({"a.u32", a});
  a = array(ValueType::kInt32); a.ints = {-2147483648LL, 7}; kvs.push_back({"a.i32", a});
  a = array(ValueType::kUint64); a.ints = {0, -1}; kvs.push_back({"a.u64", a});  // -1 = 2^64-1
  a = array(ValueType::kInt64); a.ints = {INT64_MIN, INT64_MAX}; kvs.push_back({"a.i64", a});
  a = array(ValueType::kBool); a.ints = {1, 0, 1}; kvs.push_back({"a.bool", a});
  a = array(ValueType::kFloat32); a.floats = {-0.25, double{1e30f}}; kvs.push_back({"a.f32", a});
  a = array(ValueType::kFloat64); a.floats = {1e-300, -2.5}; kvs.push_back({"a.f64", a});
  a = array(ValueType::kString); a.strings = {"", "x", std::string(1000, 'y')};
  kvs.push_back({"a.str", a});
  a = array(ValueType::kInt32); kvs.push_back({"a.empty", a});
  return kvs;
}

void ExpectSameValue(const std::string& key, const Value& got, const Value& want) {
  SCOPED_TRACE(key);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.scalar, want.scalar);
  if (want.type == ValueType::kArray) {
    EXPECT_EQ(got.array_type, want.array_type);
    EXPECT_EQ(got.ints, want.ints);
    EXPECT_EQ(got.floats, want.floats);
    EXPECT_EQ(got.strings, want.strings);
    EXPECT_EQ(got.array_size(), want.ints.size() + want.floats.size() + want.strings.size());
  }
}

TEST(GgufRoundTrip, EveryValueTypeAndArray) {
  const std::vector<KeyValue> kvs = EveryValueType();
  GgufWriter w;
  for (const KeyValue& kv : kvs) w.SetValue(kv.key, kv.value);
  w.SetUint32("set.u32", 7);
  w.SetInt32("set.i32", -7);
  w.SetUint64("set.u64", uint64_t{1} << 40);
  w.SetFloat32("set.f32", 0.1f);
  w.SetBool("set.bool", false);
  w.SetString("set.str", "s");
  w.SetStringArray("set.strs", {"a", "bc"});
  w.SetInt32Array("set.i32s", {-1, 2});
  w.SetFloat32Array("set.f32s", {0.5f, -0.1f});
  const std::string path = TempPath("values.gguf");
  ASSERT_TRUE(w.Write(path).ok());

  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  ASSERT_EQ(g.metadata().size(), kvs.size() + 9);
  for (size_t i = 0; i < kvs.size(); ++i) {
    EXPECT_EQ(g.metadata()[i].key, kvs[i].key);  // written in order
    ExpectSameValue(kvs[i].key, g.metadata()[i].value, kvs[i].value);
  }
  EXPECT_EQ(*g.GetUint32("set.u32"), 7u);
  EXPECT_EQ(std::get<int64_t>(g.Find("set.i32")->scalar), -7);
  EXPECT_EQ(std::get<uint64_t>(g.Find("set.u64")->scalar), uint64_t{1} << 40);
  EXPECT_EQ(*g.GetFloat32("set.f32"), 0.1f);
  EXPECT_EQ(*g.GetBool("set.bool"), false);
  EXPECT_EQ(*g.GetString("set.str"), "s");
  EXPECT_EQ(**g.GetStringArray("set.strs"), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(**g.GetIntArray("set.i32s"), (std::vector<int64_t>{-1, 2}));
  EXPECT_EQ(g.Find("set.f32s")->floats, (std::vector<double>{0.5f, -0.1f}));
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, TypedGettersAreStrict) {
  GgufWriter w;
  w.SetInt32("n", 5);
  w.SetFloat32("x", 1.0f);
  w.SetStringArray("s", {"a"});
  const std::string path = TempPath("getters.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  auto n = (*f)->GetUint32("n");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(std::string(n.status().message()), HasSubstr("key 'n' has type INT32, expected UINT32"));
  EXPECT_THAT(std::string(n.status().message()), HasSubstr(path));
  EXPECT_EQ((*f)->GetUint32("absent").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE((*f)->GetString("x").ok());
  EXPECT_FALSE((*f)->GetIntArray("s").ok());
  EXPECT_THAT(std::string((*f)->GetIntArray("s").status().message()), HasSubstr("ARRAY[STRING]"));
  std::remove(path.c_str());
}

struct TensorCase {
  std::string name;
  GgmlType type;
  std::vector<int64_t> ne;
  uint32_t n_dims;  // expected on disk
  uint64_t nbytes;  // computed by hand from the block tables
};

void CheckTensorLayout(uint32_t alignment) {
  const std::vector<TensorCase> cases = {
      {"f32", GgmlType::kF32, {4, 3}, 2, 48},
      {"q4k", GgmlType::kQ4_K, {256, 1, 1, 1}, 1, 144},
      {"f16", GgmlType::kF16, {3, 1, 2}, 3, 12},
      {"q6k.4d", GgmlType::kQ6_K, {512, 1, 1, 2}, 4, 840},
      {"i8", GgmlType::kI8, {5, 1}, 1, 5},
      {"q8_0", GgmlType::kQ8_0, {64, 2}, 2, 136},
      {"empty", GgmlType::kF32, {0}, 1, 0},
      {"bf16", GgmlType::kBF16, {7}, 1, 14},
  };
  GgufWriter w(alignment);
  w.SetString("general.architecture", "test");
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    ASSERT_TRUE(w.AddTensor(c.name, c.type, c.ne, Pattern(c.nbytes, static_cast<uint8_t>(i))).ok());
  }
  const std::string path = TempPath("layout.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(g.alignment(), alignment);
  EXPECT_EQ(g.data_offset() % alignment, 0u);
  const std::vector<uint8_t> file = ReadFileBytes(path);
  ASSERT_EQ(g.tensors().size(), cases.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const TensorInfo& t = g.tensors()[i];
    SCOPED_TRACE(c.name);
    EXPECT_EQ(t.name, c.name);
    EXPECT_EQ(t.type, c.type);
    EXPECT_EQ(t.n_dims, c.n_dims);
    for (size_t d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], d < c.ne.size() ? c.ne[d] : 1);
    EXPECT_EQ(t.nbytes, c.nbytes);
    EXPECT_EQ(t.offset, offset);
    EXPECT_EQ(t.offset % alignment, 0u);
    auto data = g.TensorData(t);
    EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), Pattern(c.nbytes, static_cast<uint8_t>(i)));
    // Zero padding up to the next multiple of the alignment.
    const uint64_t padded = (c.nbytes + alignment - 1) / alignment * alignment;
    for (uint64_t b = c.nbytes; b < padded; ++b) {
      ASSERT_EQ(file[g.data_offset() + offset + b], 0) << "padding byte " << b;
    }
    offset += padded;
  }
  EXPECT_EQ(file.size(), g.data_offset() + offset);  // the last tensor is padded too
  EXPECT_EQ(g.FindTensor("q8_0"), &g.tensors()[5]);
  EXPECT_EQ(g.FindTensor("nope"), nullptr);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, TensorLayoutDefaultAlignment) { CheckTensorLayout(32); }

TEST(GgufRoundTrip, TensorLayoutAlignment64AddsTheKey) {
  CheckTensorLayout(64);
  GgufWriter w(64);
  ASSERT_TRUE(w.AddTensor("t", GgmlType::kF32, {1}, Pattern(4, 0)).ok());
  const std::string path = TempPath("a64.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->GetUint32("general.alignment"), 64u);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, FillersStreamInInfoOrder) {
  std::vector<std::pair<std::string, uint64_t>> calls;
  auto filler = [&calls](std::string name, uint8_t value) {
    return [&calls, name, value](uint8_t* dst, uint64_t n) {
      calls.emplace_back(name, n);
      std::fill(dst, dst + n, value);
      return absl::OkStatus();
    };
  };
  GgufWriter w;
  ASSERT_TRUE(w.AddTensor("big", GgmlType::kF32, {1000}, filler("big", 0xAB)).ok());
  ASSERT_TRUE(w.AddTensor("small", GgmlType::kF16, {10}, filler("small", 0xCD)).ok());
  const std::string path = TempPath("stream.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  EXPECT_EQ(calls, (std::vector<std::pair<std::string, uint64_t>>{{"big", 4000}, {"small", 20}}));
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  auto small = (*f)->TensorData(*(*f)->FindTensor("small"));
  EXPECT_EQ(std::vector<uint8_t>(small.begin(), small.end()), std::vector<uint8_t>(20, 0xCD));
  std::remove(path.c_str());
}

// A failed Write leaves the destination as it was and no temporary file behind.
void ExpectFailedWriteKeepsOldFile(GgufWriter& w, const std::string& path, const std::string& what) {
  { std::ofstream(path) << "old contents"; }
  absl::Status s = w.Write(path);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(what));
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  const std::vector<uint8_t> now = ReadFileBytes(path);
  EXPECT_EQ(std::string(now.begin(), now.end()), "old contents");
  EXPECT_FALSE(Exists(path + ".tmp"));
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, FailedWritesLoseNothing) {
  GgufWriter dup;
  dup.SetUint32("k", 1);
  dup.SetString("k", "again");
  ExpectFailedWriteKeepsOldFile(dup, TempPath("dup.gguf"), "key 'k': duplicate key");

  GgufWriter failing_fill;
  ASSERT_TRUE(failing_fill.AddTensor("a", GgmlType::kF32, {4}, Pattern(16, 0)).ok());
  ASSERT_TRUE(failing_fill.AddTensor("b", GgmlType::kF32, {4},
                                     [](uint8_t*, uint64_t) {
                                       return absl::DataLossError("source went away");
                                     }).ok());
  ExpectFailedWriteKeepsOldFile(failing_fill, TempPath("fill.gguf"),
                                "tensor 'b': source went away");

  GgufWriter out_of_range;
  Value v;
  v.type = ValueType::kUint8;
  v.scalar = uint64_t{300};
  out_of_range.SetValue("small", v);
  ExpectFailedWriteKeepsOldFile(out_of_range, TempPath("range.gguf"),
                                "key 'small': value 300 does not fit in UINT8");

  GgufWriter wrong_alignment(64);
  wrong_alignment.SetUint32("general.alignment", 32);
  ExpectFailedWriteKeepsOldFile(wrong_alignment, TempPath("align.gguf"), "general.alignment");

  GgufWriter nested;
  Value n;
  n.type = ValueType::kArray;
  n.array_type = ValueType::kArray;
  nested.SetValue("n", n);
  ExpectFailedWriteKeepsOldFile(nested, TempPath("nested.gguf"), "nested arrays");

  GgufWriter bad_alignment(48);
  ExpectFailedWriteKeepsOldFile(bad_alignment, TempPath("a48.gguf"), "not a power of two");
}

TEST(GgufRoundTrip, AddTensorValidates) {
  GgufWriter w;
  EXPECT_THAT(std::string(w.AddTensor(std::string(64, 'x'), GgmlType::kF32, {1}, Pattern(4, 0))
                              .message()),
              HasSubstr("limit is 63"));
  EXPECT_FALSE(w.AddTensor("q", GgmlType::kQ4_K, {128}, Pattern(72, 0)).ok());  // half a block
  EXPECT_FALSE(w.AddTensor("five", GgmlType::kF32, {1, 1, 1, 1, 1}, Pattern(4, 0)).ok());
  EXPECT_FALSE(w.AddTensor("none", GgmlType::kF32, {}, Pattern(4, 0)).ok());
  EXPECT_FALSE(w.AddTensor("neg", GgmlType::kF32, {-4}, Pattern(0, 0)).ok());
  EXPECT_THAT(std::string(w.AddTensor("short", GgmlType::kF32, {4}, Pattern(15, 0)).message()),
              HasSubstr("15 bytes given but its shape needs 16"));
  ASSERT_TRUE(w.AddTensor("ok", GgmlType::kF32, {4}, Pattern(16, 0)).ok());
  EXPECT_THAT(std::string(w.AddTensor("ok", GgmlType::kF32, {4}, Pattern(16, 0)).message()),
              HasSubstr("duplicate"));
}

}  // namespace
}  // namespace jllm::gguf
