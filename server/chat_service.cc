#include "server/chat_service.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "server/api_error.h"

namespace jllm::server {
namespace {

uint64_t RandomSeed() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

}  // namespace

std::string NewId(std::string_view prefix) {
  static constexpr std::string_view kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kAlphabet[RandomSeed() % kAlphabet.size()];
  return id;
}

ChatService::ChatService(std::unique_ptr<runtime::Session> session,
                         runtime::ChatTemplate chat_template, ChatServiceOptions options)
    : session_(std::move(session)), template_(std::move(chat_template)), options_(options) {}

absl::StatusOr<std::string> ChatService::RenderChat(const ChatRequest& request) const {
  runtime::ChatOptions co;
  co.add_generation_prompt = true;
  co.enable_thinking = request.enable_thinking.value_or(options_.enable_thinking);
  co.tools = request.tools;
  auto text = template_.Render(request.messages, co);
  if (!text.ok()) return FieldError("messages", std::string(text.status().message()));
  return text;
}

absl::Status ChatService::CheckFits(const std::vector<int32_t>& prompt,
                                    std::string_view param) const {
  if (static_cast<int64_t>(prompt.size()) > context_size()) {
    return ContextLengthError(
        param, absl::StrCat("the prompt is ", prompt.size(), " tokens but the context holds ",
                            context_size(), ": shorten ", Sv(param),
                            " or restart jllm-server with a larger -c (the model allows up to ",
                            session_->config().context_length, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PreparedGeneration> ChatService::PrepareChat(const ChatRequest& request) const {
  ASSIGN_OR_RETURN(std::string text, RenderChat(request));
  PreparedGeneration g;
  ASSIGN_OR_RETURN(g.prompt, session_->Tokenize(text));
  RETURN_IF_ERROR(CheckFits(g.prompt, "messages"));
  const bool thinking = request.enable_thinking.value_or(options_.enable_thinking);
  g.sampler = ResolveSampling(request.generation.sampling, options_.sampling,
                              thinking ? SamplingMode::kChatThinking : SamplingMode::kChatNonThinking,
                              RandomSeed());
  g.max_tokens = request.generation.max_tokens.value_or(options_.sampling.max_tokens);
  g.stop = request.generation.stop;
  g.chat = true;
  g.parse_tool_calls = request.parse_tool_calls;
  return g;
}

absl::StatusOr<PreparedGeneration> ChatService::PrepareCompletion(
    const CompletionRequest& request) const {
  PreparedGeneration g;
  if (const auto* text = std::get_if<std::string>(&request.prompt)) {
    ASSIGN_OR_RETURN(g.prompt, session_->Tokenize(*text));
    if (g.prompt.empty()) return FieldError("prompt", "prompt has no tokens");
  } else {
    g.prompt = std::get<std::vector<int32_t>>(request.prompt);
    const runtime::Tokenizer& tok = session_->tokenizer();
    for (size_t i = 0; i < g.prompt.size(); ++i) {
      if (!tok.IsValidId(g.prompt[i])) {
        const std::string path = absl::StrCat("prompt[", i, "]");
        return FieldError(path, absl::StrCat(path, ": token id ", g.prompt[i],
                                             " is outside the vocabulary [0, ", tok.n_vocab(), ")"));
      }
    }
  }
  RETURN_IF_ERROR(CheckFits(g.prompt, "prompt"));
  g.sampler = ResolveSampling(request.generation.sampling, options_.sampling,
                              SamplingMode::kCompletion, RandomSeed());
  g.max_tokens = request.generation.max_tokens.value_or(options_.sampling.max_tokens);
  g.stop = request.generation.stop;
  g.chat = false;
  return g;
}

absl::StatusOr<GenerationOutcome> ChatService::Run(const PreparedGeneration& generation,
                                                   const DeltaCallback& on_delta,
                                                   const KeepGoing& keep_going) {
  GenerationOutcome outcome;
  Qwen3OutputParser parser(generation.parse_tool_calls);
  bool cancelled = false;
  // Gives ids to new tool calls, keeps the whole message, and passes the delta on.
  const auto deliver = [&](OutputDelta delta) {
    if (delta.empty()) return;
    for (ToolCall& call : delta.tool_calls) call.id = NewId("call_");
    outcome.message.reasoning += delta.reasoning;
    outcome.message.content += delta.content;
    outcome.message.tool_calls.insert(outcome.message.tool_calls.end(), delta.tool_calls.begin(),
                                      delta.tool_calls.end());
    if (on_delta && !cancelled && !on_delta(delta)) cancelled = true;
  };

  runtime::GenerateOptions go;
  go.max_tokens = generation.max_tokens;
  go.stop_strings = generation.stop;
  go.on_text = [&](std::string_view piece) {
    if (generation.chat) {
      deliver(parser.Push(piece));
    } else {
      OutputDelta d;
      d.content = std::string(piece);
      deliver(std::move(d));
    }
    if (keep_going && !keep_going()) cancelled = true;
    return !cancelled;
  };
  runtime::Sampler sampler(generation.sampler);
  auto result = session_->Generate(generation.prompt, sampler, go);
  kv_used_.store(static_cast<int64_t>(session_->cached_tokens().size()));
  if (!result.ok()) return result.status();
  if (generation.chat) deliver(parser.Finish());
  outcome.stop = cancelled ? runtime::StopReason::kCancelled : result->stop;
  outcome.stats = result->stats;
  return outcome;
}

absl::StatusOr<std::vector<int32_t>> ChatService::Tokenize(std::string_view text,
                                                           bool parse_special) const {
  runtime::EncodeOptions eo;
  eo.parse_special = parse_special;
  return session_->tokenizer().Encode(text, eo);
}

absl::StatusOr<std::string> ChatService::Detokenize(const std::vector<int32_t>& ids) const {
  const runtime::Tokenizer& tok = session_->tokenizer();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!tok.IsValidId(ids[i])) {
      const std::string path = absl::StrCat("tokens[", i, "]");
      return FieldError(path, absl::StrCat(path, ": token id ", ids[i],
                                           " is outside the vocabulary [0, ", tok.n_vocab(), ")"));
    }
  }
  return tok.Decode(ids);
}

}  // namespace jllm::server
