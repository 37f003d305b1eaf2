// The service between HTTP and the Session, on a backend that says chosen tokens: Qwen3
// outputs given verbatim and tokenized by the real Qwen3 vocabulary (a tool call arrives as
// "<tool_call>" plus its JSON split over many tokens), the prompt cache across a three-turn
// conversation, sampling defaults, context checks and cancellation.
#include "server/chat_service.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api_error.h"
#include "server/openai_json.h"
#include "server/request_fields.h"
#include "tests/server/server_test_support.h"
#include "tests/tokenizer/qwen3_fixture.h"

namespace jllm::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Bytes;
using testing::ReplyBackend;

ChatRequest ParseChat(const std::string& body) {
  auto j = ParseRequestBody(body);
  EXPECT_TRUE(j.ok()) << j.status();
  auto r = ParseChatRequest(j.value_or(Json::object()));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(ChatRequest{});
}

struct RunResult {
  GenerationOutcome outcome;
  std::vector<OutputDelta> deltas;
};

RunResult Generate(ChatService& service, const PreparedGeneration& g) {
  RunResult r;
  auto outcome = service.Run(g, [&](const OutputDelta& d) {
    r.deltas.push_back(d);
    return true;
  }, nullptr);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  if (outcome.ok()) r.outcome = *std::move(outcome);
  return r;
}

class Qwen3ReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JLLM_REQUIRE_TEST_DATA(!testing_qwen3::Qwen3TokenizerDir().empty(), testing_qwen3::kQwen3Missing);
    std::string error;
    vocab_ = testing_qwen3::Qwen3Data(&error);
    ASSERT_NE(vocab_, nullptr) << error;
    auto tok = runtime::Tokenizer::Create(*vocab_);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = *std::move(tok);
    const auto im_end = tokenizer_->FindAddedToken("<|im_end|>");
    ASSERT_TRUE(im_end.has_value());
    service_ = testing::ReplyService(*vocab_, *im_end, &backend_, 1024);
    ASSERT_NE(service_, nullptr);
  }

  // The model says `text` (tokenized as the model would have produced it), then <|im_end|>.
  RunResult Say(const std::string& text, const std::string& request) {
    auto ids = tokenizer_->Encode(text);
    EXPECT_TRUE(ids.ok()) << ids.status();
    backend_->SetReply(ids.value_or(std::vector<int32_t>{}));
    reply_tokens_ = ids.value_or(std::vector<int32_t>{}).size();
    auto g = service_->PrepareChat(ParseChat(request));
    EXPECT_TRUE(g.ok()) << g.status();
    return Generate(*service_, g.value_or(PreparedGeneration{}));
  }

  const gguf::TokenizerData* vocab_ = nullptr;
  std::unique_ptr<runtime::Tokenizer> tokenizer_;
  std::unique_ptr<ChatService> service_;
  ReplyBackend* backend_ = nullptr;
  size_t reply_tokens_ = 0;
};

