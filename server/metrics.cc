#include "server/metrics.h"

#include <sstream>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace jllm::server {
namespace {

prometheus::Counter* NewCounter(prometheus::Registry& r, const std::string& name,
                                const std::string& help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

prometheus::Gauge* NewGauge(prometheus::Registry& r, const std::string& name,
                            const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  prometheus::Registry& r = *registry_;
  prompt_tokens_ = NewCounter(r, "jllm:prompt_tokens_total", "Number of prompt tokens processed.");
  prompt_seconds_ = NewCounter(r, "jllm:prompt_seconds_total", "Prompt process time.");
  predicted_tokens_ =
      NewCounter(r, "jllm:tokens_predicted_total", "Number of generation tokens processed.");
  predicted_seconds_ = NewCounter(r, "jllm:tokens_predicted_seconds_total", "Predict process time.");
  decode_steps_ = NewCounter(r, "jllm:n_decode_total", "Total number of decode steps.");
  cached_tokens_ = NewCounter(r, "jllm:prompt_tokens_cached_total",
                              "Number of prompt tokens reused from the KV cache.");
  prompt_rate_ = NewGauge(r, "jllm:prompt_tokens_seconds", "Average prompt throughput in tokens/s.");
  predicted_rate_ =
      NewGauge(r, "jllm:predicted_tokens_seconds", "Average generation throughput in tokens/s.");
  processing_ = NewGauge(r, "jllm:requests_processing", "Number of requests processing.");
  deferred_ = NewGauge(r, "jllm:requests_deferred", "Number of requests deferred (waiting).");
  kv_tokens_ = NewGauge(r, "jllm:kv_cache_tokens", "KV cache positions in use.");
  kv_ratio_ = NewGauge(r, "jllm:kv_cache_usage_ratio", "KV cache usage (1 = full).");
  ttft_ = &prometheus::BuildHistogram()
               .Name("jllm:time_to_first_token_seconds")
               .Help("Time from a request's start of generation to its first token.")
               .Register(r)
               .Add({}, prometheus::Histogram::BucketBoundaries{0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                                1, 2.5, 5, 10, 30, 60});
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::RecordGeneration(const runtime::GenerationStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_->Increment(static_cast<double>(stats.prompt_tokens));
  prompt_seconds_->Increment(stats.prompt_seconds);
  predicted_tokens_->Increment(static_cast<double>(stats.generated_tokens));
  predicted_seconds_->Increment(stats.decode_seconds);
  decode_steps_->Increment(static_cast<double>(stats.decode_steps));
  cached_tokens_->Increment(static_cast<double>(stats.reused_tokens));
  if (prompt_seconds_->Value() > 0) prompt_rate_->Set(prompt_tokens_->Value() / prompt_seconds_->Value());
  if (predicted_seconds_->Value() > 0) {
    predicted_rate_->Set(decode_steps_->Value() / predicted_seconds_->Value());
  }
  if (stats.generated_tokens > 0) ttft_->Observe(stats.time_to_first_token);
}

void ServerMetrics::SetQueue(int processing, int waiting) {
  processing_->Set(processing);
  deferred_->Set(waiting);
}

void ServerMetrics::SetKvCache(int64_t used_positions, int64_t context_size) {
  kv_tokens_->Set(static_cast<double>(used_positions));
  kv_ratio_->Set(context_size > 0 ? static_cast<double>(used_positions) / context_size : 0.0);
}

std::string ServerMetrics::Render() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace jllm::server
