// What jllm-synth builds, decided before any byte is written: the Qwen3 hyper-parameters of a
// preset and the tensor table (names, ne, ggml types, order) that llama.cpp's converter and
// llama-quantize would produce for such a model (FORMATS.md §4-5).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ggml_type.h"

namespace jllm::gguf {

// Hyper-parameters of a synthetic Qwen3 dense model.
struct SynthConfig {
  std::string preset;  // "tiny", "0.6b", ...
  std::string name;    // general.name
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t n_ff = 0;
  uint32_t context_length = 0;
  int64_t n_vocab = 0;          // token_embd rows; must equal the tokenizer's token count
  bool tied_embeddings = true;  // no output.weight: token_embd doubles as the LM head
  float rope_freq_base = 1e6f;
  float rms_eps = 1e-6f;
};

// The presets: "tiny" (CI-sized) and the six Qwen3 dense sizes with their real shapes.
absl::StatusOr<SynthConfig> SynthPreset(std::string_view name);
std::vector<std::string> SynthPresetNames();

// How matrices are stored: llama-quantize's Q4_K_M mix, or one type for every matrix.
// Norm weights are F32 in every case.
enum class SynthWeights { kQ4_K_M, kF32, kF16, kBF16, kQ8_0, kQ4_K, kQ5_K, kQ6_K };
absl::StatusOr<SynthWeights> ParseSynthWeights(std::string_view name);  // "q4_k_m", "f16", ...
std::string_view SynthWeightsName(SynthWeights w);
std::vector<std::string> SynthWeightsNames();
// general.file_type: llama.cpp's LLAMA_FTYPE_* (pure K types use the ftype that
// `llama-quantize --pure` writes for them: Q4_K -> Q4_K_M, Q5_K -> Q5_K_M, Q6_K -> Q6_K).
uint32_t LlamaFileType(SynthWeights w);

struct SynthTensor {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> ne;  // ne[0] is the contiguous row (GGUF order)
  bool is_norm = false;     // RMSNorm weight (initialised around 1) rather than a matrix
  int64_t n_elements() const;
  uint64_t nbytes() const;
};

struct SynthPlan {
  SynthConfig config;
  SynthWeights weights = SynthWeights::kQ4_K_M;
  uint32_t file_type = 0;
  std::vector<SynthTensor> tensors;  // in file order
  int64_t n_params() const;
  uint64_t n_bytes() const;  // tensor data, without alignment padding
};

// The full tensor table for `config` stored as `weights`, sorted as llama-quantize writes it:
// tensors outside blk.N first, then by layer, then by name.
absl::StatusOr<SynthPlan> PlanSynthModel(const SynthConfig& config, SynthWeights weights);

}  // namespace jllm::gguf
