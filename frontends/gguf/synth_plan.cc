#include "frontends/gguf/synth_plan.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jllm::gguf {
namespace {

// Qwen3 dense sizes (FORMATS.md §5): D = 128, Hkv = 8, V = 151936, theta 1e6, eps 1e-6,
// context 40960 for all of them.
struct PresetRow {
  const char* preset;
  const char* name;
  uint32_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, context;
  bool tied;
};

constexpr int64_t kQwen3Vocab = 151936;

constexpr PresetRow kPresets[] = {
    // CI-sized: every code path of the real models (GQA 2:1, q/k norms, tied head) at 4 layers.
    {"tiny", "jllm-synth tiny", 256, 4, 4, 2, 64, 768, 4096, true},
    {"0.6b", "jllm-synth Qwen3-0.6B", 1024, 28, 16, 8, 128, 3072, 40960, true},
    {"1.7b", "jllm-synth Qwen3-1.7B", 2048, 28, 16, 8, 128, 6144, 40960, true},
    {"4b", "jllm-synth Qwen3-4B", 2560, 36, 32, 8, 128, 9728, 40960, true},
    {"8b", "jllm-synth Qwen3-8B", 4096, 36, 32, 8, 128, 12288, 40960, false},
    {"14b", "jllm-synth Qwen3-14B", 5120, 40, 40, 8, 128, 17408, 40960, false},
    {"32b", "jllm-synth Qwen3-32B", 5120, 64, 64, 8, 128, 25600, 40960, false},
};

struct WeightsRow {
  SynthWeights weights;
  const char* name;
  GgmlType matrix_type;  // the one type of a pure mix; the default type of Q4_K_M
  uint32_t file_type;    // LLAMA_FTYPE_*
};

constexpr WeightsRow kWeights[] = {
    {SynthWeights::kQ4_K_M, "q4_k_m", GgmlType::kQ4_K, 15},
    {SynthWeights::kF32, "f32", GgmlType::kF32, 0},
    {SynthWeights::kF16, "f16", GgmlType::kF16, 1},
    {SynthWeights::kBF16, "bf16", GgmlType::kBF16, 32},
    {SynthWeights::kQ8_0, "q8_0", GgmlType::kQ8_0, 7},
    {SynthWeights::kQ4_K, "q4_k", GgmlType::kQ4_K, 15},
    {SynthWeights::kQ5_K, "q5_k", GgmlType::kQ5_K, 17},
    {SynthWeights::kQ6_K, "q6_k", GgmlType::kQ6_K, 18},
};

const WeightsRow& RowOf(SynthWeights w) {
  for (const auto& r : kWeights) {
    if (r.weights == w) return r;
  }
  return kWeights[0];
}

// llama-quantize's use_more_bits: the first and last eighth of the layers, and every third
// layer in between, get more bits for attn_v and ffn_down.
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// llama-quantize's fallback when a row is not a whole number of 256-element super-blocks.
absl::StatusOr<GgmlType> FitRow(const std::string& tensor, GgmlType type, int64_t ne0) {
  const bool k_quant =
      type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ6_K;
  if (!k_quant || ne0 % kQK_K == 0) return type;
  if (ne0 % 32 != 0) return GgmlType::kF16;
  if (type == GgmlType::kQ6_K) return GgmlType::kQ8_0;
  // llama-quantize would use Q5_0 / Q5_1 here, which jllm does not quantize.
  return absl::UnimplementedError(absl::StrCat("tensor '", tensor, "': ne[0] = ", ne0,
                                               " is not a multiple of 256 and the ",
                                               "Q5_0/Q5_1 fallback is not supported"));
}

// Layer of "blk.N.*", or -1 (sorts first) for every other tensor.
int LayerOf(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) layer = -1;
  return layer;
}

absl::Status CheckConfig(const SynthConfig& c) {
  auto bad = [&](const char* what) {
    return absl::InvalidArgumentError(absl::StrCat("preset '", c.preset, "': ", what));
  };
  if (c.n_embd == 0 || c.n_layer == 0 || c.n_head == 0 || c.n_head_kv == 0 || c.head_dim == 0 ||
      c.n_ff == 0 || c.context_length == 0 || c.n_vocab <= 0) {
    return bad("every dimension must be positive");
  }
  if (c.n_head % c.n_head_kv != 0) return bad("head_count must be a multiple of head_count_kv");
  if (c.head_dim % 2 != 0) return bad("head_dim must be even for RoPE");
  if (c.n_layer > 1000) return bad("too many layers");
  return absl::OkStatus();
}

}  // namespace

int64_t SynthTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

uint64_t SynthTensor::nbytes() const {
  int64_t rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) rows *= ne[d];
  return static_cast<uint64_t>(RowBytes(type, ne[0]) * rows);
}

int64_t SynthPlan::n_params() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.n_elements();
  return n;
}

uint64_t SynthPlan::n_bytes() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.nbytes();
  return n;
}

