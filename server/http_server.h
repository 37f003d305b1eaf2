// jllm-server's HTTP side (cpp-httplib): the OpenAI routes, /health, /metrics, /tokenize and
// /detokenize, the API key, the body size limit, timeouts for slow clients, the generation
// queue, streaming over server-sent events, and shutdown.
//
//   HttpServer server(options);
//   RETURN_IF_ERROR(server.Bind());            // now /health answers 503 {"status":"loading"}
//   std::thread serve([&] { server.Serve(); });
//   server.SetService(std::move(service));     // the model is loaded: 200 {"status":"ok"}
//   ...
//   server.Shutdown();                          // from another thread (a signal handler's)
//   serve.join();
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "server/chat_service.h"
#include "server/generation_queue.h"
#include "server/metrics.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace jllm::server {

inline constexpr size_t kDefaultMaxBodyBytes = size_t{8} << 20;

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // loopback unless told otherwise
  int port = 8080;                 // 0: any free port (see port())
  std::string api_key;             // when set, every route but /health wants "Bearer KEY"
  std::string model_alias = "jllm";
  size_t max_body_bytes = kDefaultMaxBodyBytes;  // larger bodies get 413
  int max_waiting = 8;             // requests that may wait for the generation slot
  int timeout_seconds = 600;       // a client that stalls this long mid-request is dropped
  // Receives one line per request (method, path, status); null: no log.
  std::function<void(std::string_view line)> log;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();

  // Binds the listening socket. Until SetService, model routes answer 503 (loading).
  absl::Status Bind();
  int port() const { return port_; }
  // Serves until Shutdown(); returns once every connection's handler has finished.
  absl::Status Serve();
  void SetService(std::unique_ptr<ChatService> service);
  // Stops accepting, refuses queued requests (503), cancels the running generation at its next
  // token (its stream ends with an error event). Thread-safe; returns at once.
  void Shutdown();

  const ServerMetrics& metrics() const { return metrics_; }
  const GenerationQueue& queue() const { return queue_; }

 private:
  void Routes();
  bool Authorized(const httplib::Request& req, httplib::Response& res) const;
  std::shared_ptr<ChatService> ServiceOrRespond(httplib::Response& res) const;
  void HandleChat(const httplib::Request& req, httplib::Response& res);
  void HandleCompletion(const httplib::Request& req, httplib::Response& res);
  void HandleTokenize(const httplib::Request& req, httplib::Response& res);
  void HandleDetokenize(const httplib::Request& req, httplib::Response& res);
  // Runs `generation` (streamed or not) once its request has been parsed and checked.
  void Generate(std::shared_ptr<ChatService> service, PreparedGeneration generation, bool chat,
                const GenerationParams& params, httplib::Response& res);
  void Finished(const ChatService& service, const GenerationOutcome& outcome);
  bool KeepGoing() const { return !shutting_down_.load(); }

  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  int port_ = 0;
  int64_t started_ = 0;  // Unix seconds, for /v1/models
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> serving_{false};  // Serve is running (or about to)
  std::shared_ptr<ChatService> service_;  // null while loading
  mutable std::mutex service_mu_;
  GenerationQueue queue_;
  ServerMetrics metrics_;
};

}  // namespace jllm::server
