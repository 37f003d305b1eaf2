// Shared pieces of the server tests: a backend that "says" a chosen reply (so protocol tests
// control the model's output token by token, and can hold a generation in place), a
// ChatService over it, an in-process HttpServer on a free loopback port, HTTP and SSE helpers,
// and a raw socket for clients that misbehave.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "backends/backend.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/chat_service.h"
#include "server/http_server.h"
#include "server/json.h"

namespace jllm::server::testing {

// The byte-level vocabulary (jllm-synth's tiny preset): ids 0..255 are bytes.
inline constexpr int32_t kImEnd = 258, kThink = 259, kThinkEnd = 260;

inline std::vector<int32_t> Bytes(std::string_view s) {
  std::vector<int32_t> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

// A backend that runs no model. Each generation (it starts with a step that is not a single
// decode step fed back) samples reply[0], reply[1], ... (as logits it favours them: 10 against
// 0), then `end` — or the reply over and over with repeat. It counts the tokens it was given,
// and can hold a decode step until told to go on.
class ReplyBackend : public Backend {
 public:
  ReplyBackend(int64_t n_vocab, int32_t end) : n_vocab_(n_vocab), end_(end) {}

  void SetReply(std::vector<int32_t> reply, bool repeat = false) {
    std::lock_guard<std::mutex> lock(mu_);
    reply_ = std::move(reply);
    repeat_ = repeat;
  }
  // Decode step `step` (0-based) of every generation waits until Release().
  void HoldAtStep(int64_t step) {
    std::lock_guard<std::mutex> lock(mu_);
    hold_at_ = step;
    released_ = false;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }
  // Blocks until a generation sits at the held step; false after 10 s.
  bool WaitUntilHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_; });
  }
  int64_t tokens_seen() const {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_seen_;
  }
  int64_t forward_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return forward_calls_;
  }

  std::string_view name() const override { return "reply"; }
  absl::Status Load(const ir::Graph&, const WeightSource&, const BackendOptions& o) override {
    max_context_ = o.max_context;
    return absl::OkStatus();
  }
  absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0,
                               const StepOptions& options) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (tokens.empty() || pos0 + static_cast<int64_t>(tokens.size()) > max_context_) {
      return absl::OutOfRangeError("reply backend: positions past the context");
    }
    ++forward_calls_;
    tokens_seen_ += static_cast<int64_t>(tokens.size());
    const bool decode_step = tokens.size() == 1 && tokens[0] == last_favoured_ && step_ >= 0;
    step_ = decode_step ? step_ + 1 : 0;
    if (decode_step && step_ - 1 == hold_at_) {
      held_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return released_; });
      held_ = false;
    }
    int32_t want = end_;
    if (!reply_.empty() && (repeat_ || step_ < static_cast<int64_t>(reply_.size()))) {
      want = reply_[step_ % reply_.size()];
    }
    last_favoured_ = want;
    if (options.logits != nullptr) {
      const size_t n_rows = options.rows == LogitsRows::kAll ? tokens.size() : 1;
      options.logits->assign(n_rows * n_vocab_, 0.0f);
      for (size_t r = 0; r < n_rows; ++r) (*options.logits)[r * n_vocab_ + want] = 10.0f;
    }
    // The favoured token wins under any sampling settings the server uses (logit 10 against 0).
    return options.sampling != nullptr ? want : -1;
  }
  absl::StatusOr<std::vector<std::vector<float>>> Evaluate(int64_t, int64_t,
                                                           absl::Span<const NamedInput>,
                                                           absl::Span<const std::string>) override {
    return absl::UnimplementedError("reply backend: no graph to evaluate");
  }

 private:
  const int64_t n_vocab_;
  const int32_t end_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> reply_;
  bool repeat_ = false;
  int64_t step_ = -1;
  int32_t last_favoured_ = -1;
  int64_t hold_at_ = -1;
  bool released_ = false, held_ = false;
  int64_t tokens_seen_ = 0, forward_calls_ = 0;
  int64_t max_context_ = 0;
};

// A ChatService over a ReplyBackend for `vocab`; *backend points at the backend it owns.
inline std::unique_ptr<ChatService> ReplyService(const gguf::TokenizerData& vocab, int32_t end,
                                                 ReplyBackend** backend, int64_t context = 512,
                                                 ChatServiceOptions options = {}) {
  ir::Graph graph;
  graph.config.n_vocab = static_cast<int64_t>(vocab.tokens.size());
  graph.config.context_length = 1 << 16;
  auto be = std::make_unique<ReplyBackend>(graph.config.n_vocab, end);
  *backend = be.get();
  runtime::SessionOptions so;
  so.context = context;
  so.prefill_chunk = 1 << 16;  // one prefill call per request: ReplyBackend counts on it
  auto session = runtime::Session::Create(graph, vocab, std::move(be),
                                          std::make_unique<BlobWeightSource>(absl::Span<const uint8_t>()), so);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return nullptr;
  return std::make_unique<ChatService>(*std::move(session), runtime::ChatTemplate::Qwen3(), options);
}