absl::StatusOr<SynthConfig> SynthPreset(std::string_view name) {
  for (const auto& p : kPresets) {
    if (name != p.preset) continue;
    SynthConfig c;
    c.preset = p.preset;
    c.name = p.name;
    c.n_embd = p.n_embd;
    c.n_layer = p.n_layer;
    c.n_head = p.n_head;
    c.n_head_kv = p.n_head_kv;
    c.head_dim = p.head_dim;
    c.n_ff = p.n_ff;
    c.context_length = p.context;
    c.n_vocab = kQwen3Vocab;
    c.tied_embeddings = p.tied;
    return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown preset '", std::string(name),
                   "'; valid: ", absl::StrJoin(SynthPresetNames(), ", ")));
}

std::vector<std::string> SynthPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.preset);
  return names;
}

absl::StatusOr<SynthWeights> ParseSynthWeights(std::string_view name) {
  for (const auto& r : kWeights) {
    if (name == r.name) return r.weights;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown weight type '", std::string(name),
                   "'; valid: ", absl::StrJoin(SynthWeightsNames(), ", ")));
}

std::string_view SynthWeightsName(SynthWeights w) { return RowOf(w).name; }

std::vector<std::string> SynthWeightsNames() {
  std::vector<std::string> names;
  for (const auto& r : kWeights) names.emplace_back(r.name);
  return names;
}

uint32_t LlamaFileType(SynthWeights w) { return RowOf(w).file_type; }

absl::StatusOr<SynthPlan> PlanSynthModel(const SynthConfig& config, SynthWeights weights) {
  if (absl::Status s = CheckConfig(config); !s.ok()) return s;
  const int64_t E = config.n_embd, V = config.n_vocab, F = config.n_ff, D = config.head_dim;
  const int64_t q_dim = int64_t{config.n_head} * D, kv_dim = int64_t{config.n_head_kv} * D;

  SynthPlan plan;
  plan.config = config;
  plan.weights = weights;
  plan.file_type = LlamaFileType(weights);
  auto add = [&](std::string name, std::vector<int64_t> ne, bool is_norm) {
    plan.tensors.push_back(SynthTensor{std::move(name), GgmlType::kF32, std::move(ne), is_norm});
  };
  add("token_embd.weight", {E, V}, false);
  add("output_norm.weight", {E}, true);
  if (!config.tied_embeddings) add("output.weight", {E, V}, false);
  for (uint32_t i = 0; i < config.n_layer; ++i) {
    const std::string blk = absl::StrCat("blk.", i, ".");
    add(blk + "attn_norm.weight", {E}, true);
    add(blk + "attn_q.weight", {E, q_dim}, false);
    add(blk + "attn_k.weight", {E, kv_dim}, false);
    add(blk + "attn_v.weight", {E, kv_dim}, false);
    add(blk + "attn_output.weight", {q_dim, E}, false);
    add(blk + "attn_q_norm.weight", {D}, true);
    add(blk + "attn_k_norm.weight", {D}, true);
    add(blk + "ffn_norm.weight", {E}, true);
    add(blk + "ffn_gate.weight", {E, F}, false);
    add(blk + "ffn_up.weight", {E, F}, false);
    add(blk + "ffn_down.weight", {F, E}, false);
  }
  // llama-model-loader's weight_name_comparer: layer (-1 outside blk.N), then name.
  std::stable_sort(plan.tensors.begin(), plan.tensors.end(),
                   [](const SynthTensor& a, const SynthTensor& b) {
                     return std::make_tuple(LayerOf(a.name), std::string_view(a.name)) <
                            std::make_tuple(LayerOf(b.name), std::string_view(b.name));
                   });

  // Types, assigned in file order because the Q4_K_M counters advance in that order.
  const GgmlType base = RowOf(weights).matrix_type;
  const int n_layer = static_cast<int>(config.n_layer);
  int i_attn_v = 0, i_ffn_down = 0;
  for (SynthTensor& t : plan.tensors) {
    if (t.is_norm) {
      t.type = GgmlType::kF32;
      continue;
    }
    GgmlType type = base;
    if (weights == SynthWeights::kQ4_K_M) {
      auto ends_with = [&](std::string_view suffix) { return t.name.ends_with(suffix); };
      if (t.name == "output.weight" || (t.name == "token_embd.weight" && config.tied_embeddings)) {
        type = GgmlType::kQ6_K;  // the LM head (tied: the embedding is the head)
      } else if (ends_with("attn_v.weight")) {
        type = UseMoreBits(i_attn_v++, n_layer) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      } else if (ends_with("ffn_down.weight")) {
        type = UseMoreBits(i_ffn_down++, n_layer) ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      }
    }
    auto fitted = FitRow(t.name, type, t.ne[0]);
    if (!fitted.ok()) return fitted.status();
    t.type = *fitted;
  }
  return plan;
}

}  // namespace jllm::gguf
