// Qwen3's chat template (ChatML with thinking), rendered in C++: the behaviour of the Jinja
// template in Qwen3's tokenizer_config.json for system, user, assistant and tool messages,
// tool declarations (the template's `tools` branch) and assistant tool calls. Not a Jinja engine.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace jllm::runtime {

// A function call the assistant made, rendered as <tool_call>{"name": ..., "arguments": ...}</tool_call>.
struct ChatToolCall {
  std::string name;
  // A JSON string is written as it is (OpenAI clients send the arguments as JSON text);
  // anything else is written as the template's tojson writes it.
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  // An assistant turn's reasoning, when kept apart from `content`; otherwise a
  // "<think>...</think>" block at the start of `content` is taken as the reasoning.
  std::optional<std::string> reasoning_content = std::nullopt;
  std::vector<ChatToolCall> tool_calls = {};  // assistant turns only
};

struct ChatOptions {
  bool add_generation_prompt = true;  // end with "<|im_start|>assistant\n"
  // When false, the generation prompt gets an empty think block, which tells Qwen3 to answer
  // without thinking.
  bool enable_thinking = true;
  // Tool declarations (OpenAI's {"type": "function", "function": {...}} objects), listed in the
  // system turn as the template does; none: no tools section.
  std::vector<nlohmann::ordered_json> tools = {};
};

class ChatTemplate {
 public:
  // Accepts the GGUF's tokenizer.chat_template when it is ChatML (empty means Qwen3's default);
  // any other template is refused with a message saying what is supported.
  static absl::StatusOr<ChatTemplate> FromGgufTemplate(std::string_view jinja);
  static ChatTemplate Qwen3() { return ChatTemplate(); }

  // The prompt text, with special tokens written out: encode it with parse_special = true.
  absl::StatusOr<std::string> Render(absl::Span<const ChatMessage> messages,
                                     const ChatOptions& options = {}) const;

 private:
  ChatTemplate() = default;
};

}  // namespace jllm::runtime
