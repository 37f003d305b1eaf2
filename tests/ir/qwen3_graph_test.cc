// The Qwen3 graph builder: config from metadata (strict key types), tensor checks, and the graph
// compared with the hand-written IR of tests/ir/tiny_model_ir.h.
#include "frontends/gguf/qwen3_graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "frontends/gguf/gguf_writer.h"
#include "ir/serialize.h"
#include "ir/text.h"
#include "ir/verify.h"
#include "passes/pipeline.h"
#include "tests/ir/tiny_model_ir.h"
#include "tests/passes/pass_test_util.h"

namespace jllm::gguf {
namespace {

using ::testing::HasSubstr;

Value U32(uint32_t v) { return Value{ValueType::kUint32, ValueType::kUint8, uint64_t{v}, {}, {}, {}}; }
Value I32(int32_t v) { return Value{ValueType::kInt32, ValueType::kUint8, int64_t{v}, {}, {}, {}}; }
Value F32(float v) { return Value{ValueType::kFloat32, ValueType::kUint8, double{v}, {}, {}, {}}; }
Value F64(double v) { return Value{ValueType::kFloat64, ValueType::kUint8, v, {}, {}, {}}; }
Value Str(std::string s) { return Value{ValueType::kString, ValueType::kUint8, std::move(s), {}, {}, {}}; }
Value IntArray(ValueType elem, std::vector<int64_t> v) {
  return Value{ValueType::kArray, elem, uint64_t{0}, std::move(v), {}, {}};
}
Value Tokens(int n) {
  Value v{ValueType::kArray, ValueType::kString, uint64_t{0}, {}, {}, {}};
  for (int i = 0; i < n; ++i) v.strings.push_back(absl::StrCat("t", i));
  return v;
}

// The metadata of the tiny model: E=8, 1 layer, H=2, Hkv=1, D=8 (not E/H = 4), F=16, V=10, and
// eps, RoPE base and RoPE scaling off their defaults (tests/ir/tiny_model_ir.h says why).
std::vector<KeyValue> TinyMetadata() {
  return {
      {"general.architecture", Str("qwen3")},
      {"qwen3.block_count", U32(1)},
      {"qwen3.context_length", U32(64)},
      {"qwen3.embedding_length", U32(8)},
      {"qwen3.feed_forward_length", U32(16)},
      {"qwen3.attention.head_count", U32(2)},
      {"qwen3.attention.head_count_kv", U32(1)},
      {"qwen3.attention.key_length", U32(8)},
      {"qwen3.attention.value_length", U32(8)},
      {"qwen3.attention.layer_norm_rms_epsilon", F32(1e-5f)},
      {"qwen3.rope.freq_base", F32(1e6f)},
      {"qwen3.rope.scaling.type", Str("linear")},
      {"qwen3.rope.scaling.factor", F32(2.0f)},
      {"tokenizer.ggml.tokens", Tokens(10)},
  };
}

void Set(std::vector<KeyValue>& md, const std::string& key, Value v) {
  for (KeyValue& kv : md) {
    if (kv.key == key) {
      kv.value = std::move(v);
      return;
    }
  }
  md.push_back({key, std::move(v)});
}

void Erase(std::vector<KeyValue>& md, const std::string& key) {
  std::erase_if(md, [&](const KeyValue& kv) { return kv.key == key; });
}

TensorInfo Tensor(std::string name, std::vector<int64_t> ne, uint64_t offset,
                  GgmlType type = GgmlType::kF32) {
  TensorInfo t;
  t.name = std::move(name);
  t.n_dims = static_cast<uint32_t>(ne.size());
  for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
  t.type = type;
  t.offset = offset;
  t.nbytes = static_cast<uint64_t>(ir::WeightBytes(type, ne));
  return t;
}

// The tensor table of the tiny model, offsets padded to 32 bytes (as in tiny_model_ir.h).
std::vector<TensorInfo> TinyTensors() {
  return {
      Tensor("token_embd.weight", {8, 10}, 0),
      Tensor("output_norm.weight", {8}, 320),
      Tensor("blk.0.attn_norm.weight", {8}, 352),
      Tensor("blk.0.attn_q.weight", {8, 16}, 384),
      Tensor("blk.0.attn_k.weight", {8, 8}, 896),
      Tensor("blk.0.attn_v.weight", {8, 8}, 1152),
      Tensor("blk.0.attn_output.weight", {16, 8}, 1408),
      Tensor("blk.0.attn_q_norm.weight", {8}, 1920),
      Tensor("blk.0.attn_k_norm.weight", {8}, 1952),
      Tensor("blk.0.ffn_norm.weight", {8}, 1984),
      Tensor("blk.0.ffn_gate.weight", {8, 16}, 2016),
      Tensor("blk.0.ffn_up.weight", {8, 16}, 2528),
      Tensor("blk.0.ffn_down.weight", {16, 8}, 3040),
  };
}

std::string ConfigError(const std::vector<KeyValue>& md) {
  auto c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  EXPECT_FALSE(c.ok());
  return std::string(c.status().message());
}

std::string TensorError(const std::vector<TensorInfo>& tensors) {
  auto c = ReadQwen3Config(TinyMetadata(), tensors, "m.gguf");
  EXPECT_TRUE(c.ok()) << c.status();
  auto g = BuildQwen3Graph(*c, tensors, "m.gguf");
  EXPECT_FALSE(g.ok());
  return std::string(g.status().message());
}

TEST(Qwen3ConfigTest, ReadsTheHyperParameters) {
  auto c = ReadQwen3Config(TinyMetadata(), TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  const ir::ModelConfig want{"qwen3", 8, 1, 2, 1, 8, 16, 10, 64, 1e6f, 0.5f, 1e-5f, true};
  EXPECT_EQ(*c, want);
}

TEST(Qwen3GraphTest, BuildsTheHandWrittenGraph) {
  auto c = ReadQwen3Config(TinyMetadata(), TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  auto g = BuildQwen3Graph(*c, TinyTensors(), "m.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::Print(*g), testing::kTinyModelIr);
  passes::testing::ExpectAttributesMatchConfig(ir::Print(*g));
}

TEST(Qwen3GraphTest, OutputWeightUntiesTheEmbeddings) {
  std::vector<TensorInfo> tensors = TinyTensors();
  tensors.push_back(Tensor("output.weight", {8, 10}, 3552));
  auto c = ReadQwen3Config(TinyMetadata(), tensors, "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->tied_embeddings);
  auto g = BuildQwen3Graph(*c, tensors, "m.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string want = absl::StrReplaceAll(
      testing::kTinyModelIr,
      {{" tied_embeddings\n", "\n"},
       {"offset=3040 size=512\n",
        "offset=3040 size=512\nweight output.weight f32 {8,10} offset=3552 size=320\n"},
       {"logits(%out_norm; @token_embd.weight)", "logits(%out_norm; @output.weight)"}});
  EXPECT_EQ(ir::Print(*g), want);
}

TEST(Qwen3GraphTest, LayersRepeatWithTheirOwnCache) {
  auto md = TinyMetadata();
  Set(md, "qwen3.block_count", U32(3));
  std::vector<TensorInfo> tensors = {TinyTensors()[0], TinyTensors()[1]};
  for (int l = 0; l < 3; ++l) {
    for (size_t i = 2; i < TinyTensors().size(); ++i) {
      TensorInfo t = TinyTensors()[i];
      t.name = absl::StrReplaceAll(t.name, {{"blk.0.", "blk." + std::to_string(l) + "."}});
      tensors.push_back(t);
    }
  }
  auto c = ReadQwen3Config(md, tensors, "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  auto g = BuildQwen3Graph(*c, tensors, "m.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes.size(), 3u * 18 + 4);
  EXPECT_EQ(g->kv_dtypes.size(), 3u);
  std::vector<int64_t> append_layers;
  for (const ir::Node& n : g->nodes) {
    if (n.op == ir::OpKind::kKvAppend) append_layers.push_back(n.attrs_as<ir::KvAppendAttrs>().layer);
  }
  EXPECT_EQ(append_layers, (std::vector<int64_t>{0, 1, 2}));
  // Layer 2's attention input comes from layer 1's output.
  auto attn_in = g->FindValue("blk.2.attn_in");
  ASSERT_TRUE(attn_in.has_value());
  EXPECT_EQ(g->name_of(g->nodes[g->ProducerIndex()[*attn_in]].inputs[0]), "blk.1.out");
}

TEST(Qwen3ConfigTest, RefusesOtherArchitecturesByName) {
  auto md = TinyMetadata();
  Set(md, "general.architecture", Str("llama"));
  EXPECT_THAT(ConfigError(md),
              HasSubstr("m.gguf: architecture 'llama' is not supported; jllm builds graphs for "
                        "'qwen3' only"));
}

TEST(Qwen3ConfigTest, KeyTypesAreStrict) {
  auto md = TinyMetadata();
  Set(md, "qwen3.block_count", I32(1));
  EXPECT_THAT(ConfigError(md),
              HasSubstr("m.gguf: key 'qwen3.block_count' has type INT32, expected UINT32"));
  md = TinyMetadata();
  Set(md, "qwen3.attention.layer_norm_rms_epsilon", F64(1e-6));
  EXPECT_THAT(ConfigError(md), HasSubstr("key 'qwen3.attention.layer_norm_rms_epsilon' has type "
                                         "FLOAT64, expected FLOAT32"));
}

TEST(Qwen3ConfigTest, RequiredKeysAreNamed) {
  for (const char* key : {"qwen3.context_length", "qwen3.embedding_length", "qwen3.block_count",
                          "qwen3.attention.layer_norm_rms_epsilon", "qwen3.attention.head_count",
                          "qwen3.feed_forward_length"}) {
    auto md = TinyMetadata();
    Erase(md, key);
    EXPECT_THAT(ConfigError(md), HasSubstr(std::string("key '") + key + "' is missing"));
  }
  auto md = TinyMetadata();
  Erase(md, "tokenizer.ggml.tokens");
  EXPECT_THAT(ConfigError(md), HasSubstr("key 'tokenizer.ggml.tokens' is missing"));
}

TEST(Qwen3ConfigTest, PerLayerArraysMustBeUniform) {
  auto md = TinyMetadata();
  Set(md, "qwen3.attention.head_count", IntArray(ValueType::kInt32, {2}));
  Set(md, "qwen3.feed_forward_length", IntArray(ValueType::kUint32, {16}));
  auto c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->n_head, 2);
  EXPECT_EQ(c->n_ff, 16);

  Set(md, "qwen3.block_count", U32(2));
  Set(md, "qwen3.feed_forward_length", IntArray(ValueType::kInt32, {16, 32}));
  EXPECT_THAT(ConfigError(md), HasSubstr("key 'qwen3.feed_forward_length' differs between layers"));
  Set(md, "qwen3.feed_forward_length", IntArray(ValueType::kInt32, {16}));
  EXPECT_THAT(ConfigError(md), HasSubstr("has 1 entries for 2 layers"));
}

TEST(Qwen3ConfigTest, HeadDimComesFromKeyLength) {
  // 0.6B-like: E/H = 64 but D = 128. Here E=8, H=2 (E/H = 4) and key_length = 8.
  auto md = TinyMetadata();
  auto c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head_dim, 8);
  // Without key_length the default is E/H.
  Erase(md, "qwen3.attention.key_length");
  Erase(md, "qwen3.attention.value_length");
  c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->head_dim, 4);
}

TEST(Qwen3ConfigTest, DefaultsAndRopeScaling) {
  auto md = TinyMetadata();
  Erase(md, "qwen3.attention.head_count_kv");
  Erase(md, "qwen3.rope.freq_base");
  Set(md, "qwen3.rope.scaling.factor", F32(4.0f));
  auto c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->n_head_kv, 2);
  EXPECT_EQ(c->rope_base, 10000.0f);
  EXPECT_EQ(c->rope_freq_scale, 0.25f);
  Erase(md, "qwen3.rope.scaling.factor");
  Erase(md, "qwen3.rope.scaling.type");
  c = ReadQwen3Config(md, TinyTensors(), "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rope_freq_scale, 1.0f);

  Set(md, "qwen3.rope.scaling.type", Str("yarn"));
  EXPECT_THAT(ConfigError(md), HasSubstr("key 'qwen3.rope.scaling.type' is 'yarn'"));
  md = TinyMetadata();
  Set(md, "qwen3.rope.dimension_count", U32(2));
  EXPECT_THAT(ConfigError(md), HasSubstr("partial RoPE is not supported"));
  md = TinyMetadata();
  Set(md, "qwen3.attention.value_length", U32(4));
  EXPECT_THAT(ConfigError(md), HasSubstr("differs from the key length 8"));
  md = TinyMetadata();
  Set(md, "qwen3.attention.head_count_kv", U32(3));
  EXPECT_THAT(ConfigError(md), HasSubstr("n_head = 2 is not a multiple of n_head_kv = 3"));
}

TEST(Qwen3TensorTest, MissingTensorIsNamed) {
  auto tensors = TinyTensors();
  tensors.erase(tensors.begin() + 5);  // blk.0.attn_v.weight
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("m.gguf: tensor 'blk.0.attn_v.weight' is missing"));
}

TEST(Qwen3TensorTest, WrongShapeIsNamed) {
  auto tensors = TinyTensors();
  tensors[4] = Tensor("blk.0.attn_k.weight", {8, 16}, 896);
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("m.gguf: tensor 'blk.0.attn_k.weight' has ne {8, 16}, expected {8, 8}"));
}

TEST(Qwen3TensorTest, UnsupportedTypeIsNamed) {
  auto tensors = TinyTensors();
  tensors[10].type = GgmlType::kQ4_0;  // blk.0.ffn_gate.weight
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("tensor 'blk.0.ffn_gate.weight' has type q4_0, which jllm cannot run"));
  tensors = TinyTensors();
  tensors[1].type = GgmlType::kQ8_0;  // output_norm.weight
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("tensor 'output_norm.weight' has type q8_0, which jllm cannot run here "
                        "(norms: f32, f16, bf16)"));
}

