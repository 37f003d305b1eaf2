// Reading /v1/chat/completions and /v1/completions requests: what is accepted becomes the
// typed request; every refusal is a 400-class error that names the field.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/request_fields.h"

namespace jllm::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<ChatRequest> Chat(std::string_view body) {
  absl::StatusOr<Json> j = ParseRequestBody(body);
  if (!j.ok()) return j.status();
  return ParseChatRequest(*j);
}

absl::StatusOr<CompletionRequest> Completion(std::string_view body) {
  absl::StatusOr<Json> j = ParseRequestBody(body);
  if (!j.ok()) return j.status();
  return ParseCompletionRequest(*j);
}

// The request is refused with a 400 whose param is `param` and whose message contains `words`.
template <typename T>
void ExpectRefused(const absl::StatusOr<T>& r, const std::string& param, const std::string& words) {
  ASSERT_FALSE(r.ok()) << "accepted; expected a refusal naming " << param;
  const ErrorResponse e = ToErrorResponse(r.status());
  EXPECT_EQ(e.http_status, 400) << r.status();
  EXPECT_EQ(e.body["error"]["type"], "invalid_request_error");
  if (param.empty()) {
    EXPECT_TRUE(e.body["error"]["param"].is_null()) << e.body.dump();
  } else {
    EXPECT_EQ(e.body["error"]["param"], param) << r.status();
  }
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(words));
}

TEST(ChatRequestTest, ReadsMessagesSamplingAndStreaming) {
  auto r = Chat(R"({"model": "x", "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "2+"}, {"type": "text", "text": "2?"}]},
      {"role": "assistant", "content": null, "reasoning_content": "add",
       "tool_calls": [{"id": "call_1", "type": "function",
                       "function": {"name": "calc", "arguments": "{\"expr\": \"2+2\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "4"}],
    "temperature": 0.5, "top_p": 0.9, "top_k": 7, "min_p": 0.1, "presence_penalty": 0.25,
    "frequency_penalty": -1.5, "repetition_penalty": 1.1, "seed": 42, "max_tokens": 9,
    "max_completion_tokens": 11, "stop": ["\n\n", "END"], "stream": true,
    "stream_options": {"include_usage": true}, "n": 1,
    "chat_template_kwargs": {"enable_thinking": false}, "user": "ignored"})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, "system");
  EXPECT_EQ(r->messages[1].content, "2+2?");
  EXPECT_EQ(r->messages[2].content, "");
  EXPECT_EQ(r->messages[2].reasoning_content, "add");
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].name, "calc");
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, "{\"expr\": \"2+2\"}");
  EXPECT_EQ(r->messages[3].role, "tool");
  EXPECT_EQ(r->enable_thinking, false);
  const GenerationParams& g = r->generation;
  EXPECT_TRUE(g.stream);
  EXPECT_TRUE(g.include_usage);
  EXPECT_EQ(g.max_tokens, 11);  // max_completion_tokens wins
  EXPECT_THAT(g.stop, ElementsAre("\n\n", "END"));
  EXPECT_EQ(g.sampling.temperature, 0.5f);
  EXPECT_EQ(g.sampling.top_p, 0.9f);
  EXPECT_EQ(g.sampling.top_k, 7);
  EXPECT_EQ(g.sampling.min_p, 0.1f);
  EXPECT_EQ(g.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(g.sampling.presence_penalty, 0.25f);
  EXPECT_EQ(g.sampling.frequency_penalty, -1.5f);
  EXPECT_EQ(g.sampling.seed, 42u);
  EXPECT_FALSE(r->parse_tool_calls);  // no tools declared
}

TEST(ChatRequestTest, UnsetFieldsStayUnsetAndNullMeansUnset) {
  auto r = Chat(R"({"messages": [{"role": "user", "content": "Hi"}], "temperature": null,
                    "stop": "x", "seed": -1})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->generation.stream);
  EXPECT_FALSE(r->generation.max_tokens.has_value());
  EXPECT_FALSE(r->generation.sampling.temperature.has_value());
  EXPECT_FALSE(r->generation.sampling.seed.has_value());  // -1: random, as llama.cpp
  EXPECT_THAT(r->generation.stop, ElementsAre("x"));
  EXPECT_FALSE(r->enable_thinking.has_value());
}

