#include "server/http_server.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_request.h"
#include "server/openai_json.h"
#include "server/request_fields.h"

namespace jllm::server {
namespace {

constexpr std::string_view kJson = "application/json";
// Handler threads beyond the waiting requests and the running one: /health, /metrics and
// the 503 answers of a full queue must never wait behind a generation.
constexpr int kSpareThreads = 8;

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(Dump(body), std::string(kJson));
}

void SendError(httplib::Response& res, const ErrorResponse& e) {
  if (e.http_status == 503) res.set_header("Retry-After", "1");
  SendJson(res, e.http_status, e.body);
}

void SendError(httplib::Response& res, const absl::Status& status) {
  SendError(res, ToErrorResponse(status));
}

// A comparison whose time does not depend on where the strings differ (only on their length).
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool IsHealthPath(const std::string& path) { return path == "/health" || path == "/v1/health"; }

// What a streamed generation needs once the handler has returned and httplib pulls the body.
struct StreamState {
  std::shared_ptr<ChatService> service;
  std::optional<GenerationQueue::Slot> slot;
  PreparedGeneration generation;
  ResponseMeta meta;
  bool chat = true;
  bool include_usage = false;
};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      queue_(options_.max_waiting) {}

HttpServer::~HttpServer() = default;

absl::Status HttpServer::Bind() {
  if (options_.max_waiting < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--max-waiting must be >= 0, not ", options_.max_waiting));
  }
  const size_t threads = static_cast<size_t>(options_.max_waiting) + 1 + kSpareThreads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.timeout_seconds, 0);
  http_->set_write_timeout(options_.timeout_seconds, 0);
  // An idle keep-alive connection holds a handler thread: it gets httplib's usual 5 s, or the
  // stall timeout when that is shorter.
  http_->set_keep_alive_timeout(std::min(5, options_.timeout_seconds));
  Routes();
  started_ = UnixSeconds();
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(options_.host);
    if (port_ < 0) port_ = 0;
  } else if (http_->bind_to_port(options_.host, options_.port)) {
    port_ = options_.port;
  }
  if (port_ <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.host, ":", options_.port,
                                               " (in use, or not an address of this machine); "
                                               "pick another with --host/--port"));
  }
  return absl::OkStatus();
}

absl::Status HttpServer::Serve() {
  serving_.store(true);
  const bool listened = !shutting_down_.load() && http_->listen_after_bind();
  serving_.store(false);
  if (!listened && !shutting_down_.load()) {
    return absl::InternalError(absl::StrCat("serving on ", options_.host, ":", port_, " failed"));
  }
  return absl::OkStatus();
}

void HttpServer::SetService(std::unique_ptr<ChatService> service) {
  std::lock_guard<std::mutex> lock(service_mu_);
  service_ = std::move(service);
  metrics_.SetKvCache(0, service_->context_size());
}

void HttpServer::Shutdown() {
  if (shutting_down_.exchange(true)) return;
  queue_.Close();
  // Serve may be on its way into httplib's loop, where stop() does nothing until it runs.
  while (serving_.load() && !http_->is_running()) std::this_thread::yield();
  http_->stop();
}

std::shared_ptr<ChatService> HttpServer::ServiceOrRespond(httplib::Response& res) const {
  std::shared_ptr<ChatService> s;
  {
    std::lock_guard<std::mutex> lock(service_mu_);
    s = service_;
  }
  if (s == nullptr) {
    SendError(res, MakeErrorResponse(503, "the model is still loading; retry when GET /health answers 200",
                                     std::nullopt, "loading"));
  }
  return s;
}

bool HttpServer::Authorized(const httplib::Request& req, httplib::Response& res) const {
  if (options_.api_key.empty() || IsHealthPath(req.path)) return true;
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  const bool ok = std::string_view(header).starts_with(kBearer) &&
                  SameSecret(std::string_view(header).substr(kBearer.size()), options_.api_key);
  if (ok) return true;
  SendError(res, MakeErrorResponse(401, header.empty()
                                            ? "missing API key: send the header 'Authorization: Bearer KEY' "
                                              "with the key jllm-server was started with (--api-key)"
                                            : "invalid API key (the one given to --api-key is expected)",
                                   std::nullopt, "invalid_api_key"));
  return false;
}

