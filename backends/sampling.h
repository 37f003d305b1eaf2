// The sampler's semantics on the host: the reference every backend's sampler is held to (cpu_ref
// calls it; kernels/sample.cu reimplements it on the device and is tested against it). Settings
// are jllm::SamplingParams (backends/sampling_params.h): the penalties over the recent context, then top-k, top-p, min-p, temperature, and a draw keyed by (seed, position).
// Temperature 0 is greedy: the arg-max of the penalized logits (lowest id on ties).
//
// Each stage is a free function on a candidate list sorted by descending logit (ties: lower id
// first), so tests can check each mask on its own.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "backends/sampling_params.h"

namespace jllm {

// InvalidArgument naming the option: temperature finite and >= 0, top_p in (0, 1], min_p in
// [0, 1], repeat_penalty finite and > 0, presence and frequency penalties finite,
// repeat_last_n >= 0.
absl::Status ValidateSamplingParams(const SamplingParams& o);

struct Candidate {
  int32_t id;
  float logit;
};

// Every token whose id is in `recent`, once however often it occurs: a positive logit is
// divided by params.repeat_penalty, a negative one multiplied by it; then it loses
// frequency_penalty × (its count in `recent`) + presence_penalty.
void ApplyPenalties(absl::Span<float> logits, absl::Span<const int32_t> recent, const SamplingParams& params);

// All tokens, sorted; with k > 0 only the k best are sorted and kept (a partial sort). NaN ranks
// last, as -infinity.
std::vector<Candidate> SortedCandidates(absl::Span<const float> logits, int32_t k = 0);
// The filters below keep a prefix of a sorted list, and always at least one candidate.
void KeepTopK(std::vector<Candidate>& c, int32_t k);   // the k best (k <= 0: all)
void KeepTopP(std::vector<Candidate>& c, float p);     // the shortest prefix with mass >= p
void KeepMinP(std::vector<Candidate>& c, float min_p); // probability >= min_p · the best's
// Softmax of logits / temperature over the candidates (temperature > 0), in double.
std::vector<double> CandidateProbabilities(const std::vector<Candidate>& c,
                                           float temperature = 1.0f);

// The candidates and probabilities a draw chooses from (greedy: the one arg-max, p = 1), after
// the penalties over `recent`.
struct SamplingChoice {
  std::vector<Candidate> candidates;
  std::vector<double> probabilities;
};
SamplingChoice SamplingDistribution(absl::Span<const float> logits, absl::Span<const int32_t> recent,
                                    const SamplingParams& params);

// The token for context position `position` (the index the drawn token will have): the first
// candidate whose cumulative probability exceeds SampleUniform(seed, position).
// `recent` is the penalty window: the last repeat_last_n tokens of the context.
int32_t SampleToken(absl::Span<const float> logits, absl::Span<const int32_t> recent,
                    const SamplingParams& params, int64_t position);

}  // namespace jllm
