// jllm-run: runs a plan. Streams the generated text to stdout and the statistics to stderr.
//
//   jllm-run plan.bin -p "def fibonacci(n):" -n 64 --temp 0
//   jllm-run plan.bin --chat [--no-think] [-p "system prompt"]
//   jllm-run plan.bin --prompt-ids ids.txt -n 8 --temp 0 --dump-logits logits.f32
//   jllm-run plan.bin -p "..." --validate -n 32     cpu_ref and cuda in lockstep
//   jllm-run plan.bin -p "..." --profile            where a prefill chunk's and a decode step's time goes
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "runtime/backend_factory.h"
#include "runtime/conversation.h"
#include "runtime/plan_file.h"
#include "runtime/plan_weights.h"
#include "runtime/sampler.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/validate.h"

namespace {

using jllm::runtime::GenerateOptions;
using jllm::runtime::GenerateResult;
using jllm::runtime::StopReason;

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "jllm-run: %s\n", std::string(status.message()).c_str());
  return 1;
}

// --dump-logits: float32 rows [positions x n_vocab] in FILE, and FILE.json with the shape and
// the token id of every row.
class LogitsDump {
 public:
  LogitsDump(std::string path, int64_t n_vocab) : path_(std::move(path)), n_vocab_(n_vocab) {
    out_.open(path_, std::ios::binary | std::ios::trunc);
  }
  bool ok() const { return static_cast<bool>(out_); }
  void Add(int32_t token, absl::Span<const float> row) {
    out_.write(reinterpret_cast<const char*>(row.data()),
               static_cast<std::streamsize>(row.size() * sizeof(float)));
    token_ids_.push_back(token);
  }
  absl::Status Finish() {
    out_.close();
    if (!out_) return absl::DataLossError(path_ + ": writing the logits failed");
    nlohmann::json j;
    j["shape"] = {token_ids_.size(), n_vocab_};
    j["dtype"] = "float32";
    j["token_ids"] = token_ids_;
    std::ofstream side(path_ + ".json", std::ios::trunc);
    side << j.dump() << "\n";
    if (!side) return absl::DataLossError(path_ + ".json: write failed");
    return absl::OkStatus();
  }

 private:
  std::string path_;
  int64_t n_vocab_;
  std::ofstream out_;
  std::vector<int32_t> token_ids_;
};