void HttpServer::Routes() {
  httplib::Server& h = *http_;
  h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return Authorized(req, res) ? httplib::Server::HandlerResponse::Unhandled
                                : httplib::Server::HandlerResponse::Handled;
  });
  // httplib's own refusals (no route, body too large, unreadable request) get an OpenAI error
  // body; responses that already carry one are left alone.
  h.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                   httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    switch (res.status) {
      case 404: message = absl::StrCat("no route for ", req.method, " ", req.path); break;
      case 413:
        message = absl::StrCat("the request body is larger than ", options_.max_body_bytes,
                               " bytes (jllm-server --max-body-bytes)");
        break;
      case 400: message = "malformed HTTP request"; break;
      default: message = absl::StrCat("HTTP error ", res.status);
    }
    SendError(res, MakeErrorResponse(res.status, message));
    return httplib::Server::HandlerResponse::Handled;
  }));
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    SendError(res, MakeErrorResponse(500, absl::StrCat("internal error: ", what)));
  });
  if (options_.log) {
    h.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      options_.log(absl::StrCat(req.method, " ", req.path, " ", res.status));
    });
  }

  const auto health = [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(service_mu_);
    if (service_ == nullptr) {
      res.set_header("Retry-After", "1");
      SendJson(res, 503, {{"status", "loading"}});
    } else {
      SendJson(res, 200, {{"status", "ok"}});
    }
  };
  h.Get("/health", health);
  h.Get("/v1/health", health);

  const auto models = [this](const httplib::Request&, httplib::Response& res) {
    std::shared_ptr<ChatService> s = ServiceOrRespond(res);
    if (s) SendJson(res, 200, ModelListJson(options_.model_alias, started_, s->context_size()));
  };
  h.Get("/v1/models", models);
  h.Get("/models", models);

  const auto chat = [this](const httplib::Request& req, httplib::Response& res) { HandleChat(req, res); };
  h.Post("/v1/chat/completions", chat);
  h.Post("/chat/completions", chat);
  const auto completion = [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletion(req, res);
  };
  h.Post("/v1/completions", completion);
  h.Post("/completions", completion);
  h.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) { HandleTokenize(req, res); });
  h.Post("/detokenize",
         [this](const httplib::Request& req, httplib::Response& res) { HandleDetokenize(req, res); });

  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    metrics_.SetQueue(queue_.busy() ? 1 : 0, queue_.waiting());
    res.status = 200;
    res.set_content(metrics_.Render(), "text/plain; version=0.0.4");
  });
}

void HttpServer::HandleChat(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<ChatService> service = ServiceOrRespond(res);
  if (service == nullptr) return;
  absl::StatusOr<Json> body = ParseRequestBody(req.body);
  if (!body.ok()) return SendError(res, body.status());
  absl::StatusOr<ChatRequest> request = ParseChatRequest(*body);
  if (!request.ok()) return SendError(res, request.status());
  absl::StatusOr<PreparedGeneration> prepared = service->PrepareChat(*request);
  if (!prepared.ok()) return SendError(res, prepared.status());
  Generate(std::move(service), *std::move(prepared), /*chat=*/true, request->generation, res);
}

void HttpServer::HandleCompletion(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<ChatService> service = ServiceOrRespond(res);
  if (service == nullptr) return;
  absl::StatusOr<Json> body = ParseRequestBody(req.body);
  if (!body.ok()) return SendError(res, body.status());
  absl::StatusOr<CompletionRequest> request = ParseCompletionRequest(*body);
  if (!request.ok()) return SendError(res, request.status());
  absl::StatusOr<PreparedGeneration> prepared = service->PrepareCompletion(*request);
  if (!prepared.ok()) return SendError(res, prepared.status());
  Generate(std::move(service), *std::move(prepared), /*chat=*/false, request->generation, res);
}

void HttpServer::Finished(const ChatService& service, const GenerationOutcome& outcome) {
  metrics_.RecordGeneration(outcome.stats);
  metrics_.SetKvCache(service.kv_cache_used(), service.context_size());
}

