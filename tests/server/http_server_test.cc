// The HTTP server in-process on a free loopback port, over a backend that says chosen bytes:
// loading, every kind of bad input (status, error object, and /health still answering),
// streaming against non-streaming, usage, stop strings and limits, tool calls in deltas, the
// queue (one generation, FIFO, 503 when full), a client that vanishes mid-stream, a stalled
// client, shutdown during a stream, a burst of sequential and concurrent clients, and the
// prompt cache as the responses report it.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/server_test_support.h"

namespace jllm::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace testing;  // NOLINT: the helpers of server_test_support.h

const std::string kHi = R"({"messages": [{"role": "user", "content": "Hi"}], "temperature": 0)";

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpServerOptions options = {}, int64_t context = 256) {
    vocab_ = gguf::ByteLevelTokenizerData();
    options.model_alias = "tiny";
    server_ = std::make_unique<InProcessServer>(ReplyService(vocab_, kImEnd, &backend_, context), options);
    client_ = server_->Client();
  }
  void ExpectHealthy() {
    const HttpResult h = Get(*client_, "/health");
    EXPECT_EQ(h.status, 200);
    EXPECT_EQ(h.json["status"], "ok");
  }
  // `r` is an OpenAI error with this status and param, and a message containing `words`.
  void ExpectError(const HttpResult& r, int status, const std::string& param, const std::string& words) {
    EXPECT_EQ(r.status, status) << r.body;
    ASSERT_TRUE(r.json.is_object()) << r.body;
    ASSERT_TRUE(r.json.contains("error")) << r.body;
    const Json& e = r.json["error"];
    EXPECT_TRUE(e.contains("type") && e.contains("param") && e.contains("code")) << r.body;
    if (param.empty()) {
      EXPECT_TRUE(e["param"].is_null()) << r.body;
    } else {
      EXPECT_EQ(e["param"], param) << r.body;
    }
    EXPECT_THAT(e["message"].get<std::string>(), HasSubstr(words));
    ExpectHealthy();
  }

  gguf::TokenizerData vocab_;
  ReplyBackend* backend_ = nullptr;
  std::unique_ptr<InProcessServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(HttpServerTest, LoadingThenReady) {
  InProcessServer loading(nullptr);
  auto c = loading.Client();
  const HttpResult h = Get(*c, "/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.body, R"({"status":"loading"})");
  const HttpResult chat = Post(*c, "/v1/chat/completions", kHi + "}");
  EXPECT_EQ(chat.status, 503);
  EXPECT_EQ(chat.json["error"]["code"], "loading");
  EXPECT_FALSE(chat.retry_after.empty());
  vocab_ = gguf::ByteLevelTokenizerData();
  loading.server().SetService(ReplyService(vocab_, kImEnd, &backend_));
  EXPECT_EQ(Get(*c, "/health").body, R"({"status":"ok"})");
}

TEST_F(HttpServerTest, BadInputGetsItsStatusAndTheServerGoesOn) {
  HttpServerOptions o;
  o.max_body_bytes = 4096;
  Start(o, /*context=*/64);
  const std::string chat = "/v1/chat/completions";
  ExpectError(Post(*client_, chat, "{\"messages\": [{\"role\": \"user\""), 400, "", "not valid JSON");
  ExpectError(Post(*client_, chat, ""), 400, "", "not valid JSON");
  ExpectError(Post(*client_, chat, "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}"), 400, "",
              "not valid JSON");  // invalid UTF-8
  ExpectError(Post(*client_, chat, R"({"messages": "hi"})"), 400, "messages", "must be an array");
  ExpectError(Post(*client_, chat, R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": "5"})"),
              400, "max_tokens", "must be an integer");
  ExpectError(Post(*client_, chat, R"({"messages": [{"role": "wizard", "content": "x"}]})"), 400,
              "messages[0].role", "unknown role 'wizard'");
  ExpectError(Post(*client_, chat, R"({"messages": []})"), 400, "messages", "empty");
  ExpectError(Post(*client_, chat, kHi + R"(, "n": 2})"), 400, "n", "n must be 1");
  const HttpResult too_long = Post(*client_, chat, R"({"messages": [{"role": "user", "content": ")" +
                                                       std::string(100, 'x') + "\"}]}");
  ExpectError(too_long, 400, "messages", "context holds 64");
  EXPECT_EQ(too_long.json["error"]["code"], "context_length_exceeded");
  ExpectError(Post(*client_, chat, R"({"messages": [{"role": "user", "content": ")" +
                                       std::string(5000, 'x') + "\"}]}"),
              413, "", "larger than 4096 bytes");
  ExpectError(Post(*client_, "/v1/completions", R"({"prompt": [1, 2, 4000]})"), 400, "prompt[2]",
              "outside the vocabulary");
  ExpectError(Post(*client_, "/v1/completions", R"({"max_tokens": 3})"), 400, "prompt", "missing");
  ExpectError(Post(*client_, "/tokenize", R"({"text": "x"})"), 400, "content", "missing");
  ExpectError(Post(*client_, "/detokenize", R"({"tokens": [1, "x"]})"), 400, "tokens[1]", "token id");
  ExpectError(Get(*client_, "/v2/everything"), 404, "", "no route for GET /v2/everything");
  ExpectError(Post(*client_, "/v1/embeddings", "{}"), 404, "", "no route for POST /v1/embeddings");
  // Still serving:
  EXPECT_EQ(Post(*client_, chat, kHi + R"(, "max_tokens": 2})").status, 200);
}