TEST(Qwen3TensorTest, WrongByteSizeIsNamed) {
  auto tensors = TinyTensors();
  tensors[3].nbytes = 100;
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("tensor 'blk.0.attn_q.weight' is 100 bytes, expected 512"));
}

TEST(Qwen3TensorTest, UnexpectedTensorIsRefused) {
  auto tensors = TinyTensors();
  tensors.push_back(Tensor("blk.0.attn_q.bias", {8}, 3552));
  EXPECT_THAT(TensorError(tensors),
              HasSubstr("tensor 'blk.0.attn_q.bias' is not part of a qwen3 model with 1 layers"));
}

// End to end through a real file: GgufWriter writes it, GgufFile reads it, the builder builds.
TEST(Qwen3GraphTest, BuildsFromAGgufFile) {
  GgufWriter w;
  for (const KeyValue& kv : TinyMetadata()) w.SetValue(kv.key, kv.value);
  for (const TensorInfo& t : TinyTensors()) {
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    ASSERT_TRUE(w.AddTensor(t.name, t.type, ne, std::vector<uint8_t>(t.nbytes, 0)).ok());
  }
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "qwen3_tiny.gguf").string();
  ASSERT_TRUE(w.Write(path).ok());
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto g = BuildQwen3Graph(**file);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::Print(*g), testing::kTinyModelIr);
  std::filesystem::remove(path);
}

