// HF checkpoint import: a tiny Qwen3 folder written here (config.json, two safetensors shards in
// F32 / BF16 / F16, optionally tokenizer files) is converted, and the GGUF read back with the
// GGUF reader: metadata, tensor table, and values (expected values come from the formula that
// wrote the folder; the Q4_K_M mix is worked out by hand from FORMATS.md §4).
#include "frontends/gguf/hf_import.h"

#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/gguf_file.h"
#include "quant/quant.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/gguf/safetensors_builder.h"

namespace jllm::gguf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::BuildSafetensors;
using testing::StEntry;

// E 256, 2 layers, 2 heads / 1 kv head of 128, FFN 512, vocab 300: every K-quant row fits.
constexpr int64_t kE = 256, kLayers = 2, kHeads = 2, kKvHeads = 1, kD = 128, kF = 512, kV = 300;

struct HfTensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool norm;
  int layer = -1;  // -1 outside model.layers.N
};

std::vector<HfTensorSpec> QwenTensors(bool with_lm_head) {
  std::vector<HfTensorSpec> t = {{"model.embed_tokens.weight", {kV, kE}, false},
                                 {"model.norm.weight", {kE}, true}};
  if (with_lm_head) t.push_back({"lm_head.weight", {kV, kE}, false});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    const size_t first = t.size();
    t.push_back({p + "input_layernorm.weight", {kE}, true});
    t.push_back({p + "self_attn.q_proj.weight", {kHeads * kD, kE}, false});
    t.push_back({p + "self_attn.k_proj.weight", {kKvHeads * kD, kE}, false});
    t.push_back({p + "self_attn.v_proj.weight", {kKvHeads * kD, kE}, false});
    t.push_back({p + "self_attn.o_proj.weight", {kE, kHeads * kD}, false});
    t.push_back({p + "self_attn.q_norm.weight", {kD}, true});
    t.push_back({p + "self_attn.k_norm.weight", {kD}, true});
    t.push_back({p + "post_attention_layernorm.weight", {kE}, true});
    t.push_back({p + "mlp.gate_proj.weight", {kF, kE}, false});
    t.push_back({p + "mlp.up_proj.weight", {kF, kE}, false});
    t.push_back({p + "mlp.down_proj.weight", {kE, kF}, false});
    for (size_t k = first; k < t.size(); ++k) t[k].layer = l;
  }
  return t;
}

// Element i of tensor number k: a multiple of 1/1024 in (-1, 1) for matrices, 1 + that for
// norms. Such values are exact in f16 and in f32; bf16 keeps their top 16 bits.
float Value(int k, int64_t i, bool norm) {
  const int64_t n = (i * 7919 + k * 104729) % 2001 - 1000;
  const float x = static_cast<float>(n) / 1024.0f;
  return norm ? 1.0f + x : x;
}

uint16_t Bf16Bits(float f) {  // truncation: the test's expected value is the same truncation
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16);
}


// The f32 value each element of each HF tensor stands for, decoded from the bytes WriteFolder
// wrote (bf16: the bits shifted up; f16: IEEE half; f32: as is). Filled by WriteFolder.
std::map<std::string, std::vector<float>>& WrittenValues() {
  static std::map<std::string, std::vector<float>> values;
  return values;
}

struct FolderOptions {
  bool tied = true;
  std::string config_extra;      // extra JSON members for config.json (with a leading comma)
  std::string rope = R"("rope_theta": 1000000.0)";
  std::string skip;              // an HF tensor to leave out
  std::string extra;             // an extra HF tensor to add (F32, shape [4])
  bool duplicate_in_shard2 = false;
  bool tokenizer = false;
  std::string architectures = R"(["Qwen3ForCausalLM"])";
};

// The folder every checkpoint and GGUF of this process's tests is written under (CTest runs the
// tests in parallel processes), removed when the process's tests end.
const fs::path& WorkDir() {
  static const fs::path* dir = new fs::path(fs::path(::testing::TempDir()) / ("jllm_hf_import_" + std::to_string(getpid())));
  return *dir;
}
class RemoveWorkDir : public ::testing::Environment {
 public:
  void TearDown() override { fs::remove_all(WorkDir()); }
};
[[maybe_unused]] ::testing::Environment* const kRemoveWorkDir = ::testing::AddGlobalTestEnvironment(new RemoveWorkDir);

