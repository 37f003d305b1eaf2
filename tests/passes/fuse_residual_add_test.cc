#include "passes/fuse_residual_add.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;

std::string FusedTiny() {
  return Edit(kTinyModelIr,
              {{"%blk.0.attn_out: f32[T,8] = matmul(%blk.0.attn; @blk.0.attn_output.weight)\n"
                "%blk.0.attn_res: f32[T,8] = add(%embd, %blk.0.attn_out)\n",
                "%blk.0.attn_res: f32[T,8] = matmul(%blk.0.attn, %embd; "
                "@blk.0.attn_output.weight) residual\n"},
               {"%blk.0.ffn_out: f32[T,8] = matmul(%blk.0.ffn_act; @blk.0.ffn_down.weight)\n"
                "%blk.0.out: f32[T,8] = add(%blk.0.attn_res, %blk.0.ffn_out)\n",
                "%blk.0.out: f32[T,8] = matmul(%blk.0.ffn_act, %blk.0.attn_res; "
                "@blk.0.ffn_down.weight) residual\n"}});
}

TEST(FuseResidualAddTest, FoldsBothResidualAdds) {
  const testing::Ran ran = testing::RunPass(RunFuseResidualAdd, kTinyModelIr);
  EXPECT_EQ(ran.ir, FusedTiny());
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "folded 2 residual adds into projections");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(FuseResidualAddTest, EitherOperandOrder) {
  const std::string text = Edit(kTinyModelIr, {{"add(%embd, %blk.0.attn_out)", "add(%blk.0.attn_out, %embd)"}});
  EXPECT_EQ(testing::RunPass(RunFuseResidualAdd, text).ir, FusedTiny());
}

TEST(FuseResidualAddTest, ProjectionWithAnotherReaderIsNotFolded) {
  // attn_out is also a graph output: the matmul must still produce it, so that add stays.
  const std::string text = Edit(kTinyModelIr, {{"output %logits, %token", "output %logits, %token, %blk.0.attn_out"}});
  const testing::Ran ran = testing::RunPass(RunFuseResidualAdd, text);
  EXPECT_TRUE(testing::MatchesCheckLines(ran.ir, R"(
    CHECK:      %blk.0.attn_out: f32[T,8] = matmul(%blk.0.attn; @blk.0.attn_output.weight)
    CHECK-NEXT: %blk.0.attn_res: f32[T,8] = add(%embd, %blk.0.attn_out)
    CHECK:      %blk.0.out: f32[T,8] = matmul(%blk.0.ffn_act, %blk.0.attn_res; @blk.0.ffn_down.weight) residual
  )"));
  EXPECT_EQ(ran.result.report, "folded 1 residual adds into projections");
}

TEST(FuseResidualAddTest, AddOfNonProjectionsIsLeftAlone) {
  const std::string text =
      "jllm-ir 1\n"
      "config arch=qwen3 n_embd=8 n_layer=1 n_head=2 n_head_kv=1 head_dim=8 n_ff=16 n_vocab=10 "
      "context_length=64 rope_base=1e+06 rope_freq_scale=0.5 rms_eps=1e-05\n"
      "kv_cache f16\n"
      "input %a: f32[T,8]\n"
      "input %b: f32[T,8]\n"
      "%c: f32[T,8] = add(%a, %b)\n"
      "output %c\n";
  EXPECT_EQ(testing::ExpectNoChange(RunFuseResidualAdd, text).result.report,
            "no residual add to fold");
}

}  // namespace
}  // namespace jllm::passes
