#include "passes/fuse_qknorm_rope.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/attention_layer_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;

constexpr char kChainOfTiny[] =
    "%blk.0.q_normed: f32[T,8] = head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=2 "
    "head_dim=4 eps=1e-06\n"
    "%blk.0.k_normed: f32[T,4] = head_rms_norm(%blk.0.k; @blk.0.attn_k_norm.weight) n_head=1 "
    "head_dim=4 eps=1e-06\n"
    "%blk.0.q_rope: f32[T,8] = rope(%blk.0.q_normed, %pos) n_head=2 head_dim=4 n_rot=4 "
    "freq_base=10000 freq_scale=1\n"
    "%blk.0.k_rope: f32[T,4] = rope(%blk.0.k_normed, %pos) n_head=1 head_dim=4 n_rot=4 "
    "freq_base=10000 freq_scale=1\n"
    "%blk.0.kv: f16[2,S,4] = kv_append(%blk.0.k_rope, %blk.0.v, %pos) layer=0 n_head_kv=1 "
    "head_dim=4\n";
constexpr char kFusedOfTiny[] =
    "%blk.0.q_rope: f32[T,8], %blk.0.kv: f16[2,S,4] = qk_norm_rope_kv_append(%blk.0.q, %blk.0.k, "
    "%blk.0.v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 n_head=2 "
    "n_head_kv=1 head_dim=4 eps=1e-06 n_rot=4 freq_base=10000 freq_scale=1\n";

TEST(FuseQkNormRopeTest, FusesTheChainOfALayer) {
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, kTinyModelIr);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kChainOfTiny, kFusedOfTiny}}));
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "fused 1 layers");
}

TEST(FuseQkNormRopeTest, KeepsTheRopeParameters) {
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, testing::kAttentionLayerIr);
  EXPECT_NE(ran.ir.find("%q_rope: f32[T,256], %kv: f16[2,S,128] = qk_norm_rope_kv_append(%q, %k, "
                        "%v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 "
                        "n_head=2 n_head_kv=1 head_dim=128 eps=1e-06 n_rot=128 freq_base=1e+06 "
                        "freq_scale=1\n"),
            std::string::npos)
      << ran.ir;
}

TEST(FuseQkNormRopeTest, IntermediateWithAnotherReaderBlocksTheFusion) {
  const std::string text =
      Edit(kTinyModelIr, {{"output %logits, %token", "output %logits, %token, %blk.0.k_normed"}});
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, text);
  EXPECT_EQ(ran.ir, text);
  EXPECT_FALSE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "no q/k norm + rope + kv append chain to fuse (1 kv appends did "
                               "not match)");
}

TEST(FuseQkNormRopeTest, DifferentEpsilonsBlockTheFusion) {
  const std::string text = Edit(kTinyModelIr, {{"n_head=1 head_dim=4 eps=1e-06", "n_head=1 head_dim=4 eps=1e-05"}});
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, text);
  EXPECT_EQ(ran.ir, text);
  EXPECT_FALSE(ran.result.changed);
}

TEST(FuseQkNormRopeTest, QRopeWithMoreReadersStillFuses) {
  // q_rope remains an output of the fused node, so extra readers are fine.
  const std::string text =
      Edit(kTinyModelIr, {{"output %logits, %token", "output %logits, %token, %blk.0.q_rope"}});
  const testing::Ran ran = testing::RunPass(RunFuseQkNormRope, text);
  EXPECT_EQ(ran.ir, Edit(text, {{kChainOfTiny, kFusedOfTiny}}));
}

TEST(FuseQkNormRopeTest, PassOffLeavesTheGraphUnchanged) {
  EXPECT_EQ(testing::RunOnly("fuse-qknorm-rope", false, kTinyModelIr), kTinyModelIr);
  EXPECT_EQ(testing::RunOnly("fuse-qknorm-rope", true, kTinyModelIr),
            Edit(kTinyModelIr, {{kChainOfTiny, kFusedOfTiny}}));
}

}  // namespace
}  // namespace jllm::passes