// Shard 1: embedding, norm, lm_head and layer 0 in F32. Shard 2: layer 1 matrices in BF16 and
// its norms in F16.
std::string WriteFolder(const std::string& name, const FolderOptions& o = {}) {
  const fs::path dir = WorkDir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": )" << o.architectures
      << R"(, "model_type": "qwen3", "hidden_size": 256, "num_hidden_layers": 2,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128,
        "intermediate_size": 512, "vocab_size": 300, "max_position_embeddings": 1024,
        "rms_norm_eps": 1e-06, "hidden_act": "silu", "attention_bias": false,
        "use_sliding_window": false, "tie_word_embeddings": )"
      << (o.tied ? "true" : "false") << ", " << o.rope << o.config_extra << "}";

  std::vector<StEntry> shard1, shard2;
  const auto specs = QwenTensors(!o.tied);
  for (size_t k = 0; k < specs.size(); ++k) {
    const HfTensorSpec& s = specs[k];
    if (s.name == o.skip) continue;
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    StEntry e{s.name, "F32", s.shape, {}};
    std::vector<float>& written = WrittenValues()[s.name];
    written.resize(static_cast<size_t>(n));
    if (s.layer != 1) {
      for (int64_t i = 0; i < n; ++i) written[i] = Value(static_cast<int>(k), i, s.norm);
      e.bytes = testing::F32Bytes(written);
      shard1.push_back(std::move(e));
    } else {
      std::vector<uint16_t> h(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const float x = Value(static_cast<int>(k), i, s.norm);
        h[i] = s.norm ? quant::F32ToFp16(x) : Bf16Bits(x);
        // f16 holds these values exactly; bf16 keeps the top 16 bits of the f32.
        written[i] = s.norm ? x : std::bit_cast<float>(static_cast<uint32_t>(h[i]) << 16);
      }
      e.dtype = s.norm ? "F16" : "BF16";
      e.bytes = testing::U16Bytes(h);
      shard2.push_back(std::move(e));
    }
  }
  if (!o.extra.empty()) shard2.push_back({o.extra, "F32", {4}, testing::F32Bytes({1, 2, 3, 4})});
  if (o.duplicate_in_shard2) shard2.push_back(shard1[0]);
  testing::WriteBytes((dir / "model-00001-of-00002.safetensors").string(), BuildSafetensors(shard1));
  testing::WriteBytes((dir / "model-00002-of-00002.safetensors").string(), BuildSafetensors(shard2));
  if (o.tokenizer) {
    std::ofstream(dir / "tokenizer.json") << R"({"normalizer": {"type": "NFC"},
      "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated"},
        {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
      "added_tokens": [{"id": 4, "content": "<|endoftext|>", "special": true}],
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3}, "merges": ["a b"]}})";
    std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|endoftext|>"})";
  }
  return dir.string();
}

float Expected(const std::string& hf_name, int64_t i, bool /*tied*/) {
  auto it = WrittenValues().find(hf_name);
  if (it == WrittenValues().end() || i >= static_cast<int64_t>(it->second.size())) {
    ADD_FAILURE() << "no HF tensor " << hf_name;
    return 0;
  }
  return it->second[static_cast<size_t>(i)];
}

