// jllm-server: an OpenAI-compatible HTTP server for one user and one model.
//
//   jllm-server plan.bin [--host 127.0.0.1] [--port 8080] [-c CTX] [--backend auto|cpu|cuda]
//               [--api-key KEY] [--alias NAME] [--temp T --top-k K --top-p P --min-p P ...]
//
// It listens at once and loads the plan in the background (GET /health answers 503 until the
// model is ready); SIGINT/SIGTERM stop it cleanly (exit 0).
#include <pthread.h>
#include <signal.h>

#include <cfloat>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "runtime/backend_factory.h"
#include "runtime/plan_file.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"
#include "server/chat_service.h"
#include "server/http_server.h"
#include "server/sampling_defaults.h"
#include "tools/support/flag_checks.h"
#include "tools/support/tool_main.h"

namespace {

void Log(std::string_view line) {
  std::fprintf(stderr, "jllm-server: %.*s\n", static_cast<int>(line.size()), line.data());
}

struct LoadArgs {
  std::string plan_path, model_override, backend;
  jllm::runtime::SessionOptions session;
  jllm::server::ChatServiceOptions service;
};

absl::StatusOr<std::unique_ptr<jllm::server::ChatService>> Load(const LoadArgs& a) {
  auto plan = jllm::runtime::ReadPlanFile(a.plan_path);
  if (!plan.ok()) return plan.status();
  auto tmpl = jllm::runtime::ChatTemplate::FromGgufTemplate(plan->tokenizer.chat_template);
  if (!tmpl.ok()) return tmpl.status();
  jllm::runtime::BackendRequest request;
  request.name = a.backend;
  request.plan = &*plan;  // its ahead-of-time CUBINs, if any
  auto backend = jllm::runtime::CreateBackend(request);
  if (!backend.ok()) return backend.status();
  for (const std::string& notice : backend->notices) Log(notice);
  auto session = jllm::runtime::Session::FromPlan(*plan, a.plan_path, std::move(backend->backend),
                                                  a.session, a.model_override);
  if (!session.ok()) return session.status();
  Log(absl::StrCat("model loaded: ", jllm::Sv((*session)->backend().name()), " backend, context ",
                   (*session)->context_size()));
  return std::make_unique<jllm::server::ChatService>(*std::move(session), *std::move(tmpl), a.service);
}

int Main(int argc, char** argv) {
  using jllm::tools::IntRange;
  using jllm::tools::kNoMax;
  using jllm::tools::RealRange;
  CLI::App app{"jllm-server: an OpenAI-compatible server for one user and one model."};
  LoadArgs load;
  jllm::server::HttpServerOptions http;
  std::string backend = "auto";
  int64_t ctx = 0;
  int64_t threads = 0;
  bool no_think = false;
  float temp = 0, top_p = 0, min_p = 0, repeat_penalty = 0, presence_penalty = 0, frequency_penalty = 0;
  int32_t top_k = 0, repeat_last_n = 0;
  int64_t seed = -1;
  jllm::server::SamplingFlags& flags = load.service.sampling;
  app.add_option("plan", load.plan_path, "the plan file (from jllm-compile)")->required();
  app.add_option("--host", http.host, "address to listen on (loopback unless told otherwise)")
      ->check(jllm::tools::NonEmpty("an address"))
      ->capture_default_str();
  app.add_option("--port", http.port, "port to listen on (0: any free port)")
      ->check(IntRange(0, 65535, "0 = any free port"))
      ->capture_default_str();
  app.add_option("-c,--ctx-size", ctx, "context size in tokens (0: min(model's, 4096))")
      ->check(IntRange(0, kNoMax, "0 = the model's context, at most 4096"))
      ->capture_default_str();
  app.add_option("--backend", backend, "auto, cpu or cuda")
      ->check(CLI::IsMember(jllm::runtime::BackendNames()))
      ->capture_default_str();
  app.add_option("--api-key", http.api_key, "require 'Authorization: Bearer KEY' (all but /health)");
  auto* alias_opt = app.add_option("--alias", http.model_alias, "the model's name in responses and /v1/models (default: the plan's file name)");
  app.add_option("-t,--threads", threads, "CPU threads (0: all cores)")
      ->check(IntRange(0, kNoMax, "0 = all cores"))
      ->capture_default_str();
  app.add_option("--model", load.model_override,
                 "the GGUF model, when it moved since jllm-compile (its fingerprint must match)");
  app.add_option("-n,--n-predict", flags.max_tokens,
                 "tokens to generate when a request gives no max_tokens (-1: until the end)")
      ->check(IntRange(-1, kNoMax, "-1 = until the end"))
      ->capture_default_str();
  auto* temp_opt = app.add_option("--temp", temp, "temperature when a request gives none (0 = greedy; default: Qwen3's recommendation)")
                       ->check(RealRange(0, FLT_MAX, false, "0 = greedy"));
  auto* top_k_opt = app.add_option("--top-k", top_k, "top-k when a request gives none (0 = off)")
                        ->check(IntRange(0, INT32_MAX, "0 = off"));
  auto* top_p_opt = app.add_option("--top-p", top_p, "top-p when a request gives none (1 = off)")
                        ->check(RealRange(0, 1, /*min_exclusive=*/true, "1 = off"));
  auto* min_p_opt = app.add_option("--min-p", min_p, "min-p when a request gives none (0 = off)")
                        ->check(RealRange(0, 1, false, "0 = off"));
  auto* rp_opt = app.add_option("--repeat-penalty", repeat_penalty, "repetition penalty when a request gives none (1 = off)")
                     ->check(RealRange(0, FLT_MAX, /*min_exclusive=*/true, "1 = off"));
  auto* pp_opt = app.add_option("--presence-penalty", presence_penalty, "presence penalty when a request gives none (0 = off)")
                     ->check(RealRange(-2, 2, false, "0 = off"));
  auto* fp_opt = app.add_option("--frequency-penalty", frequency_penalty, "frequency penalty when a request gives none (0 = off)")
                     ->check(RealRange(-2, 2, false, "0 = off"));
  auto* rln_opt = app.add_option("--repeat-last-n", repeat_last_n, "recent tokens the penalties look at")
                      ->check(IntRange(0, INT32_MAX, "0 = off"));
  app.add_option("--seed", seed, "random seed when a request gives none (-1: a random one per request)")
      ->check(IntRange(-1, kNoMax, "-1 = random per request"))
      ->capture_default_str();
  app.add_flag("--no-think", no_think,
               "chat requests that do not set chat_template_kwargs.enable_thinking get no thinking");
  app.add_option("--max-waiting", http.max_waiting, "requests that may wait while one generates (more get 503)")
      ->check(IntRange(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--timeout", http.timeout_seconds, "seconds a stalled client may take to send or receive")
      ->check(IntRange(1, 86400))
      ->capture_default_str();
  app.add_option("--max-body-bytes", http.max_body_bytes, "largest request body (larger: 413)")
      ->check(IntRange(1, int64_t{1} << 32))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (temp_opt->count()) flags.temperature = temp;
  if (top_k_opt->count()) flags.top_k = top_k;
  if (top_p_opt->count()) flags.top_p = top_p;
  if (min_p_opt->count()) flags.min_p = min_p;
  if (rp_opt->count()) flags.repeat_penalty = repeat_penalty;
  if (pp_opt->count()) flags.presence_penalty = presence_penalty;
  if (fp_opt->count()) flags.frequency_penalty = frequency_penalty;
  if (rln_opt->count()) flags.repeat_last_n = repeat_last_n;
  if (seed >= 0) flags.seed = static_cast<uint64_t>(seed);
  for (auto mode : {jllm::server::SamplingMode::kChatThinking, jllm::server::SamplingMode::kCompletion}) {
    const auto st = jllm::runtime::ValidateSamplerOptions(jllm::server::ResolveSampling({}, flags, mode, 0));
    if (!st.ok()) {
      Log(std::string(st.message()));
      return 2;
    }
  }
  load.backend = backend;
  load.session.context = ctx;
  load.session.n_threads = jllm::tools::CapThreads("-t", threads);
  load.service.enable_thinking = !no_think;
  if (alias_opt->count() == 0) http.model_alias = std::filesystem::path(load.plan_path).filename().string();
  http.log = Log;

  // Signals go to one thread that asks the server to stop; SIGPIPE (a client gone) is ignored:
  // the write reports the error.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  jllm::server::HttpServer server(http);
  if (auto st = server.Bind(); !st.ok()) {
    Log(std::string(st.message()));
    return 1;
  }
  Log(absl::StrCat("listening on http://", http.host, ":", server.port(), " (loading ",
                   load.plan_path, ")"));
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    Log(absl::StrCat(sig == SIGINT ? "SIGINT" : "SIGTERM", ": stopping"));
    server.Shutdown();
  });
  absl::Status load_status;
  std::thread loader([&] {
    auto service = Load(load);
    if (!service.ok()) {
      load_status = service.status();
      server.Shutdown();
      return;
    }
    server.SetService(*std::move(service));
  });

  const absl::Status served = server.Serve();
  loader.join();
  pthread_kill(signals.native_handle(), SIGTERM);  // wakes the signal thread if no signal came
  signals.join();
  if (!load_status.ok()) {
    Log(absl::StrCat("cannot load ", load.plan_path, ": ", load_status.message()));
    return 1;
  }
  if (!served.ok()) {
    Log(std::string(served.message()));
    return 1;
  }
  Log("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-server", argc, argv, Main); }
