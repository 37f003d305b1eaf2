// The response objects, field by field, against OpenAI's documented shapes (usage with
// prompt_tokens_details.cached_tokens; chunks with delta and finish_reason; SSE framing).
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/openai_json.h"

namespace jllm::server {
namespace {

runtime::GenerationStats Stats() {
  runtime::GenerationStats s;
  s.prompt_tokens = 30;  // prefilled
  s.reused_tokens = 70;  // from the cache
  s.prompt_seconds = 0.5;
  s.generated_tokens = 11;
  s.decode_steps = 10;
  s.decode_seconds = 2.0;
  return s;
}

const ResponseMeta kMeta{"chatcmpl-abc", 1700000000, "qwen3"};

TEST(OpenAiJsonTest, UsageCountsTheWholePromptAndTheCachedPart) {
  EXPECT_EQ(UsageJson(Stats()).dump(),
            R"({"prompt_tokens":100,"completion_tokens":11,"total_tokens":111,)"
            R"("prompt_tokens_details":{"cached_tokens":70}})");
  const Json t = TimingsJson(Stats());
  EXPECT_EQ(t["cache_n"], 70);
  EXPECT_EQ(t["prompt_n"], 30);
  EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 500.0);
  EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 60.0);
  EXPECT_EQ(t["predicted_n"], 11);
  EXPECT_DOUBLE_EQ(t["predicted_ms"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 5.0);  // 10 decode steps in 2 s
}

TEST(OpenAiJsonTest, FinishReasons) {
  using runtime::StopReason;
  EXPECT_EQ(FinishReason(StopReason::kEndOfGeneration, false), "stop");
  EXPECT_EQ(FinishReason(StopReason::kStopString, false), "stop");
  EXPECT_EQ(FinishReason(StopReason::kEndOfGeneration, true), "tool_calls");
  EXPECT_EQ(FinishReason(StopReason::kMaxTokens, true), "length");
  EXPECT_EQ(FinishReason(StopReason::kContextFull, false), "length");
}

TEST(OpenAiJsonTest, ChatCompletion) {
  OutputDelta m;
  m.reasoning = "hmm";
  m.content = "Hi!";
  const Json j = ChatCompletionJson(kMeta, m, "stop", Stats());
  EXPECT_EQ(j["id"], "chatcmpl-abc");
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "qwen3");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["message"].dump(),
            R"({"role":"assistant","content":"Hi!","reasoning_content":"hmm"})");
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 70);
  EXPECT_EQ(j["timings"]["cache_n"], 70);
}

TEST(OpenAiJsonTest, ToolCallsWithoutContentHaveNullContent) {
  OutputDelta m;
  m.tool_calls = {{"call_1", "get_weather", "{\"city\": \"Paris\"}"}};
  EXPECT_EQ(ChatMessageJson(m).dump(),
            R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",)"
            R"("function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]})");
}

TEST(OpenAiJsonTest, ChatChunks) {
  EXPECT_EQ(ChatRoleChunk(kMeta)["choices"][0]["delta"].dump(), R"({"role":"assistant","content":""})");
  OutputDelta d;
  d.content = "x";
  d.tool_calls = {{"call_2", "b", "{}"}, {"call_3", "c", "{}"}};
  const Json chunk = ChatDeltaChunk(kMeta, d, 1);
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(chunk["choices"][0]["delta"]["content"], "x");
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][0]["index"], 1);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][1]["index"], 2);
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][1]["id"], "call_3");
  EXPECT_EQ(chunk["choices"][0]["delta"]["tool_calls"][1]["function"]["name"], "c");
  const Json last = ChatFinalChunk(kMeta, "tool_calls", Stats());
  EXPECT_EQ(last["choices"][0]["delta"].dump(), "{}");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(last["usage"]["total_tokens"], 111);
  const Json usage = UsageChunk(kMeta, kChatChunkObject, Stats());
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 11);
}

TEST(OpenAiJsonTest, Completions) {
  const Json j = CompletionJson({"cmpl-1", 5, "m"}, " return 1", "length", Stats());
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["choices"][0]["text"], " return 1");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(CompletionChunk({"cmpl-1", 5, "m"}, "ab")["choices"][0]["text"], "ab");
  EXPECT_TRUE(CompletionChunk({"cmpl-1", 5, "m"}, "ab")["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(CompletionFinalChunk({"cmpl-1", 5, "m"}, "stop", Stats())["choices"][0]["finish_reason"], "stop");
}

TEST(OpenAiJsonTest, ModelsAndSse) {
  EXPECT_EQ(ModelListJson("qwen3", 7, 4096).dump(),
            R"({"object":"list","data":[{"id":"qwen3","object":"model","created":7,"owned_by":"jllm","meta":{"n_ctx":4096}}]})");
  EXPECT_EQ(SseEvent(Json{{"a", "line1\nline2"}}), "data: {\"a\":\"line1\\nline2\"}\n\n");
  EXPECT_EQ(kSseDone, "data: [DONE]\n\n");
}

}  // namespace
}  // namespace jllm::server
