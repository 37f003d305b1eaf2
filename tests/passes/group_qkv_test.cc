#include "passes/group_qkv.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/attention_layer_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;
using testing::kAttentionLayerIr;
using testing::MatchesCheckLines;

constexpr char kQkvOfTiny[] =
    "%blk.0.q: f32[T,16] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)\n"
    "%blk.0.k: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_k.weight)\n"
    "%blk.0.v: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_v.weight)\n";
constexpr char kGroupedQkvOfTiny[] =
    "%blk.0.q: f32[T,16], %blk.0.k: f32[T,8], %blk.0.v: f32[T,8] = matmul_group(%blk.0.attn_in; "
    "@blk.0.attn_q.weight, @blk.0.attn_k.weight, @blk.0.attn_v.weight)\n";

TEST(GroupQkvTest, GroupsTheThreeProjections) {
  const testing::Ran ran = testing::RunPass(RunGroupQkv, kTinyModelIr);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kQkvOfTiny, kGroupedQkvOfTiny}}));
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "grouped 1 q/k/v triples (f32+f32+f32 x1)");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(GroupQkvTest, GroupsDifferingQuantTypes) {
  const testing::Ran ran = testing::RunPass(RunGroupQkv, kAttentionLayerIr);
  EXPECT_EQ(ran.ir, Edit(kAttentionLayerIr,
                         {{"%q: f32[T,256] = matmul(%x; @blk.0.attn_q.weight)\n"
                           "%k: f32[T,128] = matmul(%x; @blk.0.attn_k.weight)\n"
                           "%v: f32[T,128] = matmul(%x; @blk.0.attn_v.weight)\n",
                           "%q: f32[T,256], %k: f32[T,128], %v: f32[T,128] = matmul_group(%x; "
                           "@blk.0.attn_q.weight, @blk.0.attn_k.weight, @blk.0.attn_v.weight)\n"}}));
  EXPECT_EQ(ran.result.report, "grouped 1 q/k/v triples (q4_K+q4_K+q6_K x1)");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(GroupQkvTest, FindsTheProjectionsThroughTheFusedQkNode) {
  const std::string fused = Edit(
      kAttentionLayerIr,
      {{"%q_normed: f32[T,256] = head_rms_norm(%q; @blk.0.attn_q_norm.weight) n_head=2 "
        "head_dim=128 eps=1e-05\n"
        "%k_normed: f32[T,128] = head_rms_norm(%k; @blk.0.attn_k_norm.weight) n_head=1 "
        "head_dim=128 eps=1e-05\n"
        "%q_rope: f32[T,256] = rope(%q_normed, %pos) n_head=2 head_dim=128 n_rot=128 "
        "freq_base=1e+06 freq_scale=0.5\n"
        "%k_rope: f32[T,128] = rope(%k_normed, %pos) n_head=1 head_dim=128 n_rot=128 "
        "freq_base=1e+06 freq_scale=0.5\n"
        "%kv: f16[2,S,128] = kv_append(%k_rope, %v, %pos) layer=0 n_head_kv=1 head_dim=128\n",
        "%q_rope: f32[T,256], %kv: f16[2,S,128] = qk_norm_rope_kv_append(%q, %k, %v, %pos; "
        "@blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 n_head=2 n_head_kv=1 "
        "head_dim=128 eps=1e-05 n_rot=128 freq_base=1e+06 freq_scale=0.5\n"}});
  const testing::Ran ran = testing::RunPass(RunGroupQkv, fused);
  EXPECT_TRUE(ran.result.changed);
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK:      %q: f32[T,256], %k: f32[T,128], %v: f32[T,128] = matmul_group(%x;
    CHECK-NEXT: = qk_norm_rope_kv_append(%q, %k, %v, %pos;
    CHECK-NOT:  = matmul(
  )"));
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(GroupQkvTest, ProjectionsOfDifferentInputsStayApart) {
  const std::string text = Edit(kAttentionLayerIr,
                                {{"input %x: f32[T,512]\n", "input %x: f32[T,512]\ninput %y: f32[T,512]\n"},
                                 {"%v: f32[T,128] = matmul(%x;", "%v: f32[T,128] = matmul(%y;"}});
  EXPECT_EQ(testing::ExpectNoChange(RunGroupQkv, text).result.report,
            "no q/k/v projections to group");
}

}  // namespace
}  // namespace jllm::passes
