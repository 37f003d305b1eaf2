#include "ir/model_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace jllm::ir {
namespace {

// Generous bounds: the largest Qwen3 is far below them, and products of two stay in int64.
constexpr int64_t kMaxWidth = int64_t{1} << 24;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxContext = int64_t{1} << 24;

absl::Status CheckRange(absl::string_view name, int64_t v, int64_t max) {
  if (v < 1 || v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: ", name, " = ", v, " is outside [1, ", max, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateModelConfig(const ModelConfig& c) {
  if (c.arch.empty()) return absl::InvalidArgumentError("model config: arch is empty");
  const std::pair<absl::string_view, int64_t> widths[] = {
      {"n_embd", c.n_embd}, {"n_head", c.n_head},   {"n_head_kv", c.n_head_kv},
      {"head_dim", c.head_dim}, {"n_ff", c.n_ff}, {"n_vocab", c.n_vocab}};
  for (const auto& [name, v] : widths) {
    if (auto st = CheckRange(name, v, kMaxWidth); !st.ok()) return st;
  }
  if (auto st = CheckRange("n_layer", c.n_layer, kMaxLayers); !st.ok()) return st;
  if (auto st = CheckRange("context_length", c.context_length, kMaxContext); !st.ok()) return st;
  if (c.n_head % c.n_head_kv != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model config: n_head = ", c.n_head,
                                                   " is not a multiple of n_head_kv = ",
                                                   c.n_head_kv));
  }
  if (c.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: head_dim = ", c.head_dim, " is odd (RoPE rotates pairs)"));
  }
  const std::pair<absl::string_view, float> positives[] = {
      {"rope_base", c.rope_base}, {"rope_freq_scale", c.rope_freq_scale}, {"rms_eps", c.rms_eps}};
  for (const auto& [name, v] : positives) {
    if (!std::isfinite(v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model config: ", name, " = ", v, " must be finite and positive"));
    }
  }
  return absl::OkStatus();
}

int64_t KvBytesPerTokenPerLayer(const ModelConfig& c, KvDType t) {
  int64_t row = c.head_dim * 2;                              // f16
  if (t == KvDType::kInt8) row = c.head_dim + 2;             // int8 values + one f16 scale
  if (t == KvDType::kF32) row = c.head_dim * 4;
  return 2 * c.n_head_kv * row;
}

}  // namespace jllm::ir