TEST_F(HttpServerTest, ApiKey) {
  HttpServerOptions o;
  o.api_key = "sesame";
  Start(o);
  const HttpResult missing = Post(*client_, "/v1/chat/completions", kHi + "}");
  ExpectError(missing, 401, "", "missing API key");
  EXPECT_EQ(missing.json["error"]["type"], "authentication_error");
  ExpectError(Post(*client_, "/v1/chat/completions", kHi + "}", {{"Authorization", "Bearer sesam"}}), 401, "",
              "invalid API key");
  ExpectError(Get(*client_, "/v1/models", {{"Authorization", "sesame"}}), 401, "", "invalid API key");
  ExpectError(Get(*client_, "/metrics"), 401, "", "API key");
  backend_->SetReply(Bytes("ok"));
  const HttpResult ok = Post(*client_, "/v1/chat/completions", kHi + "}", {{"Authorization", "Bearer sesame"}});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.json["choices"][0]["message"]["content"], "ok");
}

TEST_F(HttpServerTest, StreamedTextEqualsTheWholeResponse) {
  Start();
  backend_->SetReply(Bytes("<x> Hello, \xE4\xB8\x96\xE7\x95\x8C! \"quoted\"\n\tend"));
  const HttpResult whole = Post(*client_, "/v1/chat/completions", kHi + "}");
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json["object"], "chat.completion");
  EXPECT_EQ(whole.json["model"], "tiny");
  EXPECT_THAT(whole.json["id"].get<std::string>(), StartsWith("chatcmpl-"));
  const std::string text = whole.json["choices"][0]["message"]["content"];
  EXPECT_EQ(text, "<x> Hello, \xE4\xB8\x96\xE7\x95\x8C! \"quoted\"\n\tend");
  EXPECT_EQ(whole.json["choices"][0]["finish_reason"], "stop");

  const HttpResult streamed = Post(*client_, "/v1/chat/completions", kHi + R"(, "stream": true})");
  ASSERT_EQ(streamed.status, 200);
  const SseStream s = ParseSse(streamed.body);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.malformed, 0);
  ASSERT_GE(s.events.size(), 3u);
  EXPECT_EQ(s.events[0]["choices"][0]["delta"]["role"], "assistant");
  const StreamedChat c = Assemble(s);
  EXPECT_EQ(c.content, text);
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_GT(s.events.size(), 10u);  // token by token, not one blob
  EXPECT_TRUE(c.usage_chunk.is_null());  // include_usage not asked for
  EXPECT_EQ(c.final_usage["completion_tokens"], whole.json["usage"]["completion_tokens"]);
  const std::string id = s.events[0]["id"];
  for (const Json& e : s.events) EXPECT_EQ(e["id"], id);
}

