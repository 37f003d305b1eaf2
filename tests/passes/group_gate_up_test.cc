#include "passes/group_gate_up.h"

#include <gtest/gtest.h>

#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;

constexpr char kGateUpOfTiny[] =
    "%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)\n"
    "%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)\n";
constexpr char kGroupedGateUpOfTiny[] =
    "%blk.0.gate: f32[T,16], %blk.0.up: f32[T,16] = matmul_group(%blk.0.ffn_in; "
    "@blk.0.ffn_gate.weight, @blk.0.ffn_up.weight)\n";

TEST(GroupGateUpTest, GroupsGateAndUp) {
  const testing::Ran ran = testing::RunPass(RunGroupGateUp, kTinyModelIr);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kGateUpOfTiny, kGroupedGateUpOfTiny}}));
  EXPECT_TRUE(ran.result.changed);
  EXPECT_EQ(ran.result.report, "grouped 1 gate/up pairs (f32+f32 x1)");
  testing::ExpectAttributesMatchConfig(ran.ir);
}

TEST(GroupGateUpTest, DifferingTypesGroupToo) {
  // Make up an f16 weight: same dims, half the bytes.
  const std::string text = Edit(kTinyModelIr, {{"weight blk.0.ffn_up.weight f32 {8,16} offset=2528 size=512",
                                                "weight blk.0.ffn_up.weight f16 {8,16} offset=2528 size=256"}});
  const testing::Ran ran = testing::RunPass(RunGroupGateUp, text);
  EXPECT_EQ(ran.ir, Edit(text, {{kGateUpOfTiny, kGroupedGateUpOfTiny}}));
  EXPECT_EQ(ran.result.report, "grouped 1 gate/up pairs (f32+f16 x1)");
}

TEST(GroupGateUpTest, KeepsGateBeforeUpWhateverTheNodeOrder) {
  const std::string swapped = Edit(
      kTinyModelIr,
      {{kGateUpOfTiny, "%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)\n"
                       "%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)\n"}});
  const testing::Ran ran = testing::RunPass(RunGroupGateUp, swapped);
  EXPECT_EQ(ran.ir, Edit(kTinyModelIr, {{kGateUpOfTiny, kGroupedGateUpOfTiny}}));
}

TEST(GroupGateUpTest, WithoutSwigluNothingGroups) {
  // gate/up pairs are found through their swiglu: with an add instead, nothing groups.
  const std::string text = Edit(
      kTinyModelIr,
      {{"%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)\n",
        "%blk.0.ffn_act: f32[T,16] = add(%blk.0.gate, %blk.0.up)\n"}});
  EXPECT_EQ(testing::ExpectNoChange(RunGroupGateUp, text).result.report,
            "no gate/up projections to group");
}

}  // namespace
}  // namespace jllm::passes
