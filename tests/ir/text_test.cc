// Print / Parse: the text form round-trips, matches hand-written text, and rejects bad input
// with a message naming the line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ir/text.h"
#include "ir/verify.h"
#include "tests/ir/tiny_model_ir.h"

namespace jllm::ir {
namespace {

using ::testing::HasSubstr;

TEST(TextTest, TinyModelParsesVerifiesAndPrintsBackIdentically) {
  auto g = Parse(testing::kTinyModelIr);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  EXPECT_EQ(Print(*g), testing::kTinyModelIr);
}

TEST(TextTest, ParseFillsTheStructures) {
  auto g = Parse(testing::kTinyModelIr);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->config.n_embd, 8);
  EXPECT_EQ(g->config.rms_eps, 1e-5f);
  EXPECT_EQ(g->config.rope_base, 1e6f);
  EXPECT_EQ(g->config.rope_freq_scale, 0.5f);
  EXPECT_EQ(g->config.head_dim, 8);
  EXPECT_TRUE(g->config.tied_embeddings);
  ASSERT_EQ(g->weights.size(), 13u);
  EXPECT_EQ(g->weights[3].name, "blk.0.attn_q.weight");
  EXPECT_EQ(g->weights[3].ne, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(g->weights[3].offset, 384u);
  EXPECT_EQ(g->weights[3].nbytes, 512u);
  ASSERT_EQ(g->nodes.size(), 22u);  // embed, 18 per layer, final norm, logits, sample
  const Node& attention = g->nodes[10];
  EXPECT_EQ(attention.op, OpKind::kAttention);
  EXPECT_EQ(attention.attrs_as<AttentionAttrs>(),
            (AttentionAttrs{0, 2, 1, 8, 1.0f / std::sqrt(8.0f)}));
  EXPECT_EQ(g->type_of(attention.inputs[1]),
            (ValueType{DType::kF16, {{2, kDimS, 8}}}));
  ASSERT_EQ(g->outputs.size(), 2u);
  EXPECT_EQ(g->name_of(g->outputs[1]), "token");
}

// A graph built through the API prints as written by hand: fused attributes, an int8 cache,
// quoted names.
TEST(TextTest, ApiBuiltGraphPrintsAsExpected) {
  Graph g;
  g.config = {"qwen3", 8, 1, 2, 1, 4, 16, 10, 64, 1e6f, 0.25f, 1e-6f, false};
  g.kv_dtypes = {KvDType::kInt8};
  const WeightId gate = *g.AddWeight({"gate", GgmlType::kF32, {8, 16}, 0, 512});
  const WeightId up = *g.AddWeight({"up w", GgmlType::kF16, {8, 16}, 512, 256});
  const WeightId gamma = *g.AddWeight({"norm", GgmlType::kF32, {8}, 768, 32});
  const ValueId x = *g.AddInput("x", {DType::kF32, {{kDimT, 8}}});
  MatMulAttrs fused;
  fused.norm_eps = 1e-5f;
  fused.swiglu = true;
  auto act = g.AddNode(OpKind::kMatMulGroup, {x}, {gate, up, gamma}, fused, {"act#1"});
  ASSERT_TRUE(act.ok()) << act.status();
  g.outputs = *act;
  EXPECT_EQ(Print(g), R"(jllm-ir 1
config arch=qwen3 n_embd=8 n_layer=1 n_head=2 n_head_kv=1 head_dim=4 n_ff=16 n_vocab=10 context_length=64 rope_base=1e+06 rope_freq_scale=0.25 rms_eps=1e-06
kv_cache int8
weight gate f32 {8,16} offset=0 size=512
weight "up w" f16 {8,16} offset=512 size=256
weight norm f32 {8} offset=768 size=32
input %x: f32[T,8]
%"act#1": f32[T,16] = matmul_group(%x; @gate, @"up w", @norm) norm_eps=1e-05 swiglu
output %"act#1"
)");
  auto back = Parse(Print(g));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, g);
}

TEST(TextTest, CommentsAndBlankLinesAreIgnored) {
  std::string text = testing::kTinyModelIr;
  text.insert(0, "# a comment line\n\n");
  text += "   # trailing comment\n";
  auto g = Parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(Print(*g), testing::kTinyModelIr);
}

// Damaged text (each character in turn deleted, or replaced by a bracket) is parsed or refused,
// never a crash or a hang; whatever parses is then verified without crashing either.
TEST(TextTest, DamagedTextNeverCrashes) {
  const std::string text = testing::kTinyModelIr;
  int refused = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    for (int variant = 0; variant < 2; ++variant) {
      std::string bad = text;
      if (variant == 0) {
        bad.erase(i, 1);
      } else {
        bad[i] = '[';
      }
      auto g = Parse(bad);
      if (g.ok()) {
        (void)Verify(*g);
      } else {
        ++refused;
        EXPECT_FALSE(g.status().message().empty());
      }
    }
  }
  EXPECT_GT(refused, 0);
}

