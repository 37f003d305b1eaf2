#include "passes/kv_dtype.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;
using ::testing::HasSubstr;

PassOptions Options(std::string_view yaml) {
  auto o = PassOptions::FromYaml(yaml, "kv-dtype");
  EXPECT_TRUE(o.ok()) << o.status();
  return *o;
}

std::string Int8Tiny() {
  return Edit(kTinyModelIr, {{"kv_cache f16", "kv_cache int8"},
                             {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: i8[2,S,8]"}});
}

TEST(KvDTypeTest, DefaultF16ChangesNothing) {
  EXPECT_EQ(testing::ExpectNoChange(RunKvDType, kTinyModelIr).result.report,
            "kv cache f16 in all 1 layers");
}

TEST(KvDTypeTest, Int8RetypesTheCache) {
  const testing::Ran ran = testing::RunPass(RunKvDType, kTinyModelIr, Options("dtype: int8"));
  EXPECT_EQ(ran.ir, Int8Tiny());
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "kv cache int8 in all 1 layers");
  testing::ExpectAttributesMatchConfig(ran.ir);
  // And back.
  EXPECT_EQ(testing::RunPass(RunKvDType, Int8Tiny(), Options("dtype: f16")).ir, kTinyModelIr);
}

std::string F32Tiny() {
  return Edit(kTinyModelIr, {{"kv_cache f16", "kv_cache f32"},
                             {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: f32[2,S,8]"}});
}

TEST(KvDTypeTest, F32RetypesTheCache) {
  const testing::Ran ran = testing::RunPass(RunKvDType, kTinyModelIr, Options("dtype: f32"));
  EXPECT_EQ(ran.ir, F32Tiny());
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "kv cache f32 in all 1 layers");
  // Per layer too, and back to f16.
  EXPECT_EQ(testing::RunPass(RunKvDType, kTinyModelIr, Options("layers: {0: f32}")).ir, F32Tiny());
  EXPECT_EQ(testing::RunPass(RunKvDType, F32Tiny(), Options("dtype: f16")).ir, kTinyModelIr);
}

TEST(KvDTypeTest, AutoNeverPicksF32) {
  // A budget far above even the f32 size (64 bytes per token here) still gets f16.
  const testing::Ran ran = testing::RunPass(
      RunKvDType, kTinyModelIr, Options("{dtype: auto, memory_budget_mib: 1024, context_length: 64}"));
  EXPECT_EQ(ran.ir, kTinyModelIr);
}

TEST(KvDTypeTest, Int8AlsoRetypesTheFusedNode) {
  const std::string fused = jllm::testing::TinyModelFusedIr();
  const testing::Ran ran = testing::RunPass(RunKvDType, fused, Options("dtype: int8"));
  EXPECT_EQ(ran.ir, Edit(fused, {{"kv_cache f16", "kv_cache int8"},
                                 {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: i8[2,S,8]"}}));
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(KvDTypeTest, PerLayerOverride) {
  testing::ExpectNoChange(RunKvDType, kTinyModelIr, Options("{dtype: int8, layers: {0: f16}}"));
  const testing::Ran bad = testing::RunPass(RunKvDType, kTinyModelIr, Options("layers: {3: int8}"));
  EXPECT_THAT(bad.ir, HasSubstr("layer 3 does not exist (the model has 1 layers)"));
}

// The tiny model's cache: 2 (K, V) × Hkv 1 × D 8 × 2 bytes = 32 bytes per token in f16, so a
// 1 MiB budget holds exactly 32768 tokens (int8: 2 × (8 + 2) = 20 bytes per token).
TEST(KvDTypeTest, AutoDecidesFromContextAndBudget) {
  const testing::Ran fits = testing::RunPass(
      RunKvDType, kTinyModelIr, Options("{dtype: auto, memory_budget_mib: 1, context_length: 32768}"));
  EXPECT_EQ(fits.ir, kTinyModelIr);
  EXPECT_EQ(fits.result.report,
            "kv cache f16 in all 1 layers (auto: 32768 tokens take 1.0 MiB in f16, 0.6 MiB in "
            "int8; budget 1 MiB)");
  const testing::Ran over = testing::RunPass(
      RunKvDType, kTinyModelIr, Options("{dtype: auto, memory_budget_mib: 1, context_length: 32769}"));
  EXPECT_EQ(over.ir, Int8Tiny());
  // Without context_length there is no context to plan for: an error, not the model's maximum.
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("{dtype: auto, memory_budget_mib: 1}"))
                              .status()
                              .message()),
              HasSubstr("auto needs the option context_length"));
}

// Not even int8 fits: the tiny model's int8 cache takes 2 (K, V) × (4 values + a 2-byte scale)
// = 12 bytes per token, so 1 MiB holds 1048576 / 12 = 87381 tokens; 200000 is refused, naming
// the budget and what would fit, instead of silently picking a cache over the budget.
TEST(KvDTypeTest, AutoRefusesACacheOverTheBudget) {
  const testing::Ran over = testing::RunPass(
      RunKvDType, kTinyModelIr, Options("{dtype: auto, memory_budget_mib: 1, context_length: 200000}"));
  EXPECT_THAT(over.ir, HasSubstr("option 'memory_budget_mib'"));
  EXPECT_THAT(over.ir, HasSubstr("cannot hold a KV cache of context_length 200000 tokens even in int8"));
  // The tiny layer's int8 cache: 1 layer x (K, V) x 1 KV head x (8 codes + a 2-byte scale)
  // = 20 bytes a position, so 1 MiB holds 1048576 / 20 = 52428 positions.
  EXPECT_THAT(over.ir, HasSubstr("at most 52428"));
}

TEST(KvDTypeTest, CacheSizesMatchDesignNumbers) {
  // Qwen3-4B: 36 layers, Hkv 8, D 128: 144 KiB per token in f16 (DESIGN.md).
  ir::ModelConfig c{"qwen3", 2560, 36, 32, 8, 128, 9728, 151936, 40960, 1e6f, 1.0f, 1e-6f, true};
  EXPECT_EQ(KvCacheBytes(c, ir::KvDType::kF16, 1), 144 * 1024);
  // int8: 130 bytes per (position, head) row instead of 256.
  EXPECT_EQ(KvCacheBytes(c, ir::KvDType::kInt8, 1), 36 * 2 * 8 * 130);
  // f32: 4 bytes a value, twice f16.
  EXPECT_EQ(KvCacheBytes(c, ir::KvDType::kF32, 1), 36 * 2 * 8 * 128 * 4);
}

TEST(KvDTypeTest, BadOptionsAreNamed) {
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("dtype: fp8")).status().message()),
              HasSubstr("pass 'kv-dtype': option 'dtype': 'fp8' is not one of f16, int8, f32, auto"));
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("dtype: auto")).status().message()),
              HasSubstr("auto needs the option memory_budget_mib"));
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("memory_budget_mib: lots")).status().message()),
              HasSubstr("option 'memory_budget_mib': 'lots' is not an integer"));
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("layers: {x: int8}")).status().message()),
              HasSubstr("option 'layers': 'x' is not a layer index"));
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("layers: {0: bf16}")).status().message()),
              HasSubstr("layer 0: 'bf16' is not one of f16, int8, f32"));
  EXPECT_THAT(std::string(ParseKvDTypeOptions(Options("layers: int8")).status().message()),
              HasSubstr("expected a map"));
}

}  // namespace
}  // namespace jllm::passes
