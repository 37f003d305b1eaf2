// The quant formats pinned to another implementation's bytes: ggml's own reference quantizers
// and dequantizers (tests/data/quant-golden/README.md) on 40 rows of ten value distributions.
// QuantizeRow must reproduce every byte ggml wrote, and DequantizeRow every bit of ggml's
// dequantization of those bytes. A single differing byte is a bug in quant/ (a rounding rule,
// a search parameter, a packing step); the message names the row's distribution and block.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "quant/quant.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_data.h"

namespace jllm::quant {
namespace {

std::string GoldenPath(const std::string& name) {
  return ::jllm::testing::RepoTestData("quant-golden/" + name);
}

struct Golden {
  int64_t rows = 0, row_values = 0;
  std::vector<std::string> kinds;  // per row
  std::vector<float> input;        // rows × row_values
};

// The manifest and input rows; fails the test (and returns false) if they are unreadable.
bool LoadGolden(Golden* g) {
  const std::string manifest_text = ::jllm::testing::ReadFile(GoldenPath("manifest.json"));
  const nlohmann::json m = nlohmann::json::parse(manifest_text, nullptr, false);
  EXPECT_FALSE(m.is_discarded()) << GoldenPath("manifest.json") << " is missing or not JSON";
  if (m.is_discarded()) return false;
  g->rows = m.at("rows").get<int64_t>();
  g->row_values = m.at("row_values").get<int64_t>();
  g->kinds = m.at("row_kinds").get<std::vector<std::string>>();
  EXPECT_EQ(g->rows, 40);
  EXPECT_EQ(static_cast<int64_t>(g->kinds.size()), g->rows);
  const std::string input = ::jllm::testing::ReadFile(GoldenPath("input.f32"));
  EXPECT_EQ(static_cast<int64_t>(input.size()), g->rows * g->row_values * 4) << "input.f32";
  if (static_cast<int64_t>(input.size()) != g->rows * g->row_values * 4) return false;
  g->input.resize(g->rows * g->row_values);
  std::memcpy(g->input.data(), input.data(), input.size());
  return true;
}

struct GoldenType {
  GgmlType type;
  const char* file;  // TYPE in TYPE.bin / TYPE.dequant.f32
};

// ggml recorded its dequantization for the block types; f16/bf16 → f32 is exact (half_test.cc).
constexpr GoldenType kBlockTypes[] = {{GgmlType::kQ8_0, "q8_0"},
                                      {GgmlType::kQ4_K, "q4_K"},
                                      {GgmlType::kQ5_K, "q5_K"},
                                      {GgmlType::kQ6_K, "q6_K"}};
constexpr GoldenType kHalfTypes[] = {{GgmlType::kF16, "f16"}, {GgmlType::kBF16, "bf16"}};

void PrintTo(const GoldenType& t, std::ostream* os) { *os << t.file; }
std::string TypeName(const ::testing::TestParamInfo<GoldenType>& info) { return info.param.file; }

class GgmlGoldenTest : public ::testing::TestWithParam<GoldenType> {};
using GgmlGoldenDequantTest = GgmlGoldenTest;

TEST_P(GgmlGoldenTest, QuantizeRowReproducesEveryByte) {
  const GoldenType& t = GetParam();
  Golden g;
  ASSERT_TRUE(LoadGolden(&g));
  const std::string want = ::jllm::testing::ReadFile(GoldenPath(std::string(t.file) + ".bin"));
  const int64_t row_bytes = RowBytes(t.type, g.row_values);
  ASSERT_EQ(static_cast<int64_t>(want.size()), g.rows * row_bytes) << t.file << ".bin";
  const int64_t block_bytes = TypeSize(t.type);
  int bad_rows = 0;
  for (int64_t r = 0; r < g.rows; ++r) {
    std::vector<uint8_t> got(row_bytes);
    ASSERT_TRUE(QuantizeRow(t.type, &g.input[r * g.row_values], got.data(), g.row_values).ok());
    const char* expected = want.data() + r * row_bytes;
    if (std::memcmp(got.data(), expected, row_bytes) == 0) continue;
    ++bad_rows;
    for (int64_t b = 0; b < row_bytes; ++b) {
      if (got[b] != static_cast<uint8_t>(expected[b])) {
        ADD_FAILURE() << t.file << " row " << r << " (" << g.kinds[r] << "): first differing byte "
                      << b % block_bytes << " of block " << b / block_bytes << ": jllm 0x"
                      << std::hex << int{got[b]} << ", ggml 0x"
                      << int{static_cast<uint8_t>(expected[b])};
        break;
      }
    }
  }
  EXPECT_EQ(bad_rows, 0) << "of " << g.rows << " rows";
}

TEST_P(GgmlGoldenDequantTest, DequantizeRowReproducesEveryBit) {
  const GoldenType& t = GetParam();
  Golden g;
  ASSERT_TRUE(LoadGolden(&g));
  const std::string bytes = ::jllm::testing::ReadFile(GoldenPath(std::string(t.file) + ".bin"));
  const std::string want = ::jllm::testing::ReadFile(GoldenPath(std::string(t.file) + ".dequant.f32"));
  const int64_t row_bytes = RowBytes(t.type, g.row_values);
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), g.rows * row_bytes);
  ASSERT_EQ(static_cast<int64_t>(want.size()), g.rows * g.row_values * 4);
  int bad_rows = 0;
  for (int64_t r = 0; r < g.rows; ++r) {
    std::vector<float> got(g.row_values);
    ASSERT_TRUE(DequantizeRow(t.type, bytes.data() + r * row_bytes, got.data(), g.row_values).ok());
    const char* expected = want.data() + r * g.row_values * 4;
    if (std::memcmp(got.data(), expected, got.size() * 4) == 0) continue;
    ++bad_rows;
    for (int64_t i = 0; i < g.row_values; ++i) {
      float e;
      std::memcpy(&e, expected + 4 * i, 4);
      if (std::memcmp(&got[i], &e, 4) != 0) {
        ADD_FAILURE() << t.file << " row " << r << " (" << g.kinds[r] << "): element " << i
                      << ": jllm " << got[i] << ", ggml " << e;
        break;
      }
    }
  }
  EXPECT_EQ(bad_rows, 0) << "of " << g.rows << " rows";
}

INSTANTIATE_TEST_SUITE_P(BlockTypes, GgmlGoldenTest, ::testing::ValuesIn(kBlockTypes), TypeName);
INSTANTIATE_TEST_SUITE_P(HalfTypes, GgmlGoldenTest, ::testing::ValuesIn(kHalfTypes), TypeName);
INSTANTIATE_TEST_SUITE_P(BlockTypes, GgmlGoldenDequantTest, ::testing::ValuesIn(kBlockTypes),
                         TypeName);

}  // namespace
}  // namespace jllm::quant
