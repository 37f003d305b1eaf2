// A /v1/completions request: one prompt (text, or token ids) to continue, and the generation
// parameters.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "server/generation_params.h"
#include "server/json.h"

namespace jllm::server {

struct CompletionRequest {
  // Text (control tokens written in it become their ids) or token ids.
  std::variant<std::string, std::vector<int32_t>> prompt;
  GenerationParams generation;
};

// prompt: a string, an array of token ids, or a one-element array of either (OpenAI's batch
// form; more than one prompt is refused). echo, suffix, best_of > 1 and logprobs are refused.
absl::StatusOr<CompletionRequest> ParseCompletionRequest(const Json& body);

}  // namespace jllm::server
