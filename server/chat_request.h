// A /v1/chat/completions request, read and checked: the messages as the chat template takes
// them, tool declarations, Qwen3's thinking switch and the generation parameters.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/generation_params.h"
#include "server/json.h"

namespace jllm::server {

struct ChatRequest {
  std::vector<runtime::ChatMessage> messages;
  std::vector<Json> tools;       // as the client sent them (key order kept)
  bool parse_tool_calls = false;  // tools declared and tool_choice is not "none"
  std::optional<bool> enable_thinking;  // chat_template_kwargs.enable_thinking
  GenerationParams generation;
};

// Roles: system (or developer), user, assistant, tool. Content: a string, or an array of
// {"type": "text"} parts; null only for an assistant turn. Assistant tool_calls:
// [{"function": {"name", "arguments": JSON text or an object}}]. tool_choice "required" or a
// named function is refused (nothing constrains the model's output).
absl::StatusOr<ChatRequest> ParseChatRequest(const Json& body);

}  // namespace jllm::server
