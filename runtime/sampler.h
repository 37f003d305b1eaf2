// The runtime's handle on sampling: the settings a conversation uses (jllm::SamplingParams; the
// backend samples with them on its own device, backends/sampling.h defines the semantics), and
// a host-side sampler over explicit logits for tools and tests, which keeps its own penalty
// window and draw position.
#pragma once

#include <cstdint>
#include <deque>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "backends/sampling.h"

namespace jllm::runtime {

using SamplerOptions = jllm::SamplingParams;
using jllm::ApplyPenalties;
using jllm::Candidate;
using jllm::CandidateProbabilities;
using jllm::KeepMinP;
using jllm::KeepTopK;
using jllm::KeepTopP;
using jllm::SortedCandidates;

inline absl::Status ValidateSamplerOptions(const SamplerOptions& o) { return ValidateSamplingParams(o); }

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options) {}

  const SamplerOptions& options() const { return options_; }

  // --- host-side sampling (Session leaves this to the backend) -------------------------------
  // Appends a token of the context (prompt or generated) to the penalty window.
  void Accept(int32_t token);
  // Replaces the window with the last repeat_last_n of `tokens` (the context so far), and sets
  // the draw position to the context's length.
  void SetHistory(absl::Span<const int32_t> tokens);
  // Forgets the window and restarts the draws at position 0.
  void Reset();
  // Samples the token at the current draw position (the context length), then advances it.
  int32_t Sample(absl::Span<const float> logits);
  SamplingChoice Distribution(absl::Span<const float> logits) const;

 private:
  SamplerOptions options_;
  std::deque<int32_t> recent_;
  int64_t position_ = 0;
};

}  // namespace jllm::runtime