TEST_F(HttpServerTest, IncludeUsageStopStringsAndLength) {
  Start();
  backend_->SetReply(Bytes("one two STOP three"));
  const HttpResult usage = Post(*client_, "/v1/chat/completions",
                                kHi + R"(, "stream": true, "stream_options": {"include_usage": true}})");
  const StreamedChat u = Assemble(ParseSse(usage.body));
  ASSERT_TRUE(u.usage_chunk.is_object()) << usage.body;
  EXPECT_EQ(u.usage_chunk["completion_tokens"], 19);  // 18 bytes and <|im_end|>
  EXPECT_EQ(u.usage_chunk["total_tokens"].get<int>(),
            u.usage_chunk["prompt_tokens"].get<int>() + 19);

  const HttpResult stop = Post(*client_, "/v1/chat/completions", kHi + R"(, "stop": [" STOP", "zzz"]})");
  EXPECT_EQ(stop.json["choices"][0]["message"]["content"], "one two");
  EXPECT_EQ(stop.json["choices"][0]["finish_reason"], "stop");
  const StreamedChat stop_streamed = Assemble(ParseSse(
      Post(*client_, "/v1/chat/completions", kHi + R"(, "stop": " STOP", "stream": true})").body));
  EXPECT_EQ(stop_streamed.content, "one two");

  const HttpResult length = Post(*client_, "/v1/chat/completions", kHi + R"(, "max_tokens": 5})");
  EXPECT_EQ(length.json["choices"][0]["message"]["content"], "one t");
  EXPECT_EQ(length.json["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(length.json["usage"]["completion_tokens"], 5);
  const HttpResult completion = Post(*client_, "/v1/completions", R"({"prompt": "x", "max_tokens": 3, "stream": true})");
  const StreamedChat cs = Assemble(ParseSse(completion.body));
  EXPECT_EQ(cs.content, "one");
  EXPECT_EQ(cs.finish_reason, "length");
}

TEST_F(HttpServerTest, ToolCallsAndReasoningInDeltas) {
  Start({}, 1024);
  std::vector<int32_t> reply = {kThink};
  for (int32_t b : Bytes("\nTwo calls.\n")) reply.push_back(b);
  reply.push_back(kThinkEnd);
  for (int32_t b : Bytes("\n\n<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"Paris\"}}\n</tool_call>\n"
                         "<tool_call>\n{\"name\": \"w\", \"arguments\": {\"c\": \"Rome\"}}\n</tool_call>")) {
    reply.push_back(b);
  }
  backend_->SetReply(reply);
  const std::string body = R"({"messages": [{"role": "user", "content": "Paris, Rome?"}], "temperature": 0,
      "tools": [{"type": "function", "function": {"name": "w", "parameters": {}}}])";
  const HttpResult whole = Post(*client_, "/v1/chat/completions", body + "}");
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json& m = whole.json["choices"][0]["message"];
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "Two calls.");
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][1]["function"]["arguments"], "{\"c\": \"Rome\"}");
  EXPECT_EQ(whole.json["choices"][0]["finish_reason"], "tool_calls");

  const SseStream s = ParseSse(Post(*client_, "/v1/chat/completions", body + R"(, "stream": true})").body);
  const StreamedChat c = Assemble(s);
  EXPECT_EQ(c.reasoning, "Two calls.");
  EXPECT_EQ(c.content, "");
  EXPECT_EQ(c.finish_reason, "tool_calls");
  ASSERT_EQ(c.tool_calls.size(), 2u);
  EXPECT_EQ(c.tool_calls[0]["index"], 0);
  EXPECT_EQ(c.tool_calls[1]["index"], 1);
  EXPECT_EQ(c.tool_calls[0]["type"], "function");
  EXPECT_EQ(c.tool_calls[0]["function"]["name"], "w");
  EXPECT_EQ(c.tool_calls[0]["function"]["arguments"], "{\"c\": \"Paris\"}");
  EXPECT_THAT(c.tool_calls[1]["id"].get<std::string>(), StartsWith("call_"));
  for (const Json& e : s.events) {  // reasoning never leaks into content
    if (!e["choices"].empty() && e["choices"][0]["delta"].contains("content")) {
      EXPECT_THAT(e["choices"][0]["delta"]["content"].get<std::string>(), ::testing::Not(HasSubstr("Two")));
    }
  }
}

