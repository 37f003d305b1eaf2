// The server's Prometheus metrics, served at /metrics. Names are llama-server's with the
// prefix jllm: instead of llamacpp:, so dashboards built for it adapt by renaming:
//   counters  jllm:prompt_tokens_total, jllm:prompt_seconds_total, jllm:tokens_predicted_total,
//             jllm:tokens_predicted_seconds_total, jllm:n_decode_total,
//             jllm:prompt_tokens_cached_total
//   gauges    jllm:prompt_tokens_seconds, jllm:predicted_tokens_seconds (average tokens/s),
//             jllm:requests_processing, jllm:requests_deferred (waiting in the queue),
//             jllm:kv_cache_tokens, jllm:kv_cache_usage_ratio
//   histogram jllm:time_to_first_token_seconds
// prometheus-cpp does the bookkeeping and the text format; every method is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/session.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace jllm::server {

class ServerMetrics {
 public:
  ServerMetrics();
  ~ServerMetrics();

  void RecordGeneration(const runtime::GenerationStats& stats);
  void SetQueue(int processing, int waiting);
  void SetKvCache(int64_t used_positions, int64_t context_size);

  std::string Render() const;  // the Prometheus text exposition format

 private:
  std::mutex mu_;  // RecordGeneration's counters and the averages made of them change together
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter *prompt_tokens_, *prompt_seconds_, *predicted_tokens_, *predicted_seconds_,
      *decode_steps_, *cached_tokens_;
  prometheus::Gauge *prompt_rate_, *predicted_rate_, *processing_, *deferred_, *kv_tokens_,
      *kv_ratio_;
  prometheus::Histogram* ttft_;
};

}  // namespace jllm::server
