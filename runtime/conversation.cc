#include "runtime/conversation.h"

#include "absl/strings/str_cat.h"
#include "ir/status.h"

namespace jllm::runtime {

Conversation::Conversation(Session& session, ChatTemplate chat_template, ChatOptions options,
                           std::string system_prompt)
    : session_(session), template_(std::move(chat_template)), options_(options) {
  options_.add_generation_prompt = true;
  if (!system_prompt.empty()) messages_.push_back({"system", std::move(system_prompt), {}});
}

absl::StatusOr<GenerateResult> Conversation::Reply(std::string_view user_message,
                                                   Sampler& sampler,
                                                   const GenerateOptions& options) {
  messages_.push_back({"user", std::string(user_message), {}});
  auto prompt = template_.Render(messages_, options_);
  if (!prompt.ok()) {
    messages_.pop_back();
    return prompt.status();
  }
  auto ids = session_.Tokenize(*prompt);
  if (!ids.ok()) {
    messages_.pop_back();
    return ids.status();
  }
  // The whole conversation is the prompt: say so when it no longer fits, rather than let the
  // session blame "the prompt" for what is mostly history.
  if (static_cast<int64_t>(ids->size()) > session_.context_size()) {
    messages_.pop_back();
    auto own = session_.Tokenize(user_message);
    return absl::ResourceExhaustedError(absl::StrCat(
        "the conversation would be ", ids->size(), " tokens with this message (",
        own.ok() ? absl::StrCat(own->size(), " of them the message itself, the rest ")
                 : std::string("most of them "),
        messages_.size(), " earlier message(s) and the chat template), but the context holds ",
        session_.context_size(), ": raise the context size (-c; the model allows up to ",
        session_.config().context_length, ") or start a new conversation"));
  }
  auto result = session_.Generate(*ids, sampler, options);
  if (!result.ok()) {
    messages_.pop_back();  // the turn never happened: the user may retry or shorten it
    return result.status();
  }
  messages_.push_back({"assistant", result->text, {}});
  return result;
}

}  // namespace jllm::runtime