TEST(ChatRequestTest, ToolsKeepTheirKeyOrderAndToolChoiceNoneHidesThem) {
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"b": {}, "a": {}}}}}])";
  auto r = Chat(R"({"messages": [{"role": "user", "content": "Hi"}], )" + tools + "}");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_TRUE(r->parse_tool_calls);
  EXPECT_EQ(r->tools[0]["function"]["parameters"]["properties"].dump(), R"({"b":{},"a":{}})");
  auto none = Chat(R"({"messages": [{"role": "user", "content": "Hi"}], "tool_choice": "none", )" + tools + "}");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->tools.empty());
  EXPECT_FALSE(none->parse_tool_calls);
}

TEST(ChatRequestTest, BadRequestsNameTheField) {
  ExpectRefused(Chat("{\"messages\": [}"), "", "not valid JSON");
  ExpectRefused(Chat("[1, 2]"), "", "must be a JSON object");
  ExpectRefused(Chat("{}"), "messages", "messages is missing");
  ExpectRefused(Chat(R"({"messages": []})"), "messages", "empty");
  ExpectRefused(Chat(R"({"messages": {"role": "user"}})"), "messages", "must be an array");
  ExpectRefused(Chat(R"({"messages": ["hi"]})"), "messages[0]", "must be an object");
  ExpectRefused(Chat(R"({"messages": [{"content": "x"}]})"), "messages[0].role", "missing");
  ExpectRefused(Chat(R"({"messages": [{"role": "narrator", "content": "x"}]})"), "messages[0].role",
                "unknown role 'narrator'");
  ExpectRefused(Chat(R"({"messages": [{"role": 3, "content": "x"}]})"), "messages[0].role",
                "must be a string, not an integer");
  ExpectRefused(Chat(R"({"messages": [{"role": "user", "content": 5}]})"), "messages[0].content",
                "must be a string or an array of text parts");
  ExpectRefused(Chat(R"({"messages": [{"role": "user"}]})"), "messages[0].content", "missing");
  ExpectRefused(Chat(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
                "messages[0].content[0].type", "text parts only");
  ExpectRefused(Chat(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"arguments": "{}"}}]}]})"),
                "messages[0].tool_calls[0].function.name", "missing");
  ExpectRefused(Chat(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}]})"),
                "messages[0].tool_calls[0].function.arguments", "JSON string or an object");

  const std::string ok_messages = R"("messages": [{"role": "user", "content": "Hi"}])";
  const auto with = [&](const std::string& field) { return Chat("{" + ok_messages + ", " + field + "}"); };
  ExpectRefused(with(R"("temperature": "hot")"), "temperature", "must be a number, not a string");
  ExpectRefused(with(R"("temperature": -1)"), "temperature", "[0, inf)");
  ExpectRefused(with(R"("top_p": 0)"), "top_p", "(0, 1]");
  ExpectRefused(with(R"("top_k": 2.5)"), "top_k", "must be an integer");
  ExpectRefused(with(R"("top_k": -3)"), "top_k", ">= 0");
  ExpectRefused(with(R"("min_p": 2)"), "min_p", "[0, 1]");
  ExpectRefused(with(R"("presence_penalty": 3)"), "presence_penalty", "[-2, 2]");
  ExpectRefused(with(R"("frequency_penalty": -2.5)"), "frequency_penalty", "[-2, 2]");
  ExpectRefused(with(R"("frequency_penalty": "x")"), "frequency_penalty", "must be a number");
  ExpectRefused(with(R"("repetition_penalty": 0)"), "repetition_penalty", "(0, inf)");
  ExpectRefused(with(R"("seed": "x")"), "seed", "must be an integer");
  ExpectRefused(with(R"("max_tokens": -5)"), "max_tokens", ">= 0");
  ExpectRefused(with(R"("max_tokens": 18446744073709551615)"), "max_tokens", "too large");
  ExpectRefused(with(R"("max_completion_tokens": "ten")"), "max_completion_tokens", "must be an integer");
  ExpectRefused(with(R"("stream": "yes")"), "stream", "must be a boolean");
  ExpectRefused(with(R"("stream_options": {"include_usage": 1})"), "stream_options.include_usage",
                "must be a boolean");
  ExpectRefused(with(R"("stop": 7)"), "stop", "a string or an array of strings");
  ExpectRefused(with(R"("stop": ["a", 7])"), "stop[1]", "must be a string");
  ExpectRefused(with(R"("n": 2)"), "n", "n must be 1");
  ExpectRefused(with(R"("logprobs": true)"), "logprobs", "not supported");
  ExpectRefused(with(R"("response_format": {"type": "json_object"})"), "response_format.type", "not supported");
  ExpectRefused(with(R"("tools": {"name": "f"})"), "tools", "must be an array");
  ExpectRefused(with(R"("tools": [{"type": "function"}])"), "tools[0].function", "missing");
  ExpectRefused(with(R"("tools": [{"type": "retrieval", "function": {"name": "f"}}])"), "tools[0].type",
                "only 'function'");
  ExpectRefused(with(R"("tool_choice": "required")"), "tool_choice", "cannot force a tool call");
  ExpectRefused(with(R"("tool_choice": {"type": "function", "function": {"name": "f"}})"), "tool_choice",
                "cannot force a tool call");
  ExpectRefused(with(R"("chat_template_kwargs": {"enable_thinking": "no"})"),
                "chat_template_kwargs.enable_thinking", "must be a boolean");
}

