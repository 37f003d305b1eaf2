// The safetensors reader: values of every converted dtype (expected bit patterns worked out by
// hand), and malformed files: each is refused with a message naming the file and what is wrong,
// never a crash; every truncation of a valid file is refused.
#include "frontends/gguf/safetensors_file.h"

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/safetensors_builder.h"
#include "tests/support/temp_files.h"

namespace jllm::gguf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::BuildSafetensors;
using testing::F32Bytes;
using testing::RawSafetensors;
using testing::StEntry;
using testing::U16Bytes;

std::vector<uint8_t> ThreeDTypes() {
  return BuildSafetensors(
      {
          {"w.f32", "F32", {2, 3}, F32Bytes({1.0f, -2.0f, 0.5f, 3.25f, -0.125f, 100.0f})},
          // IEEE half: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800, 65504 (largest) = 0x7BFF.
          {"w.f16", "F16", {4}, U16Bytes({0x3C00, 0xC000, 0x3800, 0x7BFF})},
          // bfloat16 is the top half of an f32: 1.0 = 0x3F80, 3.140625 = 0x4049, -0.5 = 0xBF00.
          {"w.bf16", "BF16", {3, 1}, U16Bytes({0x3F80, 0x4049, 0xBF00})},
      },
      {{"format", "pt"}});
}

std::vector<float> ReadAll(const SafetensorsFile& f, const std::string& name) {
  const SafetensorsTensor* t = f.Find(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> v(static_cast<size_t>(t->n_elements()));
  absl::Status s = f.ReadF32(*t, 0, t->n_elements(), v.data());
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

TEST(SafetensorsTest, ReadsF32F16AndBf16) {
  auto f = SafetensorsFile::OpenBuffer("three.safetensors", ThreeDTypes());
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->metadata().at("format"), "pt");

  const SafetensorsTensor* w = (*f)->Find("w.f32");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, SafetensorsDType::kF32);
  EXPECT_THAT(w->shape, ElementsAre(2, 3));
  EXPECT_EQ(w->n_elements(), 6);
  EXPECT_EQ(w->end - w->begin, 24u);
  EXPECT_EQ((*f)->Find("w.missing"), nullptr);

  EXPECT_THAT(ReadAll(**f, "w.f32"), ElementsAre(1.0f, -2.0f, 0.5f, 3.25f, -0.125f, 100.0f));
  EXPECT_THAT(ReadAll(**f, "w.f16"), ElementsAre(1.0f, -2.0f, 0.5f, 65504.0f));
  EXPECT_THAT(ReadAll(**f, "w.bf16"), ElementsAre(1.0f, 3.140625f, -0.5f));

  // A sub-range, and a range past the end.
  float two[2];
  ASSERT_TRUE((*f)->ReadF32(*w, 4, 2, two).ok());
  EXPECT_THAT(two, ElementsAre(-0.125f, 100.0f));
  absl::Status past = (*f)->ReadF32(*w, 5, 2, two);
  EXPECT_FALSE(past.ok());
  EXPECT_THAT(std::string(past.message()), HasSubstr("w.f32"));
}

