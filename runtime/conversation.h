// A multi-turn chat over a Session: keeps the messages, renders them with the chat template,
// and lets the Session reuse the cached prefix, so each turn prefills only what is new.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"

namespace jllm::runtime {

class Conversation {
 public:
  // `system_prompt` may be empty (no system message).
  Conversation(Session& session, ChatTemplate chat_template, ChatOptions options,
               std::string system_prompt = "");

  // Adds the user's message, generates the assistant's reply and adds it to the history.
  // An end-of-generation token ends the reply as usual; GenerateOptions::max_tokens etc. apply.
  absl::StatusOr<GenerateResult> Reply(std::string_view user_message, Sampler& sampler,
                                       const GenerateOptions& options);

  const std::vector<ChatMessage>& messages() const { return messages_; }

 private:
  Session& session_;
  ChatTemplate template_;
  ChatOptions options_;
  std::vector<ChatMessage> messages_;
};

}  // namespace jllm::runtime
