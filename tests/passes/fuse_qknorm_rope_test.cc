#include "passes/fuse_qknorm_rope.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/attention_layer_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;
using testing::MatchesCheckLines;

constexpr char kChainOfTiny[] =
    "%blk.0.q_normed: f32[T,16] = head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=2 "
    "head_dim=8 eps=1e-05\n"
    "%blk.0.k_normed: f32[T,8] = head_rms_norm(%blk.0.k; @blk.0.attn_k_norm.weight) n_head=1 "
    "head_dim=8 eps=1e-05\n"
    "%blk.0.q_rope: f32[T,16] = rope(%blk.0.q_normed, %pos) n_head=2 head_dim=8 n_rot=8 "
    "freq_base=1e+06 freq_scale=0.5\n"
    "%blk.0.k_rope: f32[T,8] = rope(%blk.0.k_normed, %pos) n_head=1 head_dim=8 n_rot=8 "
    "freq_base=1e+06 freq_scale=0.5\n"
    "%blk.0.kv: f16[2,S,8] = kv_append(%blk.0.k_rope, %blk.0.v, %pos) layer=0 n_head_kv=1 "
    "head_dim=8\n";
// The model's eps, RoPE base and freq_scale, and head_dim 8 (not E/H = 4), carried over.
constexpr char kFusedOfTiny[] =
    "%blk.0.q_rope: f32[T,16], %blk.0.kv: f16[2,S,8] = qk_norm_rope_kv_append(%blk.0.q, "
    "%blk.0.k, %blk.0.v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 "
    "n_head=2 n_head_kv=1 head_dim=8 eps=1e-05 n_rot=8 freq_base=1e+06 freq_scale=0.5\n";

TEST(FuseQkNormRopeTest, FusesTheChainOfALayer) {
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, kTinyModelIr);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kChainOfTiny, kFusedOfTiny}}));
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "fused 1 layers");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(FuseQkNormRopeTest, KeepsTheRopeParameters) {
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, testing::kAttentionLayerIr);
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK:      %v: f32[T,128] = matmul(
    CHECK-NEXT: %q_rope: f32[T,256], %kv: f16[2,S,128] = qk_norm_rope_kv_append(%q, %k, %v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 n_head=2 n_head_kv=1 head_dim=128 eps=1e-05 n_rot=128 freq_base=1e+06 freq_scale=0.5
    CHECK-NEXT: %attn: f32[T,256] = attention(%q_rope, %kv, %pos) layer=0 n_head=2 n_head_kv=1 head_dim=128 scale=0.088388346
    CHECK-NOT:  rope(
  )"));
  testing::ExpectAttributesMatchConfig(ran.ir);
}

// The fused node takes the values of the nodes it replaces, not the model config's: a graph
// whose nodes differ from its config line keeps the nodes' values.
TEST(FuseQkNormRopeTest, TakesTheValuesOfTheFusedNodes) {
  const std::string text =
      Edit(kTinyModelIr, {{"n_head=2 head_dim=8 eps=1e-05", "n_head=2 head_dim=8 eps=0.001"},
                          {"n_head=1 head_dim=8 eps=1e-05", "n_head=1 head_dim=8 eps=0.001"},
                          {"n_head=2 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=0.5",
                           "n_head=2 head_dim=8 n_rot=8 freq_base=5e+05 freq_scale=0.25"},
                          {"n_head=1 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=0.5",
                           "n_head=1 head_dim=8 n_rot=8 freq_base=5e+05 freq_scale=0.25"}});
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, text);
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK: = qk_norm_rope_kv_append(%blk.0.q, %blk.0.k, %blk.0.v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 n_head=2 n_head_kv=1 head_dim=8 eps=0.001 n_rot=8 freq_base=5e+05 freq_scale=0.25
  )"));
}

TEST(FuseQkNormRopeTest, IntermediateWithAnotherReaderBlocksTheFusion) {
  const std::string text =
      Edit(kTinyModelIr, {{"output %logits, %token", "output %logits, %token, %blk.0.k_normed"}});
  EXPECT_EQ(testing::ExpectNoChange(RunFuseQkNormRope, text).result.report,
            "no q/k norm + rope + kv append chain to fuse (1 kv appends did not match)");
}

TEST(FuseQkNormRopeTest, DifferentEpsilonsBlockTheFusion) {
  testing::ExpectNoChange(
      RunFuseQkNormRope,
      Edit(kTinyModelIr, {{"n_head=1 head_dim=8 eps=1e-05", "n_head=1 head_dim=8 eps=1e-06"}}));
}

TEST(FuseQkNormRopeTest, DifferentRopeParametersBlockTheFusion) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"n_head=1 head_dim=8 n_rot=8 freq_base=1e+06", "n_head=1 head_dim=8 n_rot=8 freq_base=10000"},
           {"n_head=1 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=0.5",
            "n_head=1 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=1"}}) {
    SCOPED_TRACE(to);
    testing::ExpectNoChange(RunFuseQkNormRope, Edit(kTinyModelIr, {{from, to}}));
  }
}

TEST(FuseQkNormRopeTest, QRopeWithMoreReadersStillFuses) {
  // q_rope remains an output of the fused node, so extra readers are fine.
  const std::string text =
      Edit(kTinyModelIr, {{"output %logits, %token", "output %logits, %token, %blk.0.q_rope"}});
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, text);
  EXPECT_EQ(ran.ir, Edit(text, {{kChainOfTiny, kFusedOfTiny}}));
}

}  // namespace
}  // namespace jllm::passes
