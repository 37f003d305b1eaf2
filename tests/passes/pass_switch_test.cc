// Every registered pass, switched off in the pipeline, leaves the graph exactly as it was; on,
// it does what running it directly does, and that changes this input (so "off" is a real
// difference). One table row per pass: a new pass that lacks a row fails
// TableCoversEveryPass.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "passes/registry.h"
#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::passes {
namespace {

using jllm::testing::kTinyModelIr;
using testing::Edit;

struct SwitchCase {
  std::string pass;
  std::string input;  // a graph the pass changes when it runs with its default options
};
void PrintTo(const SwitchCase& c, std::ostream* os) { *os << c.pass; }

std::vector<SwitchCase> Cases() {
  // fuse-swiglu folds into a gate/up group, so its input has one; kv-dtype's default (f16)
  // changes an int8 cache back.
  const std::string grouped_gate_up =
      Edit(kTinyModelIr,
           {{"%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)\n"
             "%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)\n",
             "%blk.0.gate: f32[T,16], %blk.0.up: f32[T,16] = matmul_group(%blk.0.ffn_in; "
             "@blk.0.ffn_gate.weight, @blk.0.ffn_up.weight)\n"}});
  const std::string int8_cache = Edit(kTinyModelIr, {{"kv_cache f16", "kv_cache int8"},
                                                     {"%blk.0.kv: f16[2,S,8]", "%blk.0.kv: i8[2,S,8]"}});
  return {{"group-qkv", kTinyModelIr},          {"group-gate-up", kTinyModelIr},
          {"fuse-rmsnorm-matmul", kTinyModelIr}, {"fuse-residual-add", kTinyModelIr},
          {"fuse-swiglu", grouped_gate_up},      {"fuse-qknorm-rope", kTinyModelIr},
          {"kv-dtype", int8_cache}};
}

class PassSwitchTest : public ::testing::TestWithParam<SwitchCase> {};

TEST_P(PassSwitchTest, OffLeavesTheGraphUnchangedOnRunsThePass) {
  const SwitchCase& c = GetParam();
  EXPECT_EQ(testing::RunOnly(c.pass, false, c.input), c.input);
  const PassInfo* info = FindPass(c.pass);
  ASSERT_NE(info, nullptr) << c.pass;
  const testing::Ran direct = testing::RunPass(info->run, c.input);
  EXPECT_TRUE(direct.result.changed) << c.pass << ": " << direct.result.report;
  EXPECT_NE(direct.ir, c.input);
  EXPECT_EQ(testing::RunOnly(c.pass, true, c.input), direct.ir);
}

INSTANTIATE_TEST_SUITE_P(EveryPass, PassSwitchTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           std::string name = info.param.pass;
                           std::erase(name, '-');
                           return name;
                         });

TEST(PassSwitchTableTest, TableCoversEveryPass) {
  std::set<std::string> in_table;
  for (const SwitchCase& c : Cases()) in_table.insert(c.pass);
  for (const PassInfo& p : AllPasses()) {
    EXPECT_TRUE(in_table.count(std::string(p.name))) << "no PassSwitchTest row for " << p.name;
  }
  EXPECT_EQ(in_table.size(), AllPasses().size());
}

}  // namespace
}  // namespace jllm::passes