std::vector<float> Dequantized(const GgufFile& f, const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  absl::Status s = quant::DequantizeRow(t.type, f.TensorData(t).data(), v.data(), t.n_elements());
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

absl::StatusOr<std::unique_ptr<GgufFile>> Convert(const std::string& dir, SynthWeights w,
                                                  const std::string& out_name) {
  HfImportOptions o;
  o.dir = dir;
  o.weights = w;
  o.threads = 2;
  o.allow_no_tokenizer = true;  // most folders here carry no tokenizer files
  const std::string out = (WorkDir() / out_name).string();
  auto summary = ImportHfCheckpoint(o, out);
  if (!summary.ok()) return summary.status();
  EXPECT_EQ(summary->shard_files.size(), 2u);
  return GgufFile::Open(out);
}

TEST(HfImportTest, MapsNamesAsTheGgufConverter) {
  EXPECT_EQ(HfTensorName("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(HfTensorName("output.weight"), "lm_head.weight");
  EXPECT_EQ(HfTensorName("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(HfTensorName("blk.12.attn_q.weight"), "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(HfTensorName("blk.0.attn_k_norm.weight"), "model.layers.0.self_attn.k_norm.weight");
  EXPECT_EQ(HfTensorName("blk.3.attn_output.weight"), "model.layers.3.self_attn.o_proj.weight");
  EXPECT_EQ(HfTensorName("blk.3.ffn_norm.weight"), "model.layers.3.post_attention_layernorm.weight");
  EXPECT_EQ(HfTensorName("blk.3.attn_norm.weight"), "model.layers.3.input_layernorm.weight");
  EXPECT_EQ(HfTensorName("blk.3.ffn_down.weight"), "model.layers.3.mlp.down_proj.weight");
  EXPECT_EQ(HfTensorName("blk.3.nonsense.weight"), "");
}

TEST(HfImportTest, F32KeepsEveryValueAndWritesTheQwen3Metadata) {
  auto f = Convert(WriteFolder("hf_f32"), SynthWeights::kF32, "hf_f32.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.GetString("general.architecture"), "qwen3");
  EXPECT_EQ(*g.GetString("general.name"), "hf_f32");
  EXPECT_EQ(*g.GetUint32("general.file_type"), 0u);
  EXPECT_EQ(*g.GetUint32("qwen3.embedding_length"), 256u);
  EXPECT_EQ(*g.GetUint32("qwen3.block_count"), 2u);
  EXPECT_EQ(*g.GetUint32("qwen3.attention.head_count"), 2u);
  EXPECT_EQ(*g.GetUint32("qwen3.attention.head_count_kv"), 1u);
  EXPECT_EQ(*g.GetUint32("qwen3.attention.key_length"), 128u);
  EXPECT_EQ(*g.GetUint32("qwen3.attention.value_length"), 128u);
  EXPECT_EQ(*g.GetUint32("qwen3.feed_forward_length"), 512u);
  EXPECT_EQ(*g.GetUint32("qwen3.context_length"), 1024u);
  EXPECT_EQ(*g.GetFloat32("qwen3.rope.freq_base"), 1e6f);
  EXPECT_EQ(*g.GetFloat32("qwen3.attention.layer_norm_rms_epsilon"), 1e-6f);
  EXPECT_EQ(g.FindTensor("output.weight"), nullptr);  // tied
  ASSERT_EQ(g.tensors().size(), 2u + 11u * kLayers);

  // Placeholder vocabulary: 256 byte tokens, then unused slots.
  auto tok = ReadTokenizerData(g);
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_EQ(tok->tokens.size(), static_cast<size_t>(kV));
  EXPECT_EQ(tok->tokens['A'], "A");
  EXPECT_EQ(tok->tokens[256], "[PAD256]");
  EXPECT_EQ(tok->token_types[299], TokenType::kUnused);
  EXPECT_FALSE(tok->eos_id.has_value());

  for (const TensorInfo& t : g.tensors()) {
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.type, GgmlType::kF32);
    const std::string hf = HfTensorName(t.name);
    const std::vector<float> v = Dequantized(g, t);
    for (int64_t i = 0; i < t.n_elements(); i += 97) ASSERT_EQ(v[i], Expected(hf, i, true)) << i;
  }
  // ne is the HF shape reversed: (out, in) -> {in, out}.
  const TensorInfo* q = g.FindTensor("blk.1.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->ne[0], kE);
  EXPECT_EQ(q->ne[1], kHeads * kD);
  const TensorInfo* down = g.FindTensor("blk.0.ffn_down.weight");
  EXPECT_EQ(down->ne[0], kF);
  EXPECT_EQ(down->ne[1], kE);
}

TEST(HfImportTest, UntiedHeadAndRopeParametersAndTokenizer) {
  FolderOptions o;
  o.tied = false;
  o.rope = R"("rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0})";
  o.tokenizer = true;
  auto f = Convert(WriteFolder("hf_untied", o), SynthWeights::kF32, "hf_untied.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->GetFloat32("qwen3.rope.freq_base"), 5e6f);
  const TensorInfo* out = (*f)->FindTensor("output.weight");
  ASSERT_NE(out, nullptr);
  const std::vector<float> v = Dequantized(**f, *out);
  for (int64_t i = 0; i < out->n_elements(); i += 31) ASSERT_EQ(v[i], Expected("lm_head.weight", i, false));
  auto tok = ReadTokenizerData(**f);
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_EQ(tok->tokens.size(), static_cast<size_t>(kV));
  EXPECT_EQ(tok->tokens[2], "ab");
  EXPECT_EQ(tok->tokens[4], "<|endoftext|>");
  EXPECT_EQ(tok->tokens[5], "[PAD5]");
  EXPECT_EQ(tok->eos_id, 4u);
}

TEST(HfImportTest, Q8_0StaysWithinOneQuantizationStep) {
  auto f = Convert(WriteFolder("hf_q8"), SynthWeights::kQ8_0, "hf_q8.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->GetUint32("general.file_type"), 7u);
  for (const TensorInfo& t : (*f)->tensors()) {
    SCOPED_TRACE(t.name);
    const bool norm = t.n_dims == 1;
    EXPECT_EQ(t.type, norm ? GgmlType::kF32 : GgmlType::kQ8_0);
    const std::vector<float> v = Dequantized(**f, t);
    const std::string hf = HfTensorName(t.name);
    for (int64_t b = 0; b < t.n_elements(); b += 32) {
      float amax = 0;
      for (int j = 0; j < 32 && b + j < t.n_elements(); ++j) amax = std::max(amax, std::fabs(Expected(hf, b + j, true)));
      for (int j = 0; j < 32 && b + j < t.n_elements(); ++j) {
        // Q8_0: x = d * q with d = amax / 127 (stored as f16): error at most half a step, plus
        // the f16 rounding of d over 127 steps.
        ASSERT_NEAR(v[b + j], Expected(hf, b + j, true), amax / 127 * 0.5f + amax * 1e-3f) << b + j;
      }
    }
  }
}

TEST(HfImportTest, Q4KMUsesTheLlamaQuantizeMix) {
  auto f = Convert(WriteFolder("hf_q4km"), SynthWeights::kQ4_K_M, "hf_q4km.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*(*f)->GetUint32("general.file_type"), 15u);
  // FORMATS.md §4 with n_layer = 2: use_more_bits(i, 2) = i < 0 || i >= 1 || (i - 0) % 3 == 2,
  // true for layer 1 only. Tied embeddings: token_embd follows the output rule (Q6_K).
  const std::map<std::string, GgmlType> expected = {
      {"token_embd.weight", GgmlType::kQ6_K},       {"output_norm.weight", GgmlType::kF32},
      {"blk.0.attn_v.weight", GgmlType::kQ4_K},     {"blk.1.attn_v.weight", GgmlType::kQ6_K},
      {"blk.0.ffn_down.weight", GgmlType::kQ4_K},   {"blk.1.ffn_down.weight", GgmlType::kQ6_K},
      {"blk.0.attn_q.weight", GgmlType::kQ4_K},     {"blk.1.attn_k.weight", GgmlType::kQ4_K},
      {"blk.1.attn_output.weight", GgmlType::kQ4_K}, {"blk.0.ffn_gate.weight", GgmlType::kQ4_K},
      {"blk.1.ffn_up.weight", GgmlType::kQ4_K},     {"blk.1.attn_q_norm.weight", GgmlType::kF32},
      {"blk.0.ffn_norm.weight", GgmlType::kF32},
  };
  for (const auto& [name, type] : expected) {
    const TensorInfo* t = (*f)->FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, type) << name;
  }
  // llama-quantize's order: non-blk tensors first, then by layer, then by name.
  const auto& ts = (*f)->tensors();
  EXPECT_EQ(ts[0].name, "output_norm.weight");
  EXPECT_EQ(ts[1].name, "token_embd.weight");
  EXPECT_EQ(ts[2].name, "blk.0.attn_k.weight");
  // Q4_K keeps a 4-bit grid per 32 elements: error below 1/15 of a sub-block's range here.
  const TensorInfo* gate = (*f)->FindTensor("blk.0.ffn_gate.weight");
  const std::vector<float> v = Dequantized(**f, *gate);
  for (int64_t i = 0; i < gate->n_elements(); i += 13) {
    ASSERT_NEAR(v[i], Expected("model.layers.0.mlp.gate_proj.weight", i, true), 2.0f / 15) << i;
  }
}

FolderOptions With(void (*set)(FolderOptions&)) {
  FolderOptions o;
  set(o);
  return o;
}

void ExpectImportError(const std::string& dir, const std::string& what,
                       bool allow_no_tokenizer = true) {
  HfImportOptions o;
  o.dir = dir;
  o.allow_no_tokenizer = allow_no_tokenizer;
  const std::string out = (WorkDir() / "hf_should_not_exist.gguf").string();
  auto s = ImportHfCheckpoint(o, out);
  ASSERT_FALSE(s.ok()) << "expected an error about " << what;
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(what));
  EXPECT_FALSE(fs::exists(out));
}

TEST(HfImportTest, RefusesWhatItCannotConvert) {
  ExpectImportError(WriteFolder("hf_missing", With([](FolderOptions& o) { o.skip = "model.layers.1.mlp.up_proj.weight"; })),
                    "model.layers.1.mlp.up_proj.weight");
  ExpectImportError(WriteFolder("hf_extra", With([](FolderOptions& o) { o.extra = "model.layers.0.self_attn.q_proj.bias"; })),
                    "model.layers.0.self_attn.q_proj.bias");
  ExpectImportError(WriteFolder("hf_dup", With([](FolderOptions& o) { o.duplicate_in_shard2 = true; })), "in both");
  ExpectImportError(WriteFolder("hf_llama", With([](FolderOptions& o) { o.architectures = R"(["LlamaForCausalLM"])"; })),
                    "LlamaForCausalLM");
  ExpectImportError(WriteFolder("hf_yarn", With([](FolderOptions& o) { o.rope = R"("rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6})"; })),
                    "yarn");
  ExpectImportError(WriteFolder("hf_linear", With([](FolderOptions& o) {
                      o.rope = R"("rope_theta": 1e6, "rope_scaling": {"type": "linear", "factor": 2.0})";
                    })),
                    "linear");
  ExpectImportError(WriteFolder("hf_norope", With([](FolderOptions& o) { o.rope = R"("rope_scaling": null)"; })), "rope_theta");
  ExpectImportError(WriteFolder("hf_bias", With([](FolderOptions& o) { o.config_extra = R"(, "attention_bias": true)"; })), "attention_bias");
  ExpectImportError((WorkDir() / "hf_no_such_dir").string(), "config.json");
  // No tokenizer.json: refused unless the placeholder vocabulary is asked for.
  ExpectImportError(WriteFolder("hf_no_tokenizer"), "--allow-no-tokenizer",
                    /*allow_no_tokenizer=*/false);

  // Wrong shape: config.json says 2 layers of FFN 512; a folder claiming FFN 768 disagrees.
  const std::string wrong = WriteFolder("hf_shape", With([](FolderOptions& o) { o.config_extra = R"(, "intermediate_size": 768)"; }));
  ExpectImportError(wrong, "shape");

  // A key of the wrong type names the key.
  const std::string typed = WriteFolder("hf_typed", With([](FolderOptions& o) { o.config_extra = R"(, "num_hidden_layers": "two")"; }));
  ExpectImportError(typed, "num_hidden_layers");

  // A corrupt shard names the shard.
  const std::string corrupt = WriteFolder("hf_corrupt");
  {
    std::ofstream(fs::path(corrupt) / "model-00002-of-00002.safetensors",
                  std::ios::binary | std::ios::trunc) << "garbage";
  }
  ExpectImportError(corrupt, "model-00002-of-00002.safetensors");

  // The index must agree with the shards.
  const std::string indexed = WriteFolder("hf_index");
  std::ofstream(fs::path(indexed) / "model.safetensors.index.json")
      << R"({"weight_map": {"model.norm.weight": "model-00002-of-00002.safetensors"}})";
  ExpectImportError(indexed, "model.norm.weight");
}

}  // namespace
}  // namespace jllm::gguf
