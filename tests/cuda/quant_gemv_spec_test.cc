// QuantGemvSpec: which shapes and configs are accepted, and the numbers the launch depends on.
#include "backends/cuda/quant_gemv.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

using ::testing::HasSubstr;

TEST(QuantGemvSpec, RejectsUnsupportedTypesAndShapes) {
  EXPECT_EQ(QuantGemvSpec::Make(GgmlType::kQ8_0, 64, 256).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(QuantGemvSpec::Make(GgmlType::kQ4_K, 64, 300).ok());  // not whole blocks
  EXPECT_FALSE(QuantGemvSpec::Make(GgmlType::kQ4_K, 0, 256).ok());
  // Q6_K rows of an odd number of 210-byte blocks are not 4-byte aligned.
  auto odd = QuantGemvSpec::Make(GgmlType::kQ6_K, 64, 768);
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(std::string(odd.status().message()), HasSubstr("even number of blocks"));
}

TEST(QuantGemvSpec, RejectsConfigsThatCannotLaunch) {
  QuantGemvConfig config;
  config.row_groups = 8;
  config.k_split = 8;  // 2048 threads
  EXPECT_FALSE(QuantGemvSpec::Make(GgmlType::kQ4_K, 64, 2560, config).ok());
  config = QuantGemvConfig();
  config.rows_per_warp = 1;
  config.row_groups = 2;  // Q6_K tile of 2 rows of 2100 bytes: not 16-byte aligned
  EXPECT_FALSE(QuantGemvSpec::Make(GgmlType::kQ6_K, 64, 2560, config).ok());
}

TEST(QuantGemvSpec, WeightBytesAndSharedMemory) {
  auto q4 = QuantGemvSpec::Make(GgmlType::kQ4_K, 9728, 2560);
  ASSERT_TRUE(q4.ok());
  EXPECT_EQ(q4->WeightBytes(), 9728LL * 10 * 144);
  EXPECT_EQ(q4->DynamicSharedBytes(), 0);

  QuantGemvConfig config;
  config.rows_per_warp = 2;
  config.row_groups = 2;
  config.k_split = 5;
  config.stages = 3;
  auto q6 = QuantGemvSpec::Make(GgmlType::kQ6_K, 2560, 9728, config);
  ASSERT_TRUE(q6.ok()) << q6.status();
  EXPECT_EQ(q6->WeightBytes(), 2560LL * 38 * 210);
  EXPECT_EQ(q6->Threads(), 320);
  EXPECT_EQ(q6->TileRows(), 4);
  // x slots (8 float4 per 32-weight unit) + 20 partial sums + 3 stages of 4 rows.
  EXPECT_EQ(q6->DynamicSharedBytes(), 8 * 304 * 16 + 80 + 3 * 4 * 7980);
}

TEST(QuantGemvConfig, ParsesAndPrints) {
  auto config = QuantGemvConfig::Parse("R=2, NRG=8,KS=3,STAGES=2,MINB=2");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->rows_per_warp, 2);
  EXPECT_EQ(config->row_groups, 8);
  EXPECT_EQ(config->k_split, 3);
  EXPECT_EQ(config->stages, 2);
  EXPECT_EQ(config->min_blocks, 2);
  EXPECT_EQ(config->ToString(), "R=2,NRG=8,KS=3,STAGES=2,MINB=2");
  EXPECT_FALSE(QuantGemvConfig::Parse("R=x").ok());
  auto unknown = QuantGemvConfig::Parse("WARPS=4");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("WARPS"));
}

}  // namespace
}  // namespace jllm::cuda