TEST(CompletionRequestTest, PromptForms) {
  auto text = Completion(R"({"prompt": "def f():", "max_tokens": 3})");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(std::get<std::string>(text->prompt), "def f():");
  EXPECT_EQ(text->generation.max_tokens, 3);
  auto ids = Completion(R"({"prompt": [1, 2, 3]})");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_THAT(std::get<std::vector<int32_t>>(ids->prompt), ElementsAre(1, 2, 3));
  auto batch_of_one = Completion(R"({"prompt": [[4, 5]]})");
  ASSERT_TRUE(batch_of_one.ok()) << batch_of_one.status();
  EXPECT_THAT(std::get<std::vector<int32_t>>(batch_of_one->prompt), ElementsAre(4, 5));
  auto text_batch = Completion(R"({"prompt": ["x"]})");
  ASSERT_TRUE(text_batch.ok()) << text_batch.status();
  EXPECT_EQ(std::get<std::string>(text_batch->prompt), "x");
}

TEST(CompletionRequestTest, BadRequestsNameTheField) {
  ExpectRefused(Completion("{}"), "prompt", "missing");
  ExpectRefused(Completion(R"({"prompt": ""})"), "prompt", "empty");
  ExpectRefused(Completion(R"({"prompt": []})"), "prompt", "empty");
  ExpectRefused(Completion(R"({"prompt": ["a", "b"]})"), "prompt", "one per request");
  ExpectRefused(Completion(R"({"prompt": [1, -2]})"), "prompt[1]", "token id");
  ExpectRefused(Completion(R"({"prompt": [[1, "x"]]})"), "prompt[0][1]", "token id");
  ExpectRefused(Completion(R"({"prompt": 12})"), "prompt", "a string or an array of token ids");
  ExpectRefused(Completion(R"({"prompt": "x", "echo": true})"), "echo", "not supported");
  ExpectRefused(Completion(R"({"prompt": "x", "logprobs": 2})"), "logprobs", "not supported");
  ExpectRefused(Completion(R"({"prompt": "x", "n": 3})"), "n", "n must be 1");
}

TEST(ApiErrorTest, StatusesMapToOpenAiErrors) {
  const ErrorResponse auth = ToErrorResponse(absl::UnauthenticatedError("no key"));
  EXPECT_EQ(auth.http_status, 401);
  EXPECT_EQ(auth.body.dump(),
            R"({"error":{"message":"no key","type":"authentication_error","param":null,"code":"invalid_api_key"}})");
  const ErrorResponse busy = ToErrorResponse(absl::UnavailableError("busy"));
  EXPECT_EQ(busy.http_status, 503);
  EXPECT_EQ(busy.body["error"]["type"], "unavailable_error");
  const ErrorResponse ctx = ToErrorResponse(ContextLengthError("messages", "too long"));
  EXPECT_EQ(ctx.http_status, 400);
  EXPECT_EQ(ctx.body["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(ctx.body["error"]["param"], "messages");
  EXPECT_EQ(ToErrorResponse(absl::InternalError("boom")).http_status, 500);
  EXPECT_EQ(MakeErrorResponse(413, "big").body["error"]["type"], "request_too_large");
}

}  // namespace
}  // namespace jllm::server
