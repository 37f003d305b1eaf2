// Converts a Hugging Face Qwen3 checkpoint folder (config.json, *.safetensors in F32/F16/BF16,
// optionally sharded, and the tokenizer files) into a Qwen3 GGUF, as llama.cpp's converter
// followed by llama-quantize would: the same tensor names, shapes, order, metadata keys
// (FORMATS.md §5) and, for q4_k_m, the same type mix as jllm-synth (PlanSynthModel).
//
// HF stores a Linear weight as (out, in), row-major: exactly ggml's ne = {in, out}, so weights
// are copied (or quantized) row by row without any transpose.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/gguf/synth_plan.h"
#include "frontends/gguf/tokenizer_data.h"

namespace jllm::gguf {

// Reads config.json of a Qwen3ForCausalLM checkpoint into Qwen3 hyper-parameters. Refuses other
// architectures (naming them), missing or mistyped keys (naming them), attention biases, sliding
// windows, activations other than silu and RoPE scaling other than none. rope_theta is read
// from "rope_theta" or, as transformers 5 writes it, "rope_parameters": {"rope_theta": ...}.
absl::StatusOr<SynthConfig> ReadHfQwen3Config(const std::string& config_json_path);

// The Hugging Face tensor name of a GGUF Qwen3 tensor name ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"); empty for a name outside the Qwen3 table.
std::string HfTensorName(const std::string& gguf_name);

// The vocabulary written when the folder has no tokenizer.json: the 256 byte-level tokens,
// then "[PAD<id>]" UNUSED slots up to n_vocab (no control tokens, so nothing ends generation).
// Prompts are then given as ids (jllm-run --prompt-ids). n_vocab must be at least 256.
absl::StatusOr<TokenizerData> PlaceholderTokenizerData(int64_t n_vocab);

struct HfImportOptions {
  std::string dir;                             // the checkpoint folder
  SynthWeights weights = SynthWeights::kF32;   // f32, f16, bf16, q8_0, q4_k, q5_k, q6_k, q4_k_m
  std::string name;                            // general.name; empty: the folder's name
  int threads = 0;                             // 0: one per hardware thread
  // Without tokenizer.json the import is refused unless this allows the placeholder
  // vocabulary (PlaceholderTokenizerData).
  bool allow_no_tokenizer = false;
  // Called after each tensor with the output bytes done so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct HfImportSummary {
  SynthPlan plan;                        // what was written (config, tensor table with types)
  std::vector<std::string> shard_files;  // the *.safetensors read, sorted
  bool tokenizer_imported = false;       // false: the placeholder vocabulary was written
  uint64_t file_bytes = 0;
};

// Reads `options.dir` and writes the GGUF to `out_path` (fileio::OutputFile: atomically, and
// never over one of the files it reads). Every tensor of the Qwen3
// table must be present with the shape config.json implies; a tensor left over (other than a
// tied lm_head.weight) or present in two shards is an error naming it and its file(s).
absl::StatusOr<HfImportSummary> ImportHfCheckpoint(const HfImportOptions& options,
                                                   const std::string& out_path);

}  // namespace jllm::gguf
