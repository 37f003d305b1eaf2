// The JSON that OpenAI clients expect back: chat.completion and chat.completion.chunk objects,
// text_completion objects and their chunks, usage (with prompt_tokens_details.cached_tokens),
// a llama-server-like `timings` object, the model list, and SSE framing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/session.h"
#include "server/json.h"
#include "server/qwen3_output_parser.h"

namespace jllm::server {

// What every response object of one request shares.
struct ResponseMeta {
  std::string id;       // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// "stop", "length" (token limit or full context) or "tool_calls" (the message has calls).
std::string_view FinishReason(runtime::StopReason stop, bool has_tool_calls);

// prompt_tokens counts the whole prompt, the cached part included.
Json UsageJson(const runtime::GenerationStats& stats);
// prompt_n: prompt tokens run through the model; cache_n: those reused from the cache.
Json TimingsJson(const runtime::GenerationStats& stats);

// The assistant message of a whole chat completion: content is null when there is none but
// tool calls; reasoning_content appears when there was reasoning.
Json ChatMessageJson(const OutputDelta& message);
Json ChatCompletionJson(const ResponseMeta& meta, const OutputDelta& message,
                        std::string_view finish_reason, const runtime::GenerationStats& stats);

// A streamed chat completion: the first chunk names the role; delta chunks carry reasoning,
// content and tool calls (numbered from `first_tool_index`); the final chunk has an empty
// delta, the finish reason, usage and timings; with include_usage a last chunk has no choices
// and the usage, as OpenAI sends it.
Json ChatRoleChunk(const ResponseMeta& meta);
Json ChatDeltaChunk(const ResponseMeta& meta, const OutputDelta& delta, int first_tool_index);
Json ChatFinalChunk(const ResponseMeta& meta, std::string_view finish_reason,
                    const runtime::GenerationStats& stats);
Json UsageChunk(const ResponseMeta& meta, std::string_view object,
                const runtime::GenerationStats& stats);
inline constexpr std::string_view kChatChunkObject = "chat.completion.chunk";

Json CompletionJson(const ResponseMeta& meta, std::string_view text,
                    std::string_view finish_reason, const runtime::GenerationStats& stats);
// A streamed completion's chunk; the final one (finish_reason set) also has usage and timings.
Json CompletionChunk(const ResponseMeta& meta, std::string_view text);
Json CompletionFinalChunk(const ResponseMeta& meta, std::string_view finish_reason,
                          const runtime::GenerationStats& stats);
inline constexpr std::string_view kCompletionObject = "text_completion";

Json ModelListJson(std::string_view model, int64_t created, int64_t context_size);

// One server-sent event carrying `data`, and the event that ends an OpenAI stream.
std::string SseEvent(const Json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace jllm::server