void HttpServer::Generate(std::shared_ptr<ChatService> service, PreparedGeneration generation,
                          bool chat, const GenerationParams& params, httplib::Response& res) {
  absl::StatusOr<GenerationQueue::Slot> slot = queue_.Acquire();
  if (!slot.ok()) return SendError(res, slot.status());
  const ResponseMeta meta{NewId(chat ? "chatcmpl-" : "cmpl-"), UnixSeconds(), options_.model_alias};
  const auto keep_going = [this] { return KeepGoing(); };

  if (!params.stream) {
    absl::StatusOr<GenerationOutcome> outcome;
    {
      const GenerationQueue::Slot held = *std::move(slot);
      outcome = service->Run(generation, nullptr, keep_going);
    }
    if (!outcome.ok()) return SendError(res, outcome.status());
    Finished(*service, *outcome);
    if (outcome->stop == runtime::StopReason::kCancelled) {
      return SendError(res, MakeErrorResponse(503, "jllm-server is shutting down; the generation was cancelled",
                                              std::nullopt, "shutting_down"));
    }
    const std::string_view finish = FinishReason(outcome->stop, !outcome->message.tool_calls.empty());
    SendJson(res, 200, chat ? ChatCompletionJson(meta, outcome->message, finish, outcome->stats)
                            : CompletionJson(meta, outcome->message.content, finish, outcome->stats));
    return;
  }

  auto state = std::make_shared<StreamState>();
  state->service = std::move(service);
  state->slot.emplace(*std::move(slot));
  state->generation = std::move(generation);
  state->meta = meta;
  state->chat = chat;
  state->include_usage = params.include_usage;
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [this, state, keep_going](size_t, httplib::DataSink& sink) {
        StreamState& s = *state;
        bool client_ok = true;
        const auto send = [&](std::string_view text) {
          if (client_ok && !sink.write(text.data(), text.size())) client_ok = false;
          return client_ok;
        };
        if (s.chat) send(SseEvent(ChatRoleChunk(s.meta)));
        int tool_index = 0;
        absl::StatusOr<GenerationOutcome> outcome = s.service->Run(
            s.generation,
            [&](const OutputDelta& d) {
              const Json chunk = s.chat ? ChatDeltaChunk(s.meta, d, tool_index)
                                        : CompletionChunk(s.meta, d.content);
              tool_index += static_cast<int>(d.tool_calls.size());
              return send(SseEvent(chunk));
            },
            keep_going);
        s.slot.reset();  // the next request may start while this one's tail is written
        if (!outcome.ok()) {
          send(SseEvent(ToErrorResponse(outcome.status()).body));
          sink.done();
          return true;
        }
        Finished(*s.service, *outcome);
        if (!client_ok) return false;  // the client went away: drop the connection
        if (outcome->stop == runtime::StopReason::kCancelled) {
          send(SseEvent(MakeErrorResponse(503, "jllm-server is shutting down; the generation was cancelled",
                                          std::nullopt, "shutting_down")
                            .body));
          sink.done();
          return true;
        }
        const std::string_view finish = FinishReason(outcome->stop, !outcome->message.tool_calls.empty());
        send(SseEvent(s.chat ? ChatFinalChunk(s.meta, finish, outcome->stats)
                             : CompletionFinalChunk(s.meta, finish, outcome->stats)));
        if (s.include_usage) {
          send(SseEvent(UsageChunk(s.meta, s.chat ? kChatChunkObject : kCompletionObject, outcome->stats)));
        }
        send(kSseDone);
        sink.done();
        return true;
      });
}

void HttpServer::HandleTokenize(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<ChatService> service = ServiceOrRespond(res);
  if (service == nullptr) return;
  absl::StatusOr<Json> body = ParseRequestBody(req.body);
  if (!body.ok()) return SendError(res, body.status());
  auto content = GetString(*body, "content");
  if (!content.ok()) return SendError(res, content.status());
  if (!*content) return SendError(res, FieldError("content", "content is missing (the text to tokenize)"));
  auto parse_special = GetBool(*body, "parse_special");
  if (!parse_special.ok()) return SendError(res, parse_special.status());
  auto with_pieces = GetBool(*body, "with_pieces");
  if (!with_pieces.ok()) return SendError(res, with_pieces.status());
  auto ids = service->Tokenize(**content, parse_special->value_or(true));
  if (!ids.ok()) return SendError(res, ids.status());
  Json tokens = Json::array();
  for (int32_t id : *ids) {
    if (with_pieces->value_or(false)) {
      auto piece = service->Detokenize({id});
      tokens.push_back({{"id", id}, {"piece", piece.ok() ? *piece : ""}});
    } else {
      tokens.push_back(id);
    }
  }
  SendJson(res, 200, {{"tokens", std::move(tokens)}});
}

void HttpServer::HandleDetokenize(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<ChatService> service = ServiceOrRespond(res);
  if (service == nullptr) return;
  absl::StatusOr<Json> body = ParseRequestBody(req.body);
  if (!body.ok()) return SendError(res, body.status());
  auto list = GetArray(*body, "tokens");
  if (!list.ok()) return SendError(res, list.status());
  if (*list == nullptr) return SendError(res, FieldError("tokens", "tokens is missing (an array of token ids)"));
  std::vector<int32_t> ids;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    const Json& v = (**list)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
      const std::string path = absl::StrCat("tokens[", i, "]");
      return SendError(res, FieldError(path, absl::StrCat(path, " must be a token id (an integer)")));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  auto text = service->Detokenize(ids);
  if (!text.ok()) return SendError(res, text.status());
  SendJson(res, 200, {{"content", *text}});
}

}  // namespace jllm::server
