// jllm-synth's model builder. The expected tensor tables are written out here from FORMATS.md's
// facts (Qwen3 shapes, llama-quantize's Q4_K_M layer lists and tensor order), not derived from
// the code under test; the tiny preset is written, re-read with GgufFile and its weights'
// statistics checked; determinism is checked on the file bytes.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "quant/quant.h"
#include "frontends/gguf/synth_model.h"
#include "gtest/gtest.h"
#include "tests/support/temp_files.h"
#include "tests/support/test_data.h"

namespace jllm::gguf {
namespace {

struct Expected {
  std::string name;
  std::vector<int64_t> ne;
  GgmlType type;
};

// The per-layer tensors in llama-quantize's order: sorted by name, where '.' < '_'.
constexpr const char* kLayerTensorsByName[] = {
    "attn_k.weight",   "attn_k_norm.weight", "attn_norm.weight", "attn_output.weight",
    "attn_q.weight",   "attn_q_norm.weight", "attn_v.weight",    "ffn_down.weight",
    "ffn_gate.weight", "ffn_norm.weight",    "ffn_up.weight"};

// Layers whose attn_v and ffn_down are Q6_K in a Q4_K_M file (FORMATS.md §4).
std::set<int> MoreBitsLayers(int n_layer) {
  std::set<int> s;
  auto range = [&](int lo, int hi, int step) {
    for (int i = lo; i <= hi; i += step) s.insert(i);
  };
  switch (n_layer) {
    case 28:
      range(0, 2, 1);
      range(5, 23, 3);
      range(23, 27, 1);
      break;
    case 36:
      range(0, 3, 1);
      range(6, 30, 3);
      range(31, 35, 1);
      break;
    case 40:
      range(0, 4, 1);
      range(7, 34, 3);
      range(35, 39, 1);
      break;
    case 64:
      range(0, 7, 1);
      range(10, 55, 3);
      range(56, 63, 1);
      break;
    default:
      ADD_FAILURE() << "no FORMATS.md list for " << n_layer << " layers";
  }
  return s;
}

struct Shape {
  int64_t E, layers, H, Hkv, D, F, V;
  bool tied;
};

// A Qwen3 Q4_K_M tensor table built from the facts alone.
std::vector<Expected> ExpectedQ4KM(const Shape& s) {
  const std::set<int> more_bits = MoreBitsLayers(static_cast<int>(s.layers));
  std::vector<Expected> t;
  if (!s.tied) t.push_back({"output.weight", {s.E, s.V}, GgmlType::kQ6_K});
  t.push_back({"output_norm.weight", {s.E}, GgmlType::kF32});
  t.push_back({"token_embd.weight", {s.E, s.V}, s.tied ? GgmlType::kQ6_K : GgmlType::kQ4_K});
  for (int i = 0; i < s.layers; ++i) {
    const GgmlType vd = more_bits.count(i) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    for (const char* n : kLayerTensorsByName) {
      const std::string name = "blk." + std::to_string(i) + "." + n;
      const std::string_view k = n;
      if (k == "attn_k.weight" || k == "attn_v.weight") {
        t.push_back({name, {s.E, s.Hkv * s.D}, k == "attn_v.weight" ? vd : GgmlType::kQ4_K});
      } else if (k == "attn_q.weight") {
        t.push_back({name, {s.E, s.H * s.D}, GgmlType::kQ4_K});
      } else if (k == "attn_output.weight") {
        t.push_back({name, {s.H * s.D, s.E}, GgmlType::kQ4_K});
      } else if (k == "attn_k_norm.weight" || k == "attn_q_norm.weight") {
        t.push_back({name, {s.D}, GgmlType::kF32});
      } else if (k == "attn_norm.weight" || k == "ffn_norm.weight") {
        t.push_back({name, {s.E}, GgmlType::kF32});
      } else if (k == "ffn_down.weight") {
        t.push_back({name, {s.F, s.E}, vd});
      } else {  // ffn_gate, ffn_up
        t.push_back({name, {s.E, s.F}, GgmlType::kQ4_K});
      }
    }
  }
  return t;
}

void ExpectTable(const SynthPlan& plan, const std::vector<Expected>& want) {
  ASSERT_EQ(plan.tensors.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const SynthTensor& got = plan.tensors[i];
    EXPECT_EQ(got.name, want[i].name) << "tensor #" << i;
    EXPECT_EQ(got.ne, want[i].ne) << want[i].name;
    EXPECT_EQ(got.type, want[i].type) << want[i].name << ": " << GgmlTypeName(got.type);
  }
}

SynthPlan Plan(const std::string& preset, SynthWeights w) {
  auto config = SynthPreset(preset);
  EXPECT_TRUE(config.ok()) << config.status();
  auto plan = PlanSynthModel(*config, w);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

TEST(SynthPlanTest, Qwen3_4B_Q4_K_M_MatchesTheRealTensorTable) {
  const SynthPlan plan = Plan("4b", SynthWeights::kQ4_K_M);
  ExpectTable(plan, ExpectedQ4KM({2560, 36, 32, 8, 128, 9728, 151936, true}));
  EXPECT_EQ(plan.tensors.size(), 2u + 36 * 11);
  EXPECT_EQ(plan.file_type, 15u);
  // Qwen3-4B has 4.02 B parameters (tied embeddings counted once).
  EXPECT_NEAR(plan.n_params() / 1e9, 4.022, 0.001);
}

TEST(SynthPlanTest, OtherSizesFollowTheSameRules) {
  ExpectTable(Plan("0.6b", SynthWeights::kQ4_K_M),
              ExpectedQ4KM({1024, 28, 16, 8, 128, 3072, 151936, true}));
  ExpectTable(Plan("1.7b", SynthWeights::kQ4_K_M),
              ExpectedQ4KM({2048, 28, 16, 8, 128, 6144, 151936, true}));
  ExpectTable(Plan("8b", SynthWeights::kQ4_K_M),
              ExpectedQ4KM({4096, 36, 32, 8, 128, 12288, 151936, false}));
  ExpectTable(Plan("14b", SynthWeights::kQ4_K_M),
              ExpectedQ4KM({5120, 40, 40, 8, 128, 17408, 151936, false}));
  ExpectTable(Plan("32b", SynthWeights::kQ4_K_M),
              ExpectedQ4KM({5120, 64, 64, 8, 128, 25600, 151936, false}));
}

TEST(SynthPlanTest, UntiedModelsPutOutputFirstAndKeepTokenEmbdAtQ4_K) {
  const SynthPlan plan = Plan("8b", SynthWeights::kQ4_K_M);
  ASSERT_GE(plan.tensors.size(), 3u);
  EXPECT_EQ(plan.tensors[0].name, "output.weight");
  EXPECT_EQ(plan.tensors[0].type, GgmlType::kQ6_K);
  EXPECT_EQ(plan.tensors[1].name, "output_norm.weight");
  EXPECT_EQ(plan.tensors[2].name, "token_embd.weight");
  EXPECT_EQ(plan.tensors[2].type, GgmlType::kQ4_K);
}

TEST(SynthPlanTest, PureTypesApplyToEveryMatrixAndKeepNormsF32) {
  const struct {
    SynthWeights w;
    GgmlType type;
    uint32_t file_type;  // llama.cpp LLAMA_FTYPE_*
  } cases[] = {
      {SynthWeights::kF32, GgmlType::kF32, 0},    {SynthWeights::kF16, GgmlType::kF16, 1},
      {SynthWeights::kBF16, GgmlType::kBF16, 32}, {SynthWeights::kQ8_0, GgmlType::kQ8_0, 7},
      {SynthWeights::kQ4_K, GgmlType::kQ4_K, 15}, {SynthWeights::kQ5_K, GgmlType::kQ5_K, 17},
      {SynthWeights::kQ6_K, GgmlType::kQ6_K, 18},
  };
  for (const auto& c : cases) {
    const SynthPlan plan = Plan("0.6b", c.w);
    EXPECT_EQ(plan.file_type, c.file_type) << SynthWeightsName(c.w);
    for (const SynthTensor& t : plan.tensors) {
      const bool norm = t.name.ends_with("_norm.weight");
      EXPECT_EQ(t.type, norm ? GgmlType::kF32 : c.type) << t.name << " " << SynthWeightsName(c.w);
    }
  }
}

TEST(SynthPlanTest, ParsesNamesAndRejectsUnknownOnes) {
  EXPECT_EQ(*ParseSynthWeights("q4_k_m"), SynthWeights::kQ4_K_M);
  EXPECT_EQ(*ParseSynthWeights("bf16"), SynthWeights::kBF16);
  const auto bad = ParseSynthWeights("q3_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("q4_k_m"), std::string::npos) << bad.status();
  const auto preset = SynthPreset("7b");
  ASSERT_FALSE(preset.ok());
  EXPECT_NE(preset.status().message().find("4b"), std::string::npos) << preset.status();
}

TEST(SynthPlanTest, BigPresetsNeedATokenizer) {
  SynthOptions options;
  options.preset = "4b";
  const auto plan = PlanForOptions(options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("tokenizer"), std::string::npos) << plan.status();
  options.tokenizer_dir = "/nonexistent";
  const auto with = PlanForOptions(options);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->config.n_vocab, 151936);
}

// --- written files ----------------------------------------------------------------------------

using ::jllm::testing::TempPath;
using ::jllm::testing::ReadFile;

class SynthFileTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::string Write(SynthOptions options, const std::string& name) {
    const std::string path = TempPath(name);
    paths_.push_back(path);
    auto summary = WriteSynthModel(options, path);
    EXPECT_TRUE(summary.ok()) << summary.status();
    return path;
  }
  std::vector<std::string> paths_;
};

TEST_F(SynthFileTest, TinyHasQwen3MetadataWithExactTypes) {
  const std::string path = Write(SynthOptions{}, "meta.gguf");
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  const GgufFile& f = **file;
  EXPECT_EQ(*f.GetString("general.architecture"), "qwen3");
  EXPECT_TRUE(f.GetString("general.name").ok());
  EXPECT_EQ(*f.GetUint32("general.file_type"), 15u);
  EXPECT_EQ(*f.GetUint32("general.quantization_version"), 2u);
  // GetUint32 / GetFloat32 accept only UINT32 / FLOAT32, as llama.cpp's loader.
  EXPECT_EQ(*f.GetUint32("qwen3.embedding_length"), 256u);
  EXPECT_EQ(*f.GetUint32("qwen3.block_count"), 4u);
  EXPECT_EQ(*f.GetUint32("qwen3.attention.head_count"), 4u);
  EXPECT_EQ(*f.GetUint32("qwen3.attention.head_count_kv"), 2u);
  EXPECT_EQ(*f.GetUint32("qwen3.attention.key_length"), 64u);
  EXPECT_EQ(*f.GetUint32("qwen3.attention.value_length"), 64u);
  EXPECT_EQ(*f.GetUint32("qwen3.feed_forward_length"), 768u);
  EXPECT_EQ(*f.GetUint32("qwen3.context_length"), 4096u);
  EXPECT_EQ(*f.GetUint32("qwen3.rope.dimension_count"), 64u);
  EXPECT_EQ(*f.GetFloat32("qwen3.rope.freq_base"), 1e6f);
  EXPECT_EQ(*f.GetFloat32("qwen3.attention.layer_norm_rms_epsilon"), 1e-6f);
  // The byte-level vocabulary sizes token_embd.
  auto tokens = f.GetStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  const TensorInfo* embd = f.FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->ne[0], 256);
  EXPECT_EQ(embd->ne[1], static_cast<int64_t>((*tokens)->size()));
  EXPECT_EQ(embd->type, GgmlType::kQ6_K);
  // 4 layers: use_more_bits gives layers 2 (the (i - n/8) % 3 == 2 rule) and 3 (i >= 7n/8).
  for (int i = 0; i < 4; ++i) {
    const GgmlType want = (i >= 2) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    for (const char* n : {"attn_v.weight", "ffn_down.weight"}) {
      const TensorInfo* t = f.FindTensor("blk." + std::to_string(i) + "." + n);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->type, want) << t->name;
    }
  }
  EXPECT_EQ(f.tensors().size(), 2u + 4 * 11);
}