// A two-layer model with a Q4_K_M-like mix (attn_v q6_K in layer 0 only, as use_more_bits
// would pick for the first layers) through the builder and every pass. E = 512, H = 2, D = 128:
// E/H = 256 differs from D, as in Qwen3-0.6B.
TEST(Qwen3GraphTest, Q4KMMixThroughAllPasses) {
  auto md = TinyMetadata();
  Set(md, "qwen3.block_count", U32(2));
  Set(md, "qwen3.embedding_length", U32(512));
  Set(md, "qwen3.feed_forward_length", U32(512));
  Set(md, "qwen3.attention.key_length", U32(128));
  Set(md, "qwen3.attention.value_length", U32(128));
  Set(md, "tokenizer.ggml.tokens", Tokens(16));
  const GgmlType q4 = GgmlType::kQ4_K, q6 = GgmlType::kQ6_K;
  std::vector<TensorInfo> tensors = {Tensor("token_embd.weight", {512, 16}, 0, q6),
                                     Tensor("output_norm.weight", {512}, 0)};
  for (int l = 0; l < 2; ++l) {
    auto blk = [l](const char* name) { return absl::StrCat("blk.", l, ".", name); };
    tensors.push_back(Tensor(blk("attn_norm.weight"), {512}, 0));
    tensors.push_back(Tensor(blk("attn_q.weight"), {512, 256}, 0, q4));
    tensors.push_back(Tensor(blk("attn_k.weight"), {512, 128}, 0, q4));
    tensors.push_back(Tensor(blk("attn_v.weight"), {512, 128}, 0, l == 0 ? q6 : q4));
    tensors.push_back(Tensor(blk("attn_output.weight"), {256, 512}, 0, q4));
    tensors.push_back(Tensor(blk("attn_q_norm.weight"), {128}, 0));
    tensors.push_back(Tensor(blk("attn_k_norm.weight"), {128}, 0));
    tensors.push_back(Tensor(blk("ffn_norm.weight"), {512}, 0));
    tensors.push_back(Tensor(blk("ffn_gate.weight"), {512, 512}, 0, q4));
    tensors.push_back(Tensor(blk("ffn_up.weight"), {512, 512}, 0, q4));
    tensors.push_back(Tensor(blk("ffn_down.weight"), {512, 512}, 0, q6));
  }
  auto c = ReadQwen3Config(md, tensors, "m.gguf");
  ASSERT_TRUE(c.ok()) << c.status();
  auto g = BuildQwen3Graph(*c, tensors, "m.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  auto runs = passes::RunPipeline(*g, passes::DefaultPipelineConfig());
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ((*runs)[0].report, "grouped 2 q/k/v triples (q4_K+q4_K+q4_K x1, q4_K+q4_K+q6_K x1)");
  // Per layer: qkv group, qk norm/rope/append, attention, attn_output+residual,
  // gate/up group with swiglu, ffn_down+residual; plus embed, final norm, logits, sample.
  EXPECT_EQ(g->nodes.size(), 2u * 6 + 4);
  passes::testing::ExpectAttributesMatchConfig(ir::Print(*g));
  auto text = ir::Parse(ir::Print(*g));
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, *g);
  auto binary = ir::DeserializeGraph(ir::SerializeGraph(*g));
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(*binary, *g);
}

}  // namespace
}  // namespace jllm::gguf
