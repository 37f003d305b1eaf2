// Verify: each kind of invalid graph is caught, with a message saying what and where.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_replace.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "tests/ir/tiny_model_ir.h"

namespace jllm::ir {
namespace {

using ::testing::HasSubstr;

Graph Tiny() {
  auto g = Parse(testing::kTinyModelIr);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

std::string VerifyError(const Graph& g) {
  absl::Status st = Verify(g);
  EXPECT_FALSE(st.ok()) << "Verify accepted:\n" << Print(g);
  return std::string(st.message());
}

TEST(VerifyTest, TinyModelIsValid) { EXPECT_TRUE(Verify(Tiny()).ok()); }

// One textual edit of the tiny model per case, and the error Verify must give.
struct Edit {
  std::string name;
  std::string from, to;
  std::string error;
};
void PrintTo(const Edit& e, std::ostream* os) { *os << e.name; }

class VerifyTextEditTest : public ::testing::TestWithParam<Edit> {};

TEST_P(VerifyTextEditTest, IsRejected) {
  const Edit& e = GetParam();
  const std::string text = absl::StrReplaceAll(testing::kTinyModelIr, {{e.from, e.to}});
  ASSERT_NE(text, testing::kTinyModelIr) << "edit did not apply: " << e.from;
  auto g = Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(VerifyError(*g), HasSubstr(e.error));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, VerifyTextEditTest,
    ::testing::Values(
        Edit{"ConfigHeadsNotMultiple", "n_head=2 n_head_kv=1", "n_head=3 n_head_kv=2",
             "n_head = 3 is not a multiple of n_head_kv = 2"},
        Edit{"KvCacheLayerCount", "kv_cache f16", "kv_cache f16 f16", "kv_cache lists 2 layers"},
        Edit{"WeightSizeWrong", "{8,16} offset=384 size=512", "{8,16} offset=384 size=600",
             "weight 'blk.0.attn_q.weight' has size 600, but f32 {8, 16} takes 512 bytes"},
        Edit{"WeightNotBlockMultiple", "f32 {8,16} offset=384 size=512",
             "q8_0 {8,16} offset=384 size=512",
             "weight 'blk.0.attn_q.weight' has invalid dims {8, 16} for type q8_0"},
        Edit{"WeightDimsDoNotMatchInput", "blk.0.attn_output.weight f32 {16,8} offset=1408 size=512",
             "blk.0.attn_output.weight f32 {12,8} offset=1408 size=384",
             "node 11 (matmul -> %blk.0.attn_out): weight 'blk.0.attn_output.weight' has ne "
             "{12, 8}, expected {16, N}"},
        Edit{"RecordedShapeWrong", "%blk.0.q: f32[T,16]", "%blk.0.q: f32[T,17]",
             "%blk.0.q is recorded as f32[T,17] but the op gives f32[T,16]"},
        Edit{"RecordedDtypeWrong", "%blk.0.v: f32[T,8]", "%blk.0.v: f16[T,8]",
             "%blk.0.v is recorded as f16[T,8] but the op gives f32[T,8]"},
        Edit{"InputDtypeWrong", "input %pos: i32[T]", "input %pos: f32[T]",
             "positions are f32[T], expected i32[T]"},
        Edit{"NotTopological", "%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)",
             "%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.ffn_out)",
             "node 16 (swiglu -> %blk.0.ffn_act): reads %blk.0.ffn_out before any node defines it"},
        Edit{"EpsZero", "rms_norm(%embd; @blk.0.attn_norm.weight) eps=1e-05",
             "rms_norm(%embd; @blk.0.attn_norm.weight) eps=0", "eps = 0 must be > 0"},
        Edit{"RopeOddRotation", "n_head=2 head_dim=8 n_rot=8", "n_head=2 head_dim=8 n_rot=7",
             "n_rot = 7 must be even"},
        Edit{"HeadsDoNotMatchWidth", "head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=2",
             "head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=3",
             "input %blk.0.q is f32[T,16], expected f32[T,24]"},
        Edit{"LayerOutOfRange", "layer=0 n_head=2", "layer=1 n_head=2",
             "layer 1 is outside the 1 layers of kv_cache"},
        Edit{"KvTypeChangedWithoutRetyping", "kv_cache f16", "kv_cache int8",
             "%blk.0.kv is recorded as f16[2,S,8] but the op gives i8[2,S,8]"},
        Edit{"GammaWrongWidth", "weight output_norm.weight f32 {8} offset=320 size=32",
             "weight output_norm.weight f32 {4} offset=320 size=16",
             "norm weight 'output_norm.weight' has ne {4}, expected {8}"},
        Edit{"GammaQuantized", "weight output_norm.weight f32 {8} offset=320 size=32",
             "weight output_norm.weight i32 {8} offset=320 size=32",
             "norm weight 'output_norm.weight' is i32; norms must be f32, f16 or bf16"},
        Edit{"WrongInputCount", "add(%embd, %blk.0.attn_out)", "add(%embd, %blk.0.attn_out, %embd)",
             "add takes 2 input(s), 0 weight(s) and 1 output(s); the node has 3, 0 and 1"},
        Edit{"ResidualWithoutInput", "matmul(%blk.0.attn; @blk.0.attn_output.weight)",
             "matmul(%blk.0.attn; @blk.0.attn_output.weight) residual",
             "matmul with these attributes takes 2 input(s)"},
        Edit{"SwigluOnSingleMatmul", "matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)",
             "matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight) swiglu",
             "the swiglu epilogue applies to a (gate, up) group only"},
        Edit{"GroupOfOne", "%blk.0.v: f32[T,8] = matmul(", "%blk.0.v: f32[T,8] = matmul_group(",
             "matmul_group needs at least 2 member weights"}),
    [](const auto& info) { return info.param.name; });

// Cases the text form cannot express (it resolves names), made by editing the structures.
TEST(VerifyTest, InputIdOutOfRange) {
  Graph g = Tiny();
  g.nodes[3].inputs[0] = 999;
  EXPECT_THAT(VerifyError(g), HasSubstr("node 3 (matmul -> %blk.0.k): input id 999 is invalid"));
}

TEST(VerifyTest, WeightIdOutOfRange) {
  Graph g = Tiny();
  g.nodes[2].weights[0] = -1;
  EXPECT_THAT(VerifyError(g), HasSubstr("weight 0 does not exist (id -1)"));
}

TEST(VerifyTest, ValueDefinedTwice) {
  Graph g = Tiny();
  g.nodes[3].outputs[0] = g.nodes[2].outputs[0];  // k's node now also writes %blk.0.q
  EXPECT_THAT(VerifyError(g), HasSubstr("%blk.0.q is defined twice"));
}

TEST(VerifyTest, AttributesOfAnotherOp) {
  Graph g = Tiny();
  g.nodes[2].attrs = RmsNormAttrs{1e-6f};
  EXPECT_THAT(VerifyError(g), HasSubstr("matmul carries the attributes of another op"));
}

TEST(VerifyTest, AttentionMustReadItsLayersCache) {
  auto g = Parse(absl::StrReplaceAll(
      testing::kTinyModelIr,
      {{"input %pos: i32[T]\n", "input %pos: i32[T]\ninput %fake: f16[2,S,8]\n"},
       {"attention(%blk.0.q_rope, %blk.0.kv, %pos)", "attention(%blk.0.q_rope, %fake, %pos)"}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(VerifyError(*g), HasSubstr("the kv cache input %fake is not the cache that layer 0's "
                                         "kv append produces"));
}

TEST(VerifyTest, OneAppendPerLayer) {
  auto g = Parse(absl::StrReplaceAll(
      testing::kTinyModelIr,
      {{"%blk.0.attn: f32[T,16]",
        "%kv2: f16[2,S,8] = kv_append(%blk.0.k_rope, %blk.0.v, %pos) layer=0 n_head_kv=1 "
        "head_dim=8\n%blk.0.attn: f32[T,16]"}}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(VerifyError(*g), HasSubstr("layer 0 is already appended by node 9"));
}

TEST(VerifyTest, UnknownWeightType) {
  Graph g = Tiny();
  g.weights[0].type = static_cast<GgmlType>(4);  // a retired id
  EXPECT_THAT(VerifyError(g), HasSubstr("weight 'token_embd.weight' has unknown ggml type 4"));
}

TEST(VerifyTest, GraphOutputOutOfRange) {
  Graph g = Tiny();
  g.outputs.push_back(12345);
  EXPECT_THAT(VerifyError(g), HasSubstr("graph output id 12345 is invalid"));
}

TEST(VerifyTest, DuplicateWeightName) {
  Graph g = Tiny();
  g.weights[4].name = g.weights[3].name;
  EXPECT_THAT(VerifyError(g), HasSubstr("weight 'blk.0.attn_q.weight' repeats"));
}

TEST(VerifyTest, DuplicateValueName) {
  Graph g = Tiny();
  g.values[5].name = g.values[4].name;
  EXPECT_THAT(VerifyError(g), HasSubstr("repeats"));
}

TEST(VerifyTest, CompactRemovesLeftovers) {
  Graph g = Tiny();
  g.values.push_back({"leftover", {DType::kF32, {{kDimT, 8}}}});
  EXPECT_THAT(VerifyError(g), HasSubstr("value %leftover is never defined"));
  g.Compact();
  EXPECT_TRUE(Verify(g).ok());
  EXPECT_EQ(Print(g), testing::kTinyModelIr);
}

}  // namespace
}  // namespace jllm::ir
