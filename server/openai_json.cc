#include "server/openai_json.h"

namespace jllm::server {
namespace {

Json Base(const ResponseMeta& meta, std::string_view object) {
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = std::string(object);
  j["created"] = meta.created;
  j["model"] = meta.model;
  return j;
}

Json ToolCallJson(const ToolCall& call, int index, bool streamed) {
  Json j = Json::object();
  if (streamed) j["index"] = index;
  j["id"] = call.id;
  j["type"] = "function";
  j["function"] = {{"name", call.name}, {"arguments", call.arguments}};
  return j;
}

}  // namespace

std::string_view FinishReason(runtime::StopReason stop, bool has_tool_calls) {
  switch (stop) {
    case runtime::StopReason::kMaxTokens:
    case runtime::StopReason::kContextFull:
      return "length";
    default:
      return has_tool_calls ? "tool_calls" : "stop";
  }
}

Json UsageJson(const runtime::GenerationStats& stats) {
  const int64_t prompt = stats.prompt_tokens + stats.reused_tokens;
  Json j = Json::object();
  j["prompt_tokens"] = prompt;
  j["completion_tokens"] = stats.generated_tokens;
  j["total_tokens"] = prompt + stats.generated_tokens;
  j["prompt_tokens_details"] = {{"cached_tokens", stats.reused_tokens}};
  return j;
}

Json TimingsJson(const runtime::GenerationStats& stats) {
  Json j = Json::object();
  j["cache_n"] = stats.reused_tokens;
  j["prompt_n"] = stats.prompt_tokens;
  j["prompt_ms"] = stats.prompt_seconds * 1e3;
  j["prompt_per_second"] = stats.prompt_tokens_per_second();
  j["predicted_n"] = stats.generated_tokens;
  j["predicted_ms"] = stats.decode_seconds * 1e3;
  j["predicted_per_second"] = stats.decode_tokens_per_second();
  return j;
}

Json ChatMessageJson(const OutputDelta& message) {
  Json m = Json::object();
  m["role"] = "assistant";
  if (message.content.empty() && !message.tool_calls.empty()) {
    m["content"] = nullptr;
  } else {
    m["content"] = message.content;
  }
  if (!message.reasoning.empty()) m["reasoning_content"] = message.reasoning;
  if (!message.tool_calls.empty()) {
    Json calls = Json::array();
    for (const ToolCall& c : message.tool_calls) calls.push_back(ToolCallJson(c, 0, false));
    m["tool_calls"] = std::move(calls);
  }
  return m;
}

Json ChatCompletionJson(const ResponseMeta& meta, const OutputDelta& message,
                        std::string_view finish_reason, const runtime::GenerationStats& stats) {
  Json j = Base(meta, "chat.completion");
  Json choice = Json::object();
  choice["index"] = 0;
  choice["message"] = ChatMessageJson(message);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = std::string(finish_reason);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = UsageJson(stats);
  j["timings"] = TimingsJson(stats);
  return j;
}

namespace {

Json ChatChunk(const ResponseMeta& meta, Json delta, const Json& finish_reason) {
  Json j = Base(meta, kChatChunkObject);
  Json choice = Json::object();
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  j["choices"] = Json::array({std::move(choice)});
  return j;
}

}  // namespace

Json ChatRoleChunk(const ResponseMeta& meta) {
  return ChatChunk(meta, {{"role", "assistant"}, {"content", ""}}, nullptr);
}

Json ChatDeltaChunk(const ResponseMeta& meta, const OutputDelta& delta, int first_tool_index) {
  Json d = Json::object();
  if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
  if (!delta.content.empty()) d["content"] = delta.content;
  if (!delta.tool_calls.empty()) {
    Json calls = Json::array();
    for (size_t i = 0; i < delta.tool_calls.size(); ++i) {
      calls.push_back(ToolCallJson(delta.tool_calls[i], first_tool_index + static_cast<int>(i), true));
    }
    d["tool_calls"] = std::move(calls);
  }
  return ChatChunk(meta, std::move(d), nullptr);
}

Json ChatFinalChunk(const ResponseMeta& meta, std::string_view finish_reason,
                    const runtime::GenerationStats& stats) {
  Json j = ChatChunk(meta, Json::object(), std::string(finish_reason));
  j["usage"] = UsageJson(stats);
  j["timings"] = TimingsJson(stats);
  return j;
}

Json UsageChunk(const ResponseMeta& meta, std::string_view object,
                const runtime::GenerationStats& stats) {
  Json j = Base(meta, object);
  j["choices"] = Json::array();
  j["usage"] = UsageJson(stats);
  j["timings"] = TimingsJson(stats);
  return j;
}

namespace {

Json CompletionChoice(std::string_view text, const Json& finish_reason) {
  Json choice = Json::object();
  choice["text"] = std::string(text);
  choice["index"] = 0;
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish_reason;
  return choice;
}

}  // namespace

Json CompletionJson(const ResponseMeta& meta, std::string_view text,
                    std::string_view finish_reason, const runtime::GenerationStats& stats) {
  Json j = Base(meta, kCompletionObject);
  j["choices"] = Json::array({CompletionChoice(text, std::string(finish_reason))});
  j["usage"] = UsageJson(stats);
  j["timings"] = TimingsJson(stats);
  return j;
}

Json CompletionChunk(const ResponseMeta& meta, std::string_view text) {
  Json j = Base(meta, kCompletionObject);
  j["choices"] = Json::array({CompletionChoice(text, nullptr)});
  return j;
}

Json CompletionFinalChunk(const ResponseMeta& meta, std::string_view finish_reason,
                          const runtime::GenerationStats& stats) {
  Json j = Base(meta, kCompletionObject);
  j["choices"] = Json::array({CompletionChoice("", std::string(finish_reason))});
  j["usage"] = UsageJson(stats);
  j["timings"] = TimingsJson(stats);
  return j;
}

Json ModelListJson(std::string_view model, int64_t created, int64_t context_size) {
  Json m = Json::object();
  m["id"] = std::string(model);
  m["object"] = "model";
  m["created"] = created;
  m["owned_by"] = "jllm";
  m["meta"] = {{"n_ctx", context_size}};
  Json j = Json::object();
  j["object"] = "list";
  j["data"] = Json::array({std::move(m)});
  return j;
}

std::string SseEvent(const Json& data) { return "data: " + Dump(data) + "\n\n"; }

}  // namespace jllm::server