// An HttpServer on a free loopback port, serving from a thread until destroyed.
class InProcessServer {
 public:
  // `service` null: the server stays "loading".
  explicit InProcessServer(std::unique_ptr<ChatService> service, HttpServerOptions options = {}) {
    options.host = "127.0.0.1";
    options.port = 0;
    server_ = std::make_unique<HttpServer>(options);
    const absl::Status bound = server_->Bind();
    EXPECT_TRUE(bound.ok()) << bound;
    if (service) server_->SetService(std::move(service));
    thread_ = std::thread([this] { EXPECT_TRUE(server_->Serve().ok()); });
  }
  ~InProcessServer() {
    server_->Shutdown();
    thread_.join();
  }
  HttpServer& server() { return *server_; }
  int port() const { return server_->port(); }
  std::unique_ptr<httplib::Client> Client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    c->set_read_timeout(30, 0);
    return c;
  }

 private:
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

struct HttpResult {
  int status = -1;  // -1: no response at all
  std::string body;
  std::string retry_after;
  Json json;        // the body parsed, when it is JSON
};

// What a client call returned (status -1 where there was no response).
inline HttpResult ResultOf(const httplib::Result& res) {
  HttpResult r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  r.retry_after = res->get_header_value("Retry-After");
  r.json = Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  return r;
}

inline HttpResult Post(httplib::Client& c, const std::string& path, const std::string& body,
                       const httplib::Headers& headers = {}) {
  return ResultOf(c.Post(path.c_str(), headers, body, "application/json"));
}

inline HttpResult Get(httplib::Client& c, const std::string& path, const httplib::Headers& headers = {}) {
  return ResultOf(c.Get(path.c_str(), headers));
}

// The events of an SSE body: each "data: ..." payload parsed as JSON; `done` if the stream
// ended with "data: [DONE]"; `malformed` counts events that are neither.
struct SseStream {
  std::vector<Json> events;
  bool done = false;
  int malformed = 0;
};

inline SseStream ParseSse(const std::string& body) {
  SseStream s;
  for (absl::string_view event : absl::StrSplit(body, "\n\n", absl::SkipEmpty())) {
    if (!absl::StartsWith(event, "data: ")) {
      ++s.malformed;
      continue;
    }
    const std::string data(event.substr(6));
    if (data == "[DONE]") {
      s.done = true;
      continue;
    }
    Json j = Json::parse(data, nullptr, false);
    if (j.is_discarded()) {
      ++s.malformed;
    } else {
      s.events.push_back(std::move(j));
    }
  }
  return s;
}

// What the deltas of a streamed chat completion add up to.
struct StreamedChat {
  std::string reasoning, content;
  std::vector<Json> tool_calls;  // merged by index
  std::string finish_reason;
  Json final_usage, usage_chunk;  // the finish chunk's usage; the choices-less chunk's
};

inline StreamedChat Assemble(const SseStream& s) {
  StreamedChat c;
  for (const Json& e : s.events) {
    if (e.contains("choices") && e["choices"].empty() && e.contains("usage")) {
      c.usage_chunk = e["usage"];
      continue;
    }
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const Json& choice = e["choices"][0];
    const Json& d = choice.contains("delta") ? choice["delta"] : choice;  // completions: text
    if (d.contains("reasoning_content")) c.reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content") && d["content"].is_string()) c.content += d["content"].get<std::string>();
    if (d.contains("text")) c.content += d["text"].get<std::string>();
    if (d.contains("tool_calls")) {
      for (const Json& call : d["tool_calls"]) {
        const size_t index = call["index"].get<size_t>();
        if (c.tool_calls.size() <= index) c.tool_calls.resize(index + 1);
        c.tool_calls[index] = call;
      }
    }
    if (!choice["finish_reason"].is_null()) {
      c.finish_reason = choice["finish_reason"].get<std::string>();
      if (e.contains("usage")) c.final_usage = e["usage"];
    }
  }
  return c;
}

// A TCP connection to 127.0.0.1:port for clients that misbehave (stall, vanish mid-stream).
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{30, 0};  // a test must not hang on a server that never answers
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~RawConnection() { Close(); }
  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Reads until `what` has arrived (true) or the peer closes / 30 s pass (false).
  bool ReadUntil(std::string_view what) {
    char buf[4096];
    while (received_.find(what) == std::string::npos) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      received_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until the peer closes the connection: true if it did (not a timeout).
  bool ReadUntilClosed() {
    char buf[4096];
    while (true) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0) return true;
      if (n < 0) return false;
      received_.append(buf, static_cast<size_t>(n));
    }
  }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string received_;
};

inline std::string ChatPostRequest(const std::string& body) {
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Polls `done` every millisecond; false after 10 s (a hang, not a slow machine).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace jllm::server::testing
