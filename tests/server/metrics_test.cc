// /metrics: llama-server's metric names under the jllm: prefix, with values from the
// generations recorded.
#include "server/metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::server {
namespace {

using ::testing::HasSubstr;

TEST(ServerMetricsTest, CountsGenerationsQueueAndCache) {
  ServerMetrics m;
  runtime::GenerationStats s;
  s.prompt_tokens = 12;
  s.reused_tokens = 5;
  s.prompt_seconds = 0.5;
  s.generated_tokens = 9;
  s.decode_steps = 8;
  s.decode_seconds = 2;
  s.time_to_first_token = 0.2;
  m.RecordGeneration(s);
  m.RecordGeneration(s);
  m.SetQueue(1, 3);
  m.SetKvCache(1024, 4096);
  const std::string text = m.Render();
  EXPECT_THAT(text, HasSubstr("# TYPE jllm:prompt_tokens_total counter\njllm:prompt_tokens_total 24\n"));
  EXPECT_THAT(text, HasSubstr("jllm:prompt_seconds_total 1\n"));
  EXPECT_THAT(text, HasSubstr("jllm:tokens_predicted_total 18\n"));
  EXPECT_THAT(text, HasSubstr("jllm:tokens_predicted_seconds_total 4\n"));
  EXPECT_THAT(text, HasSubstr("jllm:n_decode_total 16\n"));
  EXPECT_THAT(text, HasSubstr("jllm:prompt_tokens_cached_total 10\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE jllm:prompt_tokens_seconds gauge\njllm:prompt_tokens_seconds 24\n"));
  EXPECT_THAT(text, HasSubstr("jllm:predicted_tokens_seconds 4\n"));
  EXPECT_THAT(text, HasSubstr("jllm:requests_processing 1\n"));
  EXPECT_THAT(text, HasSubstr("jllm:requests_deferred 3\n"));
  EXPECT_THAT(text, HasSubstr("jllm:kv_cache_tokens 1024\n"));
  EXPECT_THAT(text, HasSubstr("jllm:kv_cache_usage_ratio 0.25\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE jllm:time_to_first_token_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("jllm:time_to_first_token_seconds_bucket{le=\"0.1\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("jllm:time_to_first_token_seconds_bucket{le=\"0.25\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("jllm:time_to_first_token_seconds_count 2\n"));
}

}  // namespace
}  // namespace jllm::server
