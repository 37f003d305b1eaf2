#include "server/sampling_defaults.h"

namespace jllm::server {

runtime::SamplerOptions ResolveSampling(const SamplingRequest& request, const SamplingFlags& flags,
                                        SamplingMode mode, uint64_t random_seed) {
  runtime::SamplerOptions o;  // jllm-run's defaults
  if (mode != SamplingMode::kCompletion) {
    const RecommendedSampling& r =
        mode == SamplingMode::kChatThinking ? kQwen3Thinking : kQwen3NonThinking;
    o.temperature = r.temperature;
    o.top_p = r.top_p;
    o.top_k = r.top_k;
    o.min_p = r.min_p;
  }
  o.temperature = request.temperature.value_or(flags.temperature.value_or(o.temperature));
  o.top_p = request.top_p.value_or(flags.top_p.value_or(o.top_p));
  o.top_k = request.top_k.value_or(flags.top_k.value_or(o.top_k));
  o.min_p = request.min_p.value_or(flags.min_p.value_or(o.min_p));
  o.repeat_penalty = request.repetition_penalty.value_or(flags.repeat_penalty.value_or(o.repeat_penalty));
  o.presence_penalty = request.presence_penalty.value_or(flags.presence_penalty.value_or(o.presence_penalty));
  o.frequency_penalty = request.frequency_penalty.value_or(flags.frequency_penalty.value_or(o.frequency_penalty));
  o.repeat_last_n = flags.repeat_last_n.value_or(o.repeat_last_n);
  o.seed = request.seed.value_or(flags.seed.value_or(random_seed));
  return o;
}

}  // namespace jllm::server