const char* kWeatherRequest = R"({"messages": [{"role": "user", "content": "Weather in Paris and Rome?"}],
  "temperature": 0, "tools": [{"type": "function", "function": {"name": "get_weather",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})";

TEST_F(Qwen3ReplyTest, ReasoningThenTwoToolCallsStreamedTokenByToken) {
  const RunResult r = Say(
      "<think>\nThe user asks about two cities, so I call the tool twice.\n</think>\n\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
      kWeatherRequest);
  EXPECT_GT(reply_tokens_, 30u);  // the JSON really is split over many tokens
  const OutputDelta& m = r.outcome.message;
  EXPECT_EQ(m.reasoning, "The user asks about two cities, so I call the tool twice.");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(m.tool_calls[1].arguments, "{\"city\": \"Rome\"}");
  EXPECT_THAT(m.tool_calls[0].id, StartsWith("call_"));
  EXPECT_NE(m.tool_calls[0].id, m.tool_calls[1].id);
  EXPECT_EQ(FinishReason(r.outcome.stop, true), "tool_calls");
  // Reasoning arrives in many deltas as it is generated; each call arrives whole, once.
  int reasoning_deltas = 0, call_deltas = 0;
  for (const OutputDelta& d : r.deltas) {
    reasoning_deltas += d.reasoning.empty() ? 0 : 1;
    call_deltas += static_cast<int>(d.tool_calls.size());
    if (!d.tool_calls.empty()) {
      EXPECT_EQ(d.tool_calls[0].name, "get_weather");
    }
  }
  EXPECT_GT(reasoning_deltas, 5);
  EXPECT_EQ(call_deltas, 2);
}

TEST_F(Qwen3ReplyTest, MalformedToolCallIsContentWithFinishReasonStop) {
  const std::string text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"\n</tool_call>";
  const RunResult r = Say(text, kWeatherRequest);
  EXPECT_TRUE(r.outcome.message.tool_calls.empty());
  EXPECT_EQ(r.outcome.message.content, text);
  EXPECT_EQ(FinishReason(r.outcome.stop, false), "stop");
}

TEST_F(Qwen3ReplyTest, NoThinkingRequestGetsContentOnly) {
  const RunResult r = Say("Sure: 391.", R"({"messages": [{"role": "user", "content": "17*23?"}],
      "chat_template_kwargs": {"enable_thinking": false}, "temperature": 0})");
  EXPECT_EQ(r.outcome.message.content, "Sure: 391.");
  EXPECT_EQ(r.outcome.message.reasoning, "");
  auto text = service_->RenderChat(ParseChat(R"({"messages": [{"role": "user", "content": "17*23?"}],
      "chat_template_kwargs": {"enable_thinking": false}})"));
  ASSERT_TRUE(text.ok());
  EXPECT_THAT(*text, ::testing::EndsWith("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

class ByteReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    vocab_ = gguf::ByteLevelTokenizerData();
    service_ = testing::ReplyService(vocab_, testing::kImEnd, &backend_, 256);
    ASSERT_NE(service_, nullptr);
  }
  gguf::TokenizerData vocab_;
  std::unique_ptr<ChatService> service_;
  ReplyBackend* backend_ = nullptr;
};

// A chat front-end resends the whole conversation every turn: each turn reuses the previous
// prompt and the reply the model generated (all but its last, unfed token), and prefills only
// the rest. The backend's own count of the tokens it ran checks the statistics.
TEST_F(ByteReplyTest, ThreeTurnConversationReusesTheCachedPrefix) {
  const std::vector<std::string> replies = {"Hello!", "Fine, thanks.", "Bye."};
  std::string messages = R"([{"role": "system", "content": "Be kind."})";
  size_t previous_prompt = 0;
  for (size_t turn = 0; turn < replies.size(); ++turn) {
    messages += R"(, {"role": "user", "content": "turn )" + std::to_string(turn) + "\"}";
    backend_->SetReply(Bytes(replies[turn]));
    auto g = service_->PrepareChat(ParseChat(R"({"messages": )" + messages + R"(], "temperature": 0})"));
    ASSERT_TRUE(g.ok()) << g.status();
    const int64_t seen_before = backend_->tokens_seen();
    const RunResult r = Generate(*service_, *g);
    const runtime::GenerationStats& s = r.outcome.stats;
    EXPECT_EQ(r.outcome.message.content, replies[turn]);
    // The reply's characters, then <|im_end|>, which is sampled but never fed back.
    EXPECT_EQ(s.generated_tokens, static_cast<int64_t>(replies[turn].size()) + 1);
    EXPECT_EQ(s.prompt_tokens + s.reused_tokens, static_cast<int64_t>(g->prompt.size()));
    EXPECT_EQ(backend_->tokens_seen() - seen_before, s.prompt_tokens + s.decode_steps);
    if (turn == 0) {
      EXPECT_EQ(s.reused_tokens, 0);
    } else {
      EXPECT_EQ(s.reused_tokens, static_cast<int64_t>(previous_prompt + replies[turn - 1].size()));
      EXPECT_LT(s.prompt_tokens, 30);  // "<|im_end|>\n<|im_start|>user\nturn N<|im_end|>\n..."
    }
    previous_prompt = g->prompt.size();
    messages += R"(, {"role": "assistant", "content": ")" + replies[turn] + "\"}";
  }
}

TEST_F(ByteReplyTest, PromptsLongerThanTheContextAreRefused) {
  const std::string long_text(400, 'x');
  auto g = service_->PrepareChat(ParseChat(R"({"messages": [{"role": "user", "content": ")" + long_text + "\"}]}"));
  ASSERT_FALSE(g.ok());
  const ErrorResponse e = ToErrorResponse(g.status());
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.body["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(e.body["error"]["param"], "messages");
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("context holds 256"));

  CompletionRequest c;
  c.prompt = std::vector<int32_t>{1, 2, 999};
  auto bad_id = service_->PrepareCompletion(c);
  ASSERT_FALSE(bad_id.ok());
  EXPECT_EQ(ErrorParam(bad_id.status()), "prompt[2]");
  EXPECT_THAT(std::string(bad_id.status().message()), HasSubstr("outside the vocabulary [0, 261)"));
}

