// The model hyper-parameters a graph was built from (Qwen3 dense: FORMATS.md §5).
// Nodes carry the numbers they need in their own attributes; the config is kept for the
// passes that plan globally (kv-dtype), for the runtime (context length, vocabulary size)
// and for readers of the IR.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "ir/types.h"

namespace jllm::ir {

struct ModelConfig {
  std::string arch = "qwen3";   // general.architecture
  int64_t n_embd = 0;           // E
  int64_t n_layer = 0;
  int64_t n_head = 0;           // H, query heads
  int64_t n_head_kv = 0;        // Hkv, key/value heads (GQA: H % Hkv == 0)
  int64_t head_dim = 0;         // D (attention.key_length; not always E/H)
  int64_t n_ff = 0;             // F, feed-forward width
  int64_t n_vocab = 0;          // V
  int64_t context_length = 0;   // the model's maximum context
  float rope_base = 10000.0f;   // rope.freq_base
  float rope_freq_scale = 1.0f; // 1 / rope.scaling.factor
  float rms_eps = 1e-6f;
  bool tied_embeddings = false; // no output.weight: token_embd doubles as the output matrix

  template <class Self, class V>
  static void VisitFields(Self& self, V&& v) {
    v("arch", self.arch);
    v("n_embd", self.n_embd);
    v("n_layer", self.n_layer);
    v("n_head", self.n_head);
    v("n_head_kv", self.n_head_kv);
    v("head_dim", self.head_dim);
    v("n_ff", self.n_ff);
    v("n_vocab", self.n_vocab);
    v("context_length", self.context_length);
    v("rope_base", self.rope_base);
    v("rope_freq_scale", self.rope_freq_scale);
    v("rms_eps", self.rms_eps);
    v("tied_embeddings", self.tied_embeddings);
  }
  bool operator==(const ModelConfig&) const = default;
};

// Every size positive and below sane limits (so products cannot overflow), H % Hkv == 0,
// head_dim even, eps/rope numbers finite and positive.
absl::Status ValidateModelConfig(const ModelConfig& c);

// KV cache bytes one token occupies in one layer (K and V) for the given storage type:
// f16: 2·Hkv·D·2; int8: 2·Hkv·(D + 2), one f16 scale per (position, kv head) row.
int64_t KvBytesPerTokenPerLayer(const ModelConfig& c, KvDType t);

}  // namespace jllm::ir
