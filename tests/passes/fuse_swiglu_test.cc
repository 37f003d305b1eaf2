#include "passes/fuse_swiglu.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;

constexpr char kUngrouped[] =
    "%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)\n"
    "%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)\n"
    "%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)\n";
constexpr char kGrouped[] =
    "%blk.0.gate: f32[T,16], %blk.0.up: f32[T,16] = matmul_group(%blk.0.ffn_in; "
    "@blk.0.ffn_gate.weight, @blk.0.ffn_up.weight)\n"
    "%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)\n";
constexpr char kFused[] =
    "%blk.0.ffn_act: f32[T,16] = matmul_group(%blk.0.ffn_in; @blk.0.ffn_gate.weight, "
    "@blk.0.ffn_up.weight) swiglu\n";

TEST(FuseSwiGluTest, FoldsSwigluIntoTheGateUpGroup) {
  const std::string grouped = Edit(kTinyModelIr, {{kUngrouped, kGrouped}});
  const testing::Ran ran = testing::RunPass(RunFuseSwiGlu, grouped);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kUngrouped, kFused}}));
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "folded 1 swiglus into gate/up groups");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(FuseSwiGluTest, UngroupedProjectionsChangeNothing) {
  EXPECT_EQ(testing::ExpectNoChange(RunFuseSwiGlu, kTinyModelIr).result.report,
            "no swiglu to fold (1 not fed by a gate/up group)");
}

TEST(FuseSwiGluTest, SwappedOperandsAreNotFolded) {
  // swiglu(up, gate) is a different function: silu applies to the group's second output.
  const std::string text =
      Edit(kTinyModelIr, {{kUngrouped, Edit(kGrouped, {{"swiglu(%blk.0.gate, %blk.0.up)",
                                                        "swiglu(%blk.0.up, %blk.0.gate)"}})}});
  testing::ExpectNoChange(RunFuseSwiGlu, text);
}

TEST(FuseSwiGluTest, GateWithAnotherReaderIsNotFolded) {
  const std::string text = Edit(Edit(kTinyModelIr, {{kUngrouped, kGrouped}}),
                                {{"output %logits, %token", "output %logits, %token, %blk.0.gate"}});
  testing::ExpectNoChange(RunFuseSwiGlu, text);
}

}  // namespace
}  // namespace jllm::passes