absl::StatusOr<std::vector<int32_t>> ReadPromptIds(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot open");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  std::vector<int32_t> ids;
  for (absl::string_view word : absl::StrSplit(text, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
    int32_t id;
    if (!absl::SimpleAtoi(word, &id)) {
      return absl::InvalidArgumentError(path + ": '" + std::string(word) +
                                        "' is not a token id (expected whitespace-separated integers)");
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError(path + ": no token ids");
  return ids;
}

void PrintStats(const GenerateResult& r, const jllm::runtime::Session& s, int64_t max_tokens) {
  const auto& st = r.stats;
  std::fprintf(stderr, "\njllm-run: prompt %5lld tokens in %7.3f s, %8.2f tok/s",
               (long long)st.prompt_tokens, st.prompt_seconds, st.prompt_tokens_per_second());
  if (st.reused_tokens > 0) std::fprintf(stderr, " (%lld cached)", (long long)st.reused_tokens);
  std::fprintf(stderr, "; first token after %.3f s\n", st.time_to_first_token);
  std::fprintf(stderr, "jllm-run: decode %5lld tokens in %7.3f s, %8.2f tok/s; %lld generated\n",
               (long long)st.decode_steps, st.decode_seconds, st.decode_tokens_per_second(),
               (long long)st.generated_tokens);
  switch (r.stop) {
    case StopReason::kContextFull:
      std::fprintf(stderr,
                   "jllm-run: stopped: the context is full (all %lld positions used); raise -c "
                   "(the model allows %lld) or start a new conversation\n",
                   (long long)s.context_size(), (long long)s.config().context_length);
      break;
    case StopReason::kMaxTokens:
      std::fprintf(stderr, "jllm-run: stopped: token limit (-n %lld)\n", (long long)max_tokens);
      break;
    default:
      std::fprintf(stderr, "jllm-run: stopped: %s\n",
                   std::string(jllm::runtime::StopReasonName(r.stop)).c_str());
  }
}

void PrintProfile(const std::vector<jllm::runtime::Session::StepProfile>& profiles) {
  for (const auto& p : profiles) {
    double total_us = 0;
    for (const auto& k : p.kernels) total_us += k.microseconds;
    std::fprintf(stderr, "\n%s of %lld token%s at position %lld: %.1f us in kernels, %.1f us wall\n",
                 p.tokens == 1 ? "decode step" : "prefill chunk", (long long)p.tokens,
                 p.tokens == 1 ? "" : "s", (long long)p.position, total_us, p.wall_seconds * 1e6);
    std::fprintf(stderr, "| %-58s | %5s | %10s | %6s | %12s | %9s |\n", "kernel", "calls", "total us",
                 "share", "bytes", "GB/s");
    std::fprintf(stderr, "|%s|%s|%s|%s|%s|%s|\n", std::string(60, '-').c_str(), std::string(7, '-').c_str(),
                 std::string(12, '-').c_str(), std::string(8, '-').c_str(), std::string(14, '-').c_str(),
                 std::string(11, '-').c_str());
    std::vector<jllm::KernelTiming> sorted = p.kernels;
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.microseconds > b.microseconds; });
    for (const auto& k : sorted) {
      const double gbs = k.microseconds > 0 ? static_cast<double>(k.bytes) / (k.microseconds * 1e3) : 0;
      std::fprintf(stderr, "| %-58s | %5lld | %10.1f | %5.1f%% | %12lld | %9.1f |\n", k.name.substr(0, 58).c_str(),
                   (long long)k.calls, k.microseconds, total_us > 0 ? 100.0 * k.microseconds / total_us : 0.0,
                   (long long)k.bytes, gbs);
    }
  }
}

// --validate: cpu_ref and the chosen GPU backend in lockstep; a table and a summary on stderr.
int Validate(const jllm::runtime::Plan& plan, const std::string& plan_path, const std::string& model_override,
             const std::vector<int32_t>& ids, int64_t n_decode, const jllm::SamplingParams& sampling,
             const jllm::runtime::SessionOptions& opts) {
  jllm::runtime::BackendRequest req;
  req.name = "cuda";
  req.plan = &plan;
  auto gpu = jllm::runtime::CreateBackend(req);
  if (!gpu.ok()) return Fail(gpu.status());
  auto weights = jllm::runtime::PlanWeights::Open(plan.weights, plan_path, model_override);
  if (!weights.ok()) return Fail(weights.status());
  jllm::BackendOptions bo;
  bo.max_context = opts.context > 0 ? opts.context : std::min<int64_t>(plan.graph.config.context_length, 4096);
  bo.max_step_tokens = opts.prefill_chunk;
  bo.n_threads = opts.n_threads;
  if (static_cast<int64_t>(ids.size()) + n_decode > bo.max_context ||
      static_cast<int64_t>(ids.size()) > bo.max_step_tokens) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        "--validate: the prompt (", ids.size(), " tokens) must fit one prefill chunk (", bo.max_step_tokens,
        ") and the prompt plus -n ", n_decode, " the context (", bo.max_context, ")")));
  }
  auto cpu = jllm::CreateCpuRefBackend();
  if (auto st = cpu->Load(plan.graph, **weights, bo); !st.ok()) return Fail(st);
  if (auto st = gpu->backend->Load(plan.graph, **weights, bo); !st.ok()) return Fail(st);
  std::fprintf(stderr, "jllm-run: validating %s against cpu_ref: %s\n", std::string(gpu->backend->name()).c_str(),
               gpu->backend->Describe().c_str());
  auto report = jllm::runtime::ValidateLockstep(*cpu, *gpu->backend, ids, n_decode, sampling);
  if (!report.ok()) return Fail(report.status());
  std::fprintf(stderr, "| %8s | %8s | %10s | %10s | %8s | %8s |\n", "position", "token", "max |d|", "relative",
               "top cpu", "top gpu");
  for (const auto& st : report->steps) {
    std::fprintf(stderr, "| %8lld | %8d | %10.3g | %10.3g | %8d | %8d |%s\n", (long long)st.position, st.token,
                 st.max_abs, st.relative, st.ref_top, st.test_top,
                 st.ref_top == st.test_top ? "" : st.near_tie ? " near-tie" : " DIFFERS");
  }
  std::fprintf(stderr, "jllm-run: validate: %s\n", report->Summary().c_str());
  return report->passed ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs a jllm plan: streams generated text to stdout, statistics to stderr."};
  std::string plan_path, prompt, prompt_ids_path, backend_name = "auto", dump_path, model_override;
  std::vector<std::string> stops;
  int64_t n_predict = -1, ctx = 0;
  int threads = 0;
  bool chat = false, no_think = false, no_display_prompt = false, validate = false, profile = false;
  jllm::runtime::SamplerOptions so;
  uint64_t seed = 0;
  app.add_option("plan", plan_path, "the plan file (from jllm-compile)")->required();
  app.add_option("-p,--prompt", prompt, "the prompt (with --chat: the system prompt)");
  app.add_option("--prompt-ids", prompt_ids_path,
                 "a file of whitespace-separated token ids to use as the prompt (no tokenizer)");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate at most (-1: until the end)")
      ->capture_default_str();
  app.add_option("-c,--ctx-size", ctx, "context size in tokens (0: min(model's, 4096))")
      ->capture_default_str();
  app.add_option("--temp", so.temperature, "temperature (0 = greedy)")->capture_default_str();
  app.add_option("--top-k", so.top_k, "top-k (0 = off)")->capture_default_str();
  app.add_option("--top-p", so.top_p, "top-p (1 = off)")->capture_default_str();
  app.add_option("--min-p", so.min_p, "min-p (0 = off)")->capture_default_str();
  app.add_option("--repeat-penalty", so.repeat_penalty, "repetition penalty (1 = off)")
      ->capture_default_str();
  app.add_option("--repeat-last-n", so.repeat_last_n, "recent tokens the penalty looks at")
      ->capture_default_str();
  auto* seed_opt = app.add_option("--seed", seed, "random seed (default: a random one)");
  app.add_option("--backend", backend_name, "auto (the GPU if usable, else the CPU), cuda or cpu")
      ->check(CLI::IsMember(jllm::runtime::BackendNames()))
      ->capture_default_str();
  app.add_flag("--validate", validate,
               "run cpu_ref and cuda in lockstep on the prompt and -n steps (default 16); compare "
               "the logits of every step; exit 3 beyond the bounds");
  app.add_flag("--profile", profile,
               "print where the time of the prompt's first prefill chunk and of one decode step goes, "
               "by kernel, and exit");
  app.add_option("-t,--threads", threads, "CPU threads (0: all cores)")->capture_default_str();
  app.add_flag("--chat", chat, "a multi-turn conversation on stdin with the chat template");
  app.add_flag("--no-think", no_think, "with --chat: ask the model to answer without thinking");
  app.add_option("--stop", stops, "stop when this text appears (repeatable)");
  app.add_option("--dump-logits", dump_path,
                 "write float32 logits [positions x n_vocab] of every processed position to "
                 "FILE, and FILE.json with shape and token_ids");
  app.add_option("--model", model_override,
                 "the GGUF model, when it moved since jllm-compile (its fingerprint must match)");
  app.add_flag("--no-display-prompt", no_display_prompt, "do not echo the prompt to stdout");
  CLI11_PARSE(app, argc, argv);

  if (!chat && prompt.empty() && prompt_ids_path.empty()) {
    std::fprintf(stderr, "jllm-run: give a prompt (-p TEXT or --prompt-ids FILE) or --chat\n");
    return 2;
  }
  if (chat && !prompt_ids_path.empty()) {
    std::fprintf(stderr, "jllm-run: --prompt-ids cannot be combined with --chat\n");
    return 2;
  }
  if (!prompt.empty() && !prompt_ids_path.empty()) {
    std::fprintf(stderr, "jllm-run: give -p or --prompt-ids, not both\n");
    return 2;
  }
  so.seed = seed_opt->count() > 0 ? seed : std::random_device{}();
  if (auto st = jllm::runtime::ValidateSamplerOptions(so); !st.ok()) return Fail(st);

  auto plan = jllm::runtime::ReadPlanFile(plan_path);
  if (!plan.ok()) return Fail(plan.status());
  jllm::runtime::SessionOptions sess_opts;
  sess_opts.context = ctx;
  sess_opts.n_threads = threads;
  if (validate) {
    if (chat) return Fail(absl::InvalidArgumentError("--validate cannot be combined with --chat"));
    std::unique_ptr<jllm::runtime::Tokenizer> tok;
    absl::StatusOr<std::vector<int32_t>> ids;
    if (prompt_ids_path.empty()) {
      auto t = jllm::runtime::Tokenizer::Create(plan->tokenizer);
      if (!t.ok()) return Fail(t.status());
      jllm::runtime::EncodeOptions eo;
      eo.parse_special = true;
      ids = (*t)->Encode(prompt, eo);
    } else {
      ids = ReadPromptIds(prompt_ids_path);
    }
    if (!ids.ok()) return Fail(ids.status());
    return Validate(*plan, plan_path, model_override, *ids, n_predict < 0 ? 16 : n_predict, so, sess_opts);
  }
  const auto load_start = std::chrono::steady_clock::now();
  jllm::runtime::BackendRequest backend_request;
  backend_request.name = backend_name;
  backend_request.plan = &*plan;
  auto backend = jllm::runtime::CreateBackend(backend_request);
  if (!backend.ok()) return Fail(backend.status());
  for (const std::string& notice : backend->notices) std::fprintf(stderr, "jllm-run: %s\n", notice.c_str());
  auto session = jllm::runtime::Session::FromPlan(*plan, plan_path, std::move(backend->backend),
                                                  sess_opts, model_override);
  if (!session.ok()) return Fail(session.status());
  jllm::runtime::Session& s = **session;
  std::fprintf(stderr, "jllm-run: %s backend, context %lld, seed %llu\n",
               std::string(s.backend().name()).c_str(), (long long)s.context_size(),
               (unsigned long long)so.seed);
  if (const std::string d = s.backend().Describe(); !d.empty()) std::fprintf(stderr, "jllm-run: %s\n", d.c_str());
  {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux
    std::fprintf(stderr, "jllm-run: loaded in %.2f s; peak host memory so far %.0f MiB\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count(),
                 usage.ru_maxrss / 1024.0);
  }
  if (profile) {
    absl::StatusOr<std::vector<int32_t>> ids =
        prompt_ids_path.empty() ? s.Tokenize(prompt) : ReadPromptIds(prompt_ids_path);
    if (!ids.ok()) return Fail(ids.status());
    auto profiles = s.Profile(*ids);
    if (!profiles.ok()) return Fail(profiles.status());
    PrintProfile(*profiles);
    return 0;
  }

  std::unique_ptr<LogitsDump> dump;
  GenerateOptions go;
  go.max_tokens = n_predict;
  go.stop_strings = stops;
  go.on_text = [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  if (!dump_path.empty()) {
    dump = std::make_unique<LogitsDump>(dump_path, s.config().n_vocab);
    if (!dump->ok()) return Fail(absl::PermissionDeniedError(dump_path + ": cannot create"));
    go.on_logits = [&dump](int32_t token, absl::Span<const float> row) { dump->Add(token, row); };
  }
  jllm::runtime::Sampler sampler(so);

  if (chat) {
    auto tmpl = jllm::runtime::ChatTemplate::FromGgufTemplate(plan->tokenizer.chat_template);
    if (!tmpl.ok()) return Fail(tmpl.status());
    jllm::runtime::ChatOptions co;
    co.enable_thinking = !no_think;
    jllm::runtime::Conversation conv(s, *tmpl, co, prompt);
    const bool tty = isatty(STDIN_FILENO);
    std::string line;
    while (true) {
      if (tty) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, line)) break;
      if (line.empty()) continue;
      auto r = conv.Reply(line, sampler, go);
      if (!r.ok()) {
        std::fprintf(stderr, "jllm-run: %s\n", std::string(r.status().message()).c_str());
        if (absl::IsResourceExhausted(r.status())) break;  // the context cannot take more
        continue;
      }
      std::printf("\n");
      std::fflush(stdout);
      PrintStats(*r, s, n_predict);
      if (r->stop == StopReason::kContextFull) break;
    }
  } else {
    absl::StatusOr<std::vector<int32_t>> ids =
        prompt_ids_path.empty() ? s.Tokenize(prompt) : ReadPromptIds(prompt_ids_path);
    if (!ids.ok()) return Fail(ids.status());
    if (!prompt.empty() && !no_display_prompt) {
      std::fwrite(prompt.data(), 1, prompt.size(), stdout);
      std::fflush(stdout);
    }
    auto r = s.Generate(*ids, sampler, go);
    if (!r.ok()) return Fail(r.status());
    std::printf("\n");
    std::fflush(stdout);
    PrintStats(*r, s, n_predict);
  }
  if (dump) {
    if (auto st = dump->Finish(); !st.ok()) return Fail(st);
  }
  return 0;
}