// Resent in full each turn, a conversation reuses what the cache holds; the responses say so.
TEST_F(HttpServerTest, PromptCacheAcrossThreeTurns) {
  Start({}, 1024);
  std::string messages = R"([{"role": "user", "content": "first"})";
  int64_t previous_total = 0;
  for (int turn = 0; turn < 3; ++turn) {
    backend_->SetReply(Bytes("reply number " + std::to_string(turn)));
    const HttpResult r = Post(*client_, "/v1/chat/completions",
                              R"({"temperature": 0, "messages": )" + messages + "]}");
    ASSERT_EQ(r.status, 200) << r.body;
    const Json& usage = r.json["usage"];
    const Json& timings = r.json["timings"];
    const int64_t cached = usage["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(timings["cache_n"], cached);
    EXPECT_EQ(timings["prompt_n"].get<int64_t>() + cached, usage["prompt_tokens"].get<int64_t>());
    if (turn > 0) {
      // Everything the previous turn left in the cache: its prompt and its reply (14 bytes;
      // the final <|im_end|> is sampled, never fed back).
      EXPECT_EQ(cached, previous_total + 14);
      EXPECT_LT(timings["prompt_n"].get<int64_t>(), 40);
    } else {
      EXPECT_EQ(cached, 0);
    }
    previous_total = usage["prompt_tokens"];
    messages += R"(, {"role": "assistant", "content": ")" +
                r.json["choices"][0]["message"]["content"].get<std::string>() +
                R"("}, {"role": "user", "content": "next"})";
  }
  const HttpResult metrics = Get(*client_, "/metrics");
  EXPECT_THAT(metrics.body, HasSubstr("jllm:prompt_tokens_cached_total "));
  EXPECT_THAT(metrics.body, ::testing::Not(HasSubstr("jllm:prompt_tokens_cached_total 0\n")));
  EXPECT_THAT(metrics.body, HasSubstr("jllm:requests_processing 0\n"));
}

TEST_F(HttpServerTest, ModelsTokenizeDetokenizeMetrics) {
  Start();
  const HttpResult models = Get(*client_, "/v1/models");
  EXPECT_EQ(models.json["object"], "list");
  EXPECT_EQ(models.json["data"][0]["id"], "tiny");
  EXPECT_EQ(models.json["data"][0]["meta"]["n_ctx"], 256);
  EXPECT_EQ(Post(*client_, "/tokenize", R"({"content": "Hi<|im_end|>"})").body, R"({"tokens":[72,105,258]})");
  EXPECT_EQ(Post(*client_, "/tokenize", R"({"content": "<|im_end|>", "parse_special": false})").json["tokens"].size(), 10u);
  EXPECT_EQ(Post(*client_, "/tokenize", R"({"content": "Hi", "with_pieces": true})").body,
            R"({"tokens":[{"id":72,"piece":"H"},{"id":105,"piece":"i"}]})");
  EXPECT_EQ(Post(*client_, "/detokenize", R"({"tokens": [72, 105]})").body, R"({"content":"Hi"})");
  backend_->SetReply(Bytes("abc"));
  ASSERT_EQ(Post(*client_, "/v1/chat/completions", kHi + "}").status, 200);
  const HttpResult m = Get(*client_, "/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_THAT(m.body, HasSubstr("jllm:tokens_predicted_total 4\n"));
  EXPECT_THAT(m.body, HasSubstr("jllm:time_to_first_token_seconds_count 1\n"));
  EXPECT_THAT(m.body, HasSubstr("jllm:kv_cache_tokens "));
}

// One generation at a time: while one is held, one more request may wait (--max-waiting 1);
// the next is refused at once with 503 and Retry-After; then both held ones finish.
TEST_F(HttpServerTest, QueueFullIsRefusedWith503) {
  HttpServerOptions o;
  o.max_waiting = 1;
  Start(o);
  backend_->SetReply(Bytes("held"));
  backend_->HoldAtStep(1);
  HttpResult first, second;
  std::thread a([&] {
    auto c = server_->Client();
    first = Post(*c, "/v1/chat/completions", kHi + "}");
  });
  ASSERT_TRUE(backend_->WaitUntilHeld());
  std::thread b([&] {
    auto c = server_->Client();
    second = Post(*c, "/v1/chat/completions", kHi + "}");
  });
  ASSERT_TRUE(Eventually([&] { return server_->server().queue().waiting() == 1; }));
  const HttpResult refused = Post(*client_, "/v1/chat/completions", kHi + "}");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.retry_after, "1");
  EXPECT_THAT(refused.json["error"]["message"].get<std::string>(), HasSubstr("busy"));
  const HttpResult metrics = Get(*client_, "/metrics");
  EXPECT_THAT(metrics.body, HasSubstr("jllm:requests_processing 1\n"));
  EXPECT_THAT(metrics.body, HasSubstr("jllm:requests_deferred 1\n"));
  ExpectHealthy();
  backend_->Release();
  a.join();
  b.join();
  EXPECT_EQ(first.status, 200);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(first.json["choices"][0]["message"]["content"], "held");
  EXPECT_EQ(second.json["choices"][0]["message"]["content"], "held");
}

