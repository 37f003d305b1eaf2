// jllm-synth's model builder: a Qwen3-architecture GGUF with seeded random weights, the tensor
// table of llama-quantize's output (synth_plan.h) and a real or byte-level tokenizer. The tool
// is a thin CLI over WriteSynthModel; tests call it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "frontends/gguf/gguf_writer.h"
#include "frontends/gguf/synth_plan.h"
#include "frontends/gguf/synth_weights.h"

namespace jllm::gguf {

struct SynthOptions {
  std::string preset = "tiny";
  SynthWeights weights = SynthWeights::kQ4_K_M;
  // A Hugging Face tokenizer folder (tokenizer.json + tokenizer_config.json). Empty: the tiny
  // preset gets ByteLevelTokenizerData() and a vocabulary of its size; other presets fail.
  std::string tokenizer_dir;
  uint64_t seed = 0;
  SynthFill fill = SynthFill::kAuto;
  int threads = 0;  // 0: one per hardware thread
  // Called after each tensor with the tensor bytes written so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct SynthSummary {
  SynthPlan plan;
  bool pooled = false;                          // weights came from the pool (SynthFill)
  uint64_t file_bytes = 0;                      // size of the written file
  std::map<GgmlType, uint64_t> bytes_per_type;  // tensor data, by type
  std::map<GgmlType, int> tensors_per_type;
};

// The plan for `options` with the vocabulary size the tokenizer implies (no tokenizer is read:
// a tokenizer folder means the preset's 151936, none means the byte-level vocabulary).
absl::StatusOr<SynthPlan> PlanForOptions(const SynthOptions& options);

// general.* and qwen3.* metadata for `plan` (FORMATS.md §5; integers UINT32, floats FLOAT32).
void AddQwen3Metadata(const SynthPlan& plan, GgufWriter& writer);

// Writes the model to `path` (atomically, via the GgufWriter).
absl::StatusOr<SynthSummary> WriteSynthModel(const SynthOptions& options, const std::string& path);

}  // namespace jllm::gguf
