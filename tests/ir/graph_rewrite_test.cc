// The graph's analysis and rewriting helpers that passes build on: UseCounts, Users,
// ReplaceAllUses and EraseNodes, checked on a small graph built through the API.
#include <gtest/gtest.h>

#include <vector>

#include "ir/graph.h"
#include "ir/text.h"
#include "ir/verify.h"

namespace jllm::ir {
namespace {

// x → a = add(x, x) → b = add(a, x) → c = add(b, b); outputs: b, c.
struct Small {
  Graph g;
  ValueId x, a, b, c;
};

Small MakeSmall() {
  Small s;
  s.g.config = {"qwen3", 8, 1, 2, 1, 4, 16, 10, 64, 1e6f, 1.0f, 1e-6f, false};
  s.g.kv_dtypes = {KvDType::kF16};
  s.x = *s.g.AddInput("x", {DType::kF32, {{kDimT, 8}}});
  s.a = *s.g.AddNode1(OpKind::kAdd, {s.x, s.x}, {}, NoAttrs{}, "a");
  s.b = *s.g.AddNode1(OpKind::kAdd, {s.a, s.x}, {}, NoAttrs{}, "b");
  s.c = *s.g.AddNode1(OpKind::kAdd, {s.b, s.b}, {}, NoAttrs{}, "c");
  s.g.outputs = {s.b, s.c};
  EXPECT_TRUE(Verify(s.g).ok()) << Verify(s.g);
  return s;
}

TEST(GraphRewriteTest, UseCountsCountEverySlotAndGraphOutputs) {
  const Small s = MakeSmall();
  const std::vector<int> uses = s.g.UseCounts();
  ASSERT_EQ(uses.size(), 4u);
  EXPECT_EQ(uses[s.x], 3);  // twice by a, once by b
  EXPECT_EQ(uses[s.a], 1);
  EXPECT_EQ(uses[s.b], 3);  // twice by c, once as a graph output
  EXPECT_EQ(uses[s.c], 1);  // a graph output only
}

TEST(GraphRewriteTest, UseCountsIgnoreInvalidIds) {
  Small s = MakeSmall();
  s.g.nodes[2].inputs[1] = 99;
  s.g.outputs.push_back(-1);
  const std::vector<int> uses = s.g.UseCounts();
  ASSERT_EQ(uses.size(), 4u);
  EXPECT_EQ(uses[s.b], 2);  // c reads it once now, plus the graph output
}

TEST(GraphRewriteTest, UsersListNodesPerSlot) {
  const Small s = MakeSmall();
  const std::vector<std::vector<int>> users = s.g.Users();
  EXPECT_EQ(users[s.x], (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(users[s.b], (std::vector<int>{2, 2}));  // graph outputs are not nodes
  EXPECT_TRUE(users[s.c].empty());
}

TEST(GraphRewriteTest, ReplaceAllUsesRewritesNodeInputsAndGraphOutputs) {
  Small s = MakeSmall();
  s.g.ReplaceAllUses(s.b, s.a);
  EXPECT_EQ(s.g.nodes[2].inputs, (std::vector<ValueId>{s.a, s.a}));
  EXPECT_EQ(s.g.outputs, (std::vector<ValueId>{s.a, s.c}));
  // Other readers and the producer of `from` are untouched.
  EXPECT_EQ(s.g.nodes[1].inputs, (std::vector<ValueId>{s.a, s.x}));
  EXPECT_EQ(s.g.nodes[1].outputs, (std::vector<ValueId>{s.b}));
  EXPECT_EQ(s.g.UseCounts()[s.b], 0);
}

TEST(GraphRewriteTest, ReplaceAllUsesOfAnUnreadValueChangesNothing) {
  Small s = MakeSmall();
  const Graph before = s.g;
  s.g.ReplaceAllUses(s.c + 1, s.x);  // an id nothing reads
  EXPECT_EQ(s.g, before);
}

TEST(GraphRewriteTest, EraseNodesKeepsTheRestInOrder) {
  Small s = MakeSmall();
  s.g.EraseNodes({false, true, false});
  ASSERT_EQ(s.g.nodes.size(), 2u);
  EXPECT_EQ(s.g.nodes[0].outputs, (std::vector<ValueId>{s.a}));
  EXPECT_EQ(s.g.nodes[1].outputs, (std::vector<ValueId>{s.c}));
  // A shorter flag vector leaves the nodes past its end alone.
  s.g.EraseNodes({true});
  ASSERT_EQ(s.g.nodes.size(), 1u);
  EXPECT_EQ(s.g.nodes[0].outputs, (std::vector<ValueId>{s.c}));
  s.g.EraseNodes({});
  EXPECT_EQ(s.g.nodes.size(), 1u);
}

// A pass's usual rewrite: route b's readers to a, erase b's node, compact; the result verifies
// and prints as if built that way.
TEST(GraphRewriteTest, ReplaceEraseCompactGivesAValidGraph) {
  Small s = MakeSmall();
  s.g.ReplaceAllUses(s.b, s.a);
  s.g.EraseNodes({false, true, false});
  s.g.Compact();
  ASSERT_TRUE(Verify(s.g).ok()) << Verify(s.g);
  EXPECT_EQ(s.g.values.size(), 3u);  // x, a, c
  Graph want;
  want.config = s.g.config;
  want.kv_dtypes = s.g.kv_dtypes;
  const ValueId x = *want.AddInput("x", {DType::kF32, {{kDimT, 8}}});
  const ValueId a = *want.AddNode1(OpKind::kAdd, {x, x}, {}, NoAttrs{}, "a");
  const ValueId c = *want.AddNode1(OpKind::kAdd, {a, a}, {}, NoAttrs{}, "c");
  want.outputs = {a, c};
  EXPECT_EQ(Print(s.g), Print(want));
  EXPECT_EQ(s.g, want);
}

}  // namespace
}  // namespace jllm::ir