// A client that goes away mid-stream cancels its generation at the next token: the model
// would otherwise go on to the end of the context.
TEST_F(HttpServerTest, ClientGoneMidStreamCancelsTheGeneration) {
  Start({}, 4096);
  backend_->SetReply(Bytes("a"), /*repeat=*/true);
  backend_->HoldAtStep(3);
  {
    RawConnection conn(server_->port());
    ASSERT_TRUE(conn.connected());
    ASSERT_TRUE(conn.Send(ChatPostRequest(kHi + R"(, "stream": true})")));
    ASSERT_TRUE(backend_->WaitUntilHeld());
    ASSERT_TRUE(conn.ReadUntil("\"content\":\"a\""));
  }  // closed
  backend_->Release();
  ASSERT_TRUE(Eventually([&] { return !server_->server().queue().busy(); }));
  EXPECT_LT(backend_->forward_calls(), 20);
  ExpectHealthy();
  backend_->SetReply(Bytes("next"));
  EXPECT_EQ(Post(*client_, "/v1/chat/completions", kHi + "}").json["choices"][0]["message"]["content"], "next");
}

TEST_F(HttpServerTest, StalledClientTimesOut) {
  HttpServerOptions o;
  o.timeout_seconds = 1;
  Start(o);
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.connected());
  ASSERT_TRUE(conn.Send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"mess"));
  EXPECT_TRUE(conn.ReadUntilClosed());  // the server gave up on it (a 30 s receive timeout guards)
  ExpectHealthy();
}

// Shutdown while a stream runs: the generation stops at its next token, the stream ends with
// an error event instead of [DONE], a request still waiting gets 503, and Serve returns.
TEST_F(HttpServerTest, ShutdownDuringAStream) {
  Start({}, 4096);
  backend_->SetReply(Bytes("a"), /*repeat=*/true);
  backend_->HoldAtStep(2);
  RawConnection conn(server_->port());
  ASSERT_TRUE(conn.Send(ChatPostRequest(kHi + R"(, "stream": true})")));
  ASSERT_TRUE(backend_->WaitUntilHeld());
  HttpResult waiting;
  std::thread w([&] {
    auto c = server_->Client();
    waiting = Post(*c, "/v1/chat/completions", kHi + "}");
  });
  ASSERT_TRUE(Eventually([&] { return server_->server().queue().waiting() == 1; }));
  server_->server().Shutdown();
  w.join();
  EXPECT_EQ(waiting.status, 503);
  backend_->Release();
  EXPECT_TRUE(conn.ReadUntil("\"code\":\"shutting_down\""));
  EXPECT_THAT(conn.received(), ::testing::Not(HasSubstr("[DONE]")));
  EXPECT_LT(backend_->forward_calls(), 20);
  server_.reset();  // joins the serving thread
}

// 200 requests one after another, then 4 clients at once with one waiting place: every
// request gets an answer, 200 or 503; none is lost or malformed.
TEST_F(HttpServerTest, SequentialAndConcurrentClients) {
  HttpServerOptions o;
  o.max_waiting = 1;
  Start(o);
  backend_->SetReply(Bytes("ok"));
  for (int i = 0; i < 200; ++i) {
    const bool stream = i % 2 == 1;
    const HttpResult r = Post(*client_, "/v1/chat/completions", kHi + (stream ? R"(, "stream": true})" : "}"));
    ASSERT_EQ(r.status, 200) << "request " << i << ": " << r.body;
    const std::string text = stream ? Assemble(ParseSse(r.body)).content
                                    : r.json["choices"][0]["message"]["content"].get<std::string>();
    ASSERT_EQ(text, "ok") << "request " << i;
  }
  std::atomic<int> ok{0}, busy{0}, other{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      auto c = server_->Client();
      for (int i = 0; i < 25; ++i) {
        const bool stream = (i + t) % 2 == 0;
        const HttpResult r = Post(*c, "/v1/chat/completions", kHi + (stream ? R"(, "stream": true})" : "}"));
        if (r.status == 200) {
          const std::string text = stream ? Assemble(ParseSse(r.body)).content
                                          : r.json["choices"][0]["message"]["content"].get<std::string>();
          (text == "ok" ? ok : other)++;
        } else if (r.status == 503 && r.json["error"].is_object()) {
          busy++;
        } else {
          other++;
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok + busy, 100) << ok << " ok, " << busy << " busy, " << other << " other";
  EXPECT_EQ(other, 0);
  EXPECT_GT(ok, 0);
  ExpectHealthy();
}

}  // namespace
}  // namespace jllm::server