TEST(SafetensorsTest, OpensFromDiskAndNamesMissingFiles) {
  const std::string path = ::jllm::testing::TempPath("three.safetensors");
  testing::WriteBytes(path, ThreeDTypes());
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(ReadAll(**f, "w.bf16"), ElementsAre(1.0f, 3.140625f, -0.5f));
  EXPECT_EQ((*f)->data_offset() % 8, 0u);  // the builder pads the header like the library

  auto missing = SafetensorsFile::Open(::testing::TempDir() + "/st_no_such.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("st_no_such.safetensors"));
  std::filesystem::remove(path);  // (the mapping stays valid until f goes)
}

TEST(SafetensorsTest, ScalarsEmptyTensorsAndOtherDTypes) {
  auto f = SafetensorsFile::OpenBuffer(
      "mixed", BuildSafetensors({
                   {"scalar", "F32", {}, F32Bytes({7.5f})},
                   {"empty", "F16", {0, 4}, {}},
                   {"ids", "I64", {2}, std::vector<uint8_t>(16, 0)},
               }));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(ReadAll(**f, "scalar"), ElementsAre(7.5f));
  EXPECT_EQ((*f)->Find("empty")->n_elements(), 0);
  // I64 is parsed and bounds-checked, but not converted.
  const SafetensorsTensor* ids = (*f)->Find("ids");
  ASSERT_NE(ids, nullptr);
  float out[2];
  absl::Status s = (*f)->ReadF32(*ids, 0, 2, out);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("I64"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("'ids'"));
}

struct BadCase {
  const char* what;
  std::vector<uint8_t> bytes;
  const char* expect;  // substring of the message
};

std::vector<uint8_t> Header(const std::string& json, size_t data_bytes) {
  return RawSafetensors(json, std::vector<uint8_t>(data_bytes, 0));
}

TEST(SafetensorsTest, RefusesMalformedFiles) {
  const std::vector<BadCase> cases = {
      {"short", {1, 2, 3, 4}, "too short"},
      {"length past end", RawSafetensors("{}", {}, 1000), "exceeds"},
      {"huge length", RawSafetensors("{}", {}, uint64_t{1} << 63), "exceeds"},
      {"not an object", Header("[1, 2]", 0), "start with '{'"},
      {"not json", Header("{\"a\": ", 0), "not valid JSON"},
      {"unknown dtype", Header(R"({"t": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}})", 1),
       "unknown dtype 'Q4'"},
      {"no dtype", Header(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", 4), "dtype"},
      {"no shape", Header(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", 4), "shape"},
      {"negative dim", Header(R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4),
       "non-negative integer"},
      {"fractional dim", Header(R"({"t": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4),
       "non-negative integer"},
      {"overflowing shape",
       Header(R"({"t": {"dtype": "F32", "shape": [4611686018427387904, 4611686018427387904], "data_offsets": [0, 4]}})", 4),
       "more bytes"},
      {"offsets not a pair", Header(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
       "data_offsets"},
      {"backwards", Header(R"({"t": {"dtype": "F32", "shape": [0], "data_offsets": [4, 0]}})", 4), "backwards"},
      {"past data", Header(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 4), "past the end"},
      {"shape larger than the data", Header(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4),
       "more bytes"},
      {"size mismatch", Header(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", 16), "needs 12"},
      {"overlap",
       Header(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                  "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 12),
       "overlap"},
      {"hole",
       Header(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                  "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12),
       "belong to no tensor"},
      {"trailing bytes", Header(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 8),
       "cover 4"},
      {"duplicate",
       Header(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                  "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
       "twice"},
      {"deep nesting", Header("{\"a\": [[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]}", 0), "nests deeper"},
      {"metadata not strings", Header(R"({"__metadata__": {"k": 1}})", 0), "__metadata__"},
      {"entry not an object", Header(R"({"t": 5})", 0), "not an object"},
  };
  for (const BadCase& c : cases) {
    auto f = SafetensorsFile::OpenBuffer("bad.safetensors", c.bytes);
    ASSERT_FALSE(f.ok()) << c.what;
    const std::string message(f.status().message());
    EXPECT_THAT(message, HasSubstr("bad.safetensors")) << c.what;
    EXPECT_THAT(message, HasSubstr(c.expect)) << c.what;
  }
}

TEST(SafetensorsTest, EveryTruncationIsRefused) {
  const std::vector<uint8_t> full = ThreeDTypes();
  ASSERT_TRUE(SafetensorsFile::OpenBuffer("full", full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = SafetensorsFile::OpenBuffer("cut.safetensors", std::move(cut));
    ASSERT_FALSE(f.ok()) << "accepted a file truncated to " << n << " bytes";
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("cut.safetensors"));
  }
}

// Random byte changes in the header and length field: whatever the outcome, no crash, and an
// accepted file's tensors all lie inside it (AddressSanitizer builds check the reads).
TEST(SafetensorsTest, SurvivesRandomCorruption) {
  const std::vector<uint8_t> full = ThreeDTypes();
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) {
      const size_t at = rng() % std::min<size_t>(bytes.size(), 200);
      bytes[at] = static_cast<uint8_t>(rng());
    }
    auto f = SafetensorsFile::OpenBuffer("fuzz", std::move(bytes));
    if (!f.ok()) continue;
    for (const SafetensorsTensor& t : (*f)->tensors()) {
      EXPECT_LE((*f)->data_offset() + t.end, (*f)->file_size());
      std::vector<float> v(static_cast<size_t>(t.n_elements()));
      (void)(*f)->ReadF32(t, 0, t.n_elements(), v.data());
    }
  }
}

}  // namespace
}  // namespace jllm::gguf