struct Moments {
  double mean = 0, stddev = 0;
};

Moments Dequantized(const GgufFile& f, bool norms) {
  double sum = 0, sum2 = 0;
  int64_t n = 0;
  for (const TensorInfo& t : f.tensors()) {
    if (t.name.ends_with("_norm.weight") != norms) continue;
    std::vector<float> x(t.n_elements());
    const auto bytes = f.TensorData(t);
    EXPECT_EQ(bytes.size(), t.nbytes);
    const absl::Status s = quant::DequantizeRow(t.type, bytes.data(), x.data(), t.n_elements());
    EXPECT_TRUE(s.ok()) << t.name << ": " << s;
    for (float v : x) {
      sum += v;
      sum2 += double(v) * v;
    }
    n += t.n_elements();
  }
  Moments m;
  m.mean = sum / n;
  m.stddev = std::sqrt(sum2 / n - m.mean * m.mean);
  return m;
}

void ExpectWeightStatistics(const std::string& path) {
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  // Matrices: N(0, 0.02) through Q4_K/Q6_K (whose ~7% relative error adds < 0.3% to the std).
  // ~2.6 M samples: the sample mean and std are within 0.1% of sigma of the truth.
  const Moments m = Dequantized(**file, /*norms=*/false);
  EXPECT_NEAR(m.mean, 0.0, 0.0005);
  EXPECT_NEAR(m.stddev, 0.02, 0.0006);
  // Norms: N(1, 0.1), stored as F32. 2,816 samples: mean within ~0.002, std within ~3%.
  const Moments n = Dequantized(**file, /*norms=*/true);
  EXPECT_NEAR(n.mean, 1.0, 0.01);
  EXPECT_NEAR(n.stddev, 0.1, 0.01);
}