TEST_F(ByteReplyTest, SamplingDefaultsFollowThinkingAndYieldToFlagsAndRequests) {
  const std::string hi = R"({"role": "user", "content": "Hi"})";
  auto thinking = service_->PrepareChat(ParseChat("{\"messages\": [" + hi + "]}"));
  ASSERT_TRUE(thinking.ok());
  EXPECT_EQ(thinking->sampler.temperature, kQwen3Thinking.temperature);
  EXPECT_EQ(thinking->sampler.top_p, kQwen3Thinking.top_p);
  EXPECT_EQ(thinking->sampler.top_k, kQwen3Thinking.top_k);
  EXPECT_EQ(thinking->sampler.min_p, kQwen3Thinking.min_p);
  auto direct = service_->PrepareChat(
      ParseChat("{\"messages\": [" + hi + "], \"chat_template_kwargs\": {\"enable_thinking\": false}}"));
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->sampler.temperature, kQwen3NonThinking.temperature);
  EXPECT_EQ(direct->sampler.top_p, kQwen3NonThinking.top_p);

  SamplingFlags flags;
  flags.temperature = 0.3f;
  flags.top_k = 5;
  flags.presence_penalty = 0.5f;
  flags.frequency_penalty = 0.25f;
  SamplingRequest request;
  request.top_k = 9;
  request.frequency_penalty = 1.0f;
  const runtime::SamplerOptions o = ResolveSampling(request, flags, SamplingMode::kChatThinking, 77);
  EXPECT_EQ(o.temperature, 0.3f);  // the flag over Qwen3's 0.6
  EXPECT_EQ(o.top_k, 9);           // the request over the flag
  EXPECT_EQ(o.top_p, kQwen3Thinking.top_p);
  EXPECT_EQ(o.presence_penalty, 0.5f);   // the flag
  EXPECT_EQ(o.frequency_penalty, 1.0f);  // the request over the flag
  EXPECT_EQ(o.seed, 77u);
  const runtime::SamplerOptions completion = ResolveSampling({}, {}, SamplingMode::kCompletion, 1);
  EXPECT_EQ(completion.temperature, runtime::SamplerOptions{}.temperature);  // jllm-run's
}

TEST_F(ByteReplyTest, ADeltaCallbackReturningFalseCancels) {
  backend_->SetReply(Bytes("a"), /*repeat=*/true);
  auto g = service_->PrepareChat(ParseChat(R"({"messages": [{"role": "user", "content": "Hi"}], "temperature": 0})"));
  ASSERT_TRUE(g.ok());
  int deltas = 0;
  auto outcome = service_->Run(*g, [&](const OutputDelta&) { return ++deltas < 3; }, nullptr);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->stop, runtime::StopReason::kCancelled);
  EXPECT_EQ(deltas, 3);
  EXPECT_EQ(outcome->stats.generated_tokens, 3);

  bool go = true;
  auto stopped = service_->Run(*g, nullptr, [&] { return std::exchange(go, false); });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->stop, runtime::StopReason::kCancelled);
  EXPECT_EQ(stopped->stats.generated_tokens, 2);
}

TEST_F(ByteReplyTest, CompletionsAreRawTextWithStopStringsAndLimits) {
  backend_->SetReply(Bytes("<think>x</think> END more"));
  CompletionRequest c;
  c.prompt = std::string("Once");
  c.generation.stop = {" END"};
  auto g = service_->PrepareCompletion(c);
  ASSERT_TRUE(g.ok());
  const RunResult r = Generate(*service_, *g);
  EXPECT_EQ(r.outcome.message.content, "<think>x</think>");
  EXPECT_EQ(r.outcome.stop, runtime::StopReason::kStopString);
  c.generation.stop.clear();
  c.generation.max_tokens = 4;
  auto limited = service_->PrepareCompletion(c);
  ASSERT_TRUE(limited.ok());
  const RunResult l = Generate(*service_, *limited);
  EXPECT_EQ(l.outcome.message.content, "<thi");
  EXPECT_EQ(FinishReason(l.outcome.stop, false), "length");
}

}  // namespace
}  // namespace jllm::server
