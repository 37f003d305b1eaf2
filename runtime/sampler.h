// Picks the next token from a row of logits, as llama.cpp users expect: the repetition,
// presence and frequency penalties over the recent tokens, then top-k, top-p, min-p, temperature, and a seeded draw. A
// temperature of 0 is greedy: the arg-max of the penalized logits (lowest id on ties).
//
// Each stage is a free function on a candidate list sorted by descending logit (ties: lower id
// first), so tests can check each mask on its own.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace jllm::runtime {

struct SamplerOptions {
  float temperature = 0.8f;     // 0: greedy
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // 1: off
  float min_p = 0.05f;          // 0: off
  float repeat_penalty = 1.0f;  // 1: off
  // OpenAI's penalties, over the same recent tokens: every token that occurs there loses
  // presence_penalty once and frequency_penalty per occurrence from its logit (0: off).
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int32_t repeat_last_n = 64;   // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

// InvalidArgument naming the option: temperature finite and >= 0, top_p in (0, 1], min_p in
// [0, 1], repeat_penalty finite and > 0, presence and frequency penalties finite,
// repeat_last_n >= 0.
absl::Status ValidateSamplerOptions(const SamplerOptions& o);

struct Candidate {
  int32_t id;
  float logit;
};

// Every token whose id is in `recent` (once, however often it occurs): a positive logit is
// divided by `penalty`, a negative one multiplied by it.
void ApplyRepetitionPenalty(absl::Span<float> logits, absl::Span<const int32_t> recent,
                            float penalty);

// logit -= presence + frequency · count, for every token that occurs `count` > 0 times in
// `recent`.
void ApplyPresenceFrequencyPenalty(absl::Span<float> logits, absl::Span<const int32_t> recent,
                                   float presence, float frequency);

// All tokens, sorted; with k > 0 only the k best are sorted and kept (a partial sort).
std::vector<Candidate> SortedCandidates(absl::Span<const float> logits, int32_t k = 0);
// The filters below keep a prefix of a sorted list, and always at least one candidate.
void KeepTopK(std::vector<Candidate>& c, int32_t k);   // the k best (k <= 0: all)
void KeepTopP(std::vector<Candidate>& c, float p);     // the shortest prefix with mass >= p
void KeepMinP(std::vector<Candidate>& c, float min_p); // probability >= min_p · the best's
// Softmax of logits / temperature over the candidates (temperature > 0), in double.
std::vector<double> CandidateProbabilities(const std::vector<Candidate>& c,
                                           float temperature = 1.0f);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // Appends a token of the context (prompt or generated) to the penalty window.
  void Accept(int32_t token);
  // Replaces the window with the last repeat_last_n of `tokens` (the context so far).
  void SetHistory(absl::Span<const int32_t> tokens);
  // Forgets the window and restarts the random stream from the seed.
  void Reset();

  int32_t Sample(absl::Span<const float> logits);

  // The candidates and probabilities Sample would draw from (greedy: the one arg-max, p = 1).
  struct Choice {
    std::vector<Candidate> candidates;
    std::vector<double> probabilities;
  };
  Choice Distribution(absl::Span<const float> logits) const;

  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;  // the standard fixes its output sequence: same seed, same draws
  std::deque<int32_t> recent_;
  std::vector<float> scratch_;
};

}  // namespace jllm::runtime