TEST_F(SynthFileTest, TinyExactWeightsHaveTheExpectedStatistics) {
  SynthOptions options;
  options.fill = SynthFill::kExact;
  ExpectWeightStatistics(Write(options, "exact.gguf"));
}

TEST_F(SynthFileTest, TinyPooledWeightsHaveTheExpectedStatistics) {
  SynthOptions options;
  options.fill = SynthFill::kPool;
  ExpectWeightStatistics(Write(options, "pool.gguf"));
}

TEST_F(SynthFileTest, SameSeedSameBytesDifferentSeedDifferentBytes) {
  for (SynthFill fill : {SynthFill::kExact, SynthFill::kPool}) {
    SynthOptions a;
    a.seed = 7;
    a.fill = fill;
    a.threads = 1;
    SynthOptions b = a;
    b.threads = 2;  // the thread count must not matter
    SynthOptions c = a;
    c.seed = 8;
    const std::string fa = ReadFile(Write(a, "a.gguf")), fb = ReadFile(Write(b, "b.gguf"));
    const std::string fc = ReadFile(Write(c, "c.gguf"));
    ASSERT_GT(fa.size(), 1000000u);
    EXPECT_TRUE(fa == fb);
    ASSERT_EQ(fa.size(), fc.size());
    EXPECT_FALSE(fa == fc);
    // Different seeds differ in the weights, not in the header.
    EXPECT_EQ(fa.substr(0, 4096), fc.substr(0, 4096));
  }
}

TEST_F(SynthFileTest, PureQ8_0TinyWithTheQwen3Tokenizer) {
  const std::string dir = ::jllm::testing::Qwen3TokenizerDir();
  JLLM_REQUIRE_TEST_DATA(!dir.empty(), "the Qwen3 tokenizer files are absent (../shared/qwen3, "
                                       ".deps/qwen3-tokenizer: scripts/setup.sh fetches them)");
  SynthOptions options;
  options.weights = SynthWeights::kQ8_0;
  options.tokenizer_dir = dir;
  auto file = GgufFile::Open(Write(options, "q8_0.gguf"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*(*file)->GetUint32("general.file_type"), 7u);
  EXPECT_EQ((*(*file)->GetStringArray("tokenizer.ggml.tokens"))->size(), 151936u);
  const TensorInfo* embd = (*file)->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->ne[1], 151936);
  for (const TensorInfo& t : (*file)->tensors()) {
    EXPECT_EQ(t.type, t.name.ends_with("_norm.weight") ? GgmlType::kF32 : GgmlType::kQ8_0)
        << t.name;
  }
}

}  // namespace
}  // namespace jllm::gguf
