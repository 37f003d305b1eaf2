// The fields that /v1/chat/completions and /v1/completions share: streaming, token limit,
// stop strings and sampling, read from the request and checked (each error names the field).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/json.h"

namespace jllm::server {

// What a request asks of the sampler; unset fields take the server's defaults
// (sampling_defaults.h).
struct SamplingRequest {
  std::optional<float> temperature, top_p, min_p;
  std::optional<int32_t> top_k;
  std::optional<float> repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<uint64_t> seed;  // -1 in the request: a random seed, as llama.cpp
};

struct GenerationParams {
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // max_completion_tokens, else max_tokens; -1: until the end or the context is full.
  std::optional<int64_t> max_tokens;
  std::vector<std::string> stop;
  SamplingRequest sampling;
};

// Reads the shared fields of `body` (a JSON object). Refuses n != 1 and a response_format other
// than text, saying so.
absl::StatusOr<GenerationParams> ParseGenerationParams(const Json& body);

}  // namespace jllm::server