struct BadText {
  std::string text;
  std::string error;
};
void PrintTo(const BadText& b, std::ostream* os) { *os << "error \"" << b.error << "\""; }

class ParseErrorTest : public ::testing::TestWithParam<BadText> {};

TEST_P(ParseErrorTest, NamesTheProblem) {
  auto g = Parse(GetParam().text);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr(GetParam().error));
}

constexpr char kHead[] =
    "jllm-ir 1\n"
    "config arch=qwen3 n_embd=8 n_layer=1 n_head=2 n_head_kv=1 head_dim=4 n_ff=16 n_vocab=10 "
    "context_length=64 rope_base=10000 rope_freq_scale=1 rms_eps=1e-06\n"
    "kv_cache f16\n"
    "weight w f32 {8,8} offset=0 size=256\n"
    "input %x: f32[T,8]\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseErrorTest,
    ::testing::Values(
        BadText{"", "no 'jllm-ir 1' header"},
        BadText{"config n_embd=1\n", "must start with 'jllm-ir 1'"},
        BadText{"jllm-ir 2\n", "line 1: text format version 2 is not supported"},
        BadText{"jllm-ir 1\nkv_cache f16\n", "no 'config' line"},
        BadText{"jllm-ir 1\nconfig arch=qwen3\n", "missing attribute 'n_embd'"},
        BadText{std::string(kHead) + "%y: f32[T,8] = matmul(%x; @w) bogus=1\n",
                "line 6: matmul: unknown attribute 'bogus' (valid: norm_eps, residual, swiglu)"},
        BadText{std::string(kHead) + "%y: f32[T,8] = frobnicate(%x)\n", "line 6: unknown op 'frobnicate'"},
        BadText{std::string(kHead) + "%y: f64[T,8] = add(%x, %x)\n", "unknown dtype 'f64'"},
        BadText{std::string(kHead) + "%y: f32[T,0] = add(%x, %x)\n", "bad dimension '0'"},
        BadText{std::string(kHead) + "%y: f32[T,8] = add(%x, %nope)\n",
                "line 6: %nope is neither an input nor a node output"},
        BadText{std::string(kHead) + "%y: f32[T,8] = matmul(%x; @nope)\n",
                "line 6: no weight line declares @nope"},
        BadText{std::string(kHead) + "%x: f32[T,8] = add(%x, %x)\n", "%x is defined twice"},
        BadText{std::string(kHead) + "%y: f32[T,8] = rms_norm(%x; @w) eps\n",
                "attribute 'eps' needs a value"},
        BadText{std::string(kHead) + "%y: f32[T,8] = matmul(%x; @w) residual=1\n",
                "flag 'residual' takes no value"},
        BadText{std::string(kHead) + "%y: f32[T,8] = rms_norm(%x; @w) eps=abc\n",
                "'abc' is not a number"},
        BadText{std::string(kHead) + "%y: f32[T,8] = add(%x %x)\n", "expected ')', found '%x'"},
        BadText{std::string(kHead) + "weight w f32 {8,8} offset=0 size=256\n",
                "weight 'w' is declared twice"},
        BadText{std::string(kHead) + "weight v q9_K {8} offset=0 size=1\n", "unknown ggml type 'q9_K'"},
        BadText{std::string(kHead) + "weight v f32 {8} offset=0\n", "needs offset= and size="},
        BadText{std::string(kHead) + "kv_cache bf16\n", "unknown KV cache type 'bf16' (valid: f16, int8, f32)"},
        BadText{std::string(kHead) + "input %\"unterminated: f32[T]\n", "unterminated quoted name"},
        BadText{std::string(kHead) + "frobnicate\n", "unknown line keyword 'frobnicate'"},
        BadText{std::string(kHead) + "output %y\n", "line 6: %y is neither an input nor a node output"},
        BadText{std::string(kHead) + "input %z: f32[T,8] $\n", "unexpected character '$'"}));

}  // namespace
}  // namespace jllm::ir
