#include "runtime/sampler.h"

#include <algorithm>
#include <vector>

namespace jllm::runtime {

void Sampler::Accept(int32_t token) {
  if (options_.repeat_last_n <= 0) return;
  recent_.push_back(token);
  while (recent_.size() > static_cast<size_t>(options_.repeat_last_n)) recent_.pop_front();
}

void Sampler::SetHistory(absl::Span<const int32_t> tokens) {
  recent_.clear();
  const size_t n = std::min<size_t>(tokens.size(), std::max(options_.repeat_last_n, 0));
  recent_.insert(recent_.end(), tokens.end() - n, tokens.end());
  position_ = static_cast<int64_t>(tokens.size());
}

void Sampler::Reset() {
  recent_.clear();
  position_ = 0;
}

SamplingChoice Sampler::Distribution(absl::Span<const float> logits) const {
  const std::vector<int32_t> recent(recent_.begin(), recent_.end());
  return SamplingDistribution(logits, recent, options_);
}

int32_t Sampler::Sample(absl::Span<const float> logits) {
  const std::vector<int32_t> recent(recent_.begin(), recent_.end());
  return SampleToken(logits, recent, options_, position_++);
}

}  // namespace jllm::runtime
