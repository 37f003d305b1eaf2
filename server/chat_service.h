// The model behind the HTTP endpoints: renders chat requests with the chat template, tokenizes,
// checks prompts against the context, and runs generations on the one Session (whose KV cache
// carries over from request to request: a conversation resent in full reuses its prefix).
//
// Prepare* and the tokenizer calls may run on any thread at any time. Run must not run twice at
// once: callers hold the GenerationQueue's slot around it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/qwen3_output_parser.h"
#include "server/sampling_defaults.h"

namespace jllm::server {

struct ChatServiceOptions {
  SamplingFlags sampling;       // the command line's sampling flags and -n
  bool enable_thinking = true;  // when a request does not say (chat_template_kwargs)
};

// A request ready to run: its prompt tokens and everything the generation loop needs.
struct PreparedGeneration {
  std::vector<int32_t> prompt;
  runtime::SamplerOptions sampler;
  int64_t max_tokens = -1;
  std::vector<std::string> stop;
  bool chat = true;              // parse reasoning and tool calls (false: raw completion text)
  bool parse_tool_calls = false;
};

struct GenerationOutcome {
  OutputDelta message;  // everything generated: reasoning, content, tool calls (with ids)
  runtime::StopReason stop = runtime::StopReason::kEndOfGeneration;
  runtime::GenerationStats stats;
};

class ChatService {
 public:
  ChatService(std::unique_ptr<runtime::Session> session, runtime::ChatTemplate chat_template,
              ChatServiceOptions options);

  // The prompt text the chat template makes of a request (for tests and diagnostics).
  absl::StatusOr<std::string> RenderChat(const ChatRequest& request) const;
  absl::StatusOr<PreparedGeneration> PrepareChat(const ChatRequest& request) const;
  absl::StatusOr<PreparedGeneration> PrepareCompletion(const CompletionRequest& request) const;

  // Receives the output as it becomes final; returning false cancels at this token. Tool
  // calls come with their ids.
  using DeltaCallback = std::function<bool(const OutputDelta& delta)>;
  // Asked at every token; returning false cancels (shutdown).
  using KeepGoing = std::function<bool()>;
  // Runs one generation; StopReason::kCancelled when a callback cancelled it.
  absl::StatusOr<GenerationOutcome> Run(const PreparedGeneration& generation,
                                        const DeltaCallback& on_delta, const KeepGoing& keep_going);

  // /tokenize and /detokenize.
  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text, bool parse_special) const;
  absl::StatusOr<std::string> Detokenize(const std::vector<int32_t>& ids) const;

  int64_t context_size() const { return session_->context_size(); }
  // KV cache positions in use after the last generation.
  int64_t kv_cache_used() const { return kv_used_.load(); }

 private:
  absl::Status CheckFits(const std::vector<int32_t>& prompt, std::string_view param) const;

  std::unique_ptr<runtime::Session> session_;
  runtime::ChatTemplate template_;
  ChatServiceOptions options_;
  std::atomic<int64_t> kv_used_{0};
};

// A fresh id: `prefix` and 24 random letters and digits ("chatcmpl-", "call_").
std::string NewId(std::string_view prefix);

}  // namespace jllm::server
