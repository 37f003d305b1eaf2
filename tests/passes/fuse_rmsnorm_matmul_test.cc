#include "passes/fuse_rmsnorm_matmul.h"

#include <gtest/gtest.h>

#include "passes/group_qkv.h"
#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;
using testing::MatchesCheckLines;

// The tiny model after fuse-rmsnorm-matmul: both layer norms folded, with the model's eps
// (1e-5), the final norm kept.
std::string FusedTiny() {
  return Edit(
      kTinyModelIr,
      {{"%blk.0.attn_in: f32[T,8] = rms_norm(%embd; @blk.0.attn_norm.weight) eps=1e-05\n"
        "%blk.0.q: f32[T,16] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)\n"
        "%blk.0.k: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_k.weight)\n"
        "%blk.0.v: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_v.weight)\n",
        "%blk.0.q: f32[T,16] = matmul(%embd; @blk.0.attn_q.weight, @blk.0.attn_norm.weight) "
        "norm_eps=1e-05\n"
        "%blk.0.k: f32[T,8] = matmul(%embd; @blk.0.attn_k.weight, @blk.0.attn_norm.weight) "
        "norm_eps=1e-05\n"
        "%blk.0.v: f32[T,8] = matmul(%embd; @blk.0.attn_v.weight, @blk.0.attn_norm.weight) "
        "norm_eps=1e-05\n"},
       {"%blk.0.ffn_in: f32[T,8] = rms_norm(%blk.0.attn_res; @blk.0.ffn_norm.weight) eps=1e-05\n"
        "%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)\n"
        "%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)\n",
        "%blk.0.gate: f32[T,16] = matmul(%blk.0.attn_res; @blk.0.ffn_gate.weight, "
        "@blk.0.ffn_norm.weight) norm_eps=1e-05\n"
        "%blk.0.up: f32[T,16] = matmul(%blk.0.attn_res; @blk.0.ffn_up.weight, "
        "@blk.0.ffn_norm.weight) norm_eps=1e-05\n"}});
}

TEST(FuseRmsNormMatMulTest, FoldsNormsThatFeedOnlyProjections) {
  const testing::Ran ran = testing::RunPass(RunFuseRmsNormMatMul, kTinyModelIr);
  EXPECT_EQ(ran.ir, FusedTiny());
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report,
            "folded 2 rms_norms into 5 projections; 1 kept (they feed other ops)");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(FuseRmsNormMatMulTest, FoldsIntoAGroup) {
  auto g = ir::Parse(kTinyModelIr);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(RunGroupQkv(*g, PassOptions()).ok());
  const testing::Ran ran = testing::RunPass(RunFuseRmsNormMatMul, ir::Print(*g));
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK:      %embd: f32[T,8] = embed(
    CHECK-NEXT: %blk.0.q: f32[T,16], %blk.0.k: f32[T,8], %blk.0.v: f32[T,8] = matmul_group(%embd; @blk.0.attn_q.weight, @blk.0.attn_k.weight, @blk.0.attn_v.weight, @blk.0.attn_norm.weight) norm_eps=1e-05
    CHECK-NOT:  = rms_norm(
    CHECK:      = swiglu(
  )"));
  testing::ExpectAttributesMatchConfig(ran.ir);
}

// Each projection takes the eps of the norm it absorbs, not the model's or a default: two
// norms with two different values stay distinct.
TEST(FuseRmsNormMatMulTest, EachFoldKeepsItsOwnNormsEps) {
  const std::string text =
      Edit(kTinyModelIr, {{"@blk.0.ffn_norm.weight) eps=1e-05", "@blk.0.ffn_norm.weight) eps=0.001"}});
  const testing::Ran ran = testing::RunPass(RunFuseRmsNormMatMul, text);
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK: %blk.0.q: f32[T,16] = matmul(%embd; @blk.0.attn_q.weight, @blk.0.attn_norm.weight) norm_eps=1e-05
    CHECK: %blk.0.gate: f32[T,16] = matmul(%blk.0.attn_res; @blk.0.ffn_gate.weight, @blk.0.ffn_norm.weight) norm_eps=0.001
    CHECK: %blk.0.up: f32[T,16] = matmul(%blk.0.attn_res; @blk.0.ffn_up.weight, @blk.0.ffn_norm.weight) norm_eps=0.001
  )"));
}

TEST(FuseRmsNormMatMulTest, NormWithANonProjectionReaderStays) {
  // attn_in also feeds an add: the norm must stay for it, so nothing is folded there.
  const std::string text = Edit(
      kTinyModelIr, {{"%blk.0.attn_res: f32[T,8] = add(%embd, %blk.0.attn_out)",
                      "%blk.0.attn_res: f32[T,8] = add(%blk.0.attn_in, %blk.0.attn_out)"}});
  const testing::Ran ran = testing::RunPass(RunFuseRmsNormMatMul, text);
  EXPECT_TRUE(MatchesCheckLines(ran.ir, R"(
    CHECK:      %blk.0.attn_in: f32[T,8] = rms_norm(%embd; @blk.0.attn_norm.weight) eps=1e-05
    CHECK-NEXT: %blk.0.q: f32[T,16] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)
    CHECK:      %blk.0.gate: f32[T,16] = matmul(%blk.0.attn_res; @blk.0.ffn_gate.weight, @blk.0.ffn_norm.weight) norm_eps=1e-05
  )"));
  EXPECT_EQ(ran.result.report,
            "folded 1 rms_norms into 2 projections; 2 kept (they feed other ops)");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(FuseRmsNormMatMulTest, NothingToFoldIsNoChange) {
  const testing::Ran folded = testing::RunPass(RunFuseRmsNormMatMul, kTinyModelIr);
  EXPECT_EQ(testing::ExpectNoChange(RunFuseRmsNormMatMul, folded.ir).result.report,
            "no rms_norm to fold (1 kept)");
}

}  // namespace
}  // namespace jllm::passes
