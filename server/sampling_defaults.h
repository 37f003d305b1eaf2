// Which sampler settings a request runs with: what the request says, else what the server was
// started with (jllm-run's flags), else Qwen3's recommended settings for chat (they differ with
// and without thinking), else jllm-run's defaults for plain completions.
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/sampler.h"
#include "server/generation_params.h"

namespace jllm::server {

// The sampling flags the server was started with; unset: not given on the command line.
struct SamplingFlags {
  std::optional<float> temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int32_t> top_k, repeat_last_n;
  std::optional<uint64_t> seed;
  int64_t max_tokens = -1;  // -n: the token limit of a request that gives none (-1: none)
};

// Qwen3's recommended sampling (its model card): temperature, top-p, top-k, min-p.
struct RecommendedSampling {
  float temperature, top_p;
  int32_t top_k;
  float min_p;
};
inline constexpr RecommendedSampling kQwen3Thinking = {0.6f, 0.95f, 20, 0.0f};
inline constexpr RecommendedSampling kQwen3NonThinking = {0.7f, 0.8f, 20, 0.0f};

enum class SamplingMode { kChatThinking, kChatNonThinking, kCompletion };

// `random_seed` is used when neither the request nor the flags fix a seed.
runtime::SamplerOptions ResolveSampling(const SamplingRequest& request, const SamplingFlags& flags,
                                        SamplingMode mode, uint64_t random_seed);

}  // namespace jllm::server
