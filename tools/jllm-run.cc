// jllm-run: runs a plan. Streams the generated text to stdout and the statistics to stderr.
//
//   jllm-run plan.bin -p "def fibonacci(n):" -n 64 --temp 0
//   jllm-run plan.bin --chat [--no-think] [-p "system prompt"]
//   jllm-run plan.bin --prompt-ids ids.txt -n 8 --temp 0 --dump-logits logits.f32
//   jllm-run plan.bin -f prompt.txt   (or -f - for standard input)
//   jllm-run plan.bin -p "..." --validate -n 32     cpu_ref and cuda in lockstep
//   jllm-run plan.bin -p "..." --profile            where a prefill chunk's and a decode step's time goes
//   JLLM_TRACE=1 jllm-run plan.bin -p "..." --profile  and each kernel's share of the captured step
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "runtime/backend_factory.h"
#include "runtime/conversation.h"
#include "runtime/plan_file.h"
#include "runtime/plan_weights.h"
#include "runtime/sampler.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/validate.h"
#include "tools/support/flag_checks.h"
#include "tools/support/logits_dump.h"
#include "tools/support/progress.h"
#include "tools/support/prompt_files.h"
#include "tools/support/tool_main.h"

namespace {

using jllm::runtime::GenerateOptions;
using jllm::runtime::GenerateResult;
using jllm::runtime::StopReason;

using jllm::tools::Fail;

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

// The kernels' times in the captured step (JLLM_TRACE=1 at load; nothing without it), by their
// cost on the step's critical path.
void PrintStepTimeline(std::vector<jllm::KernelTiming> kernels) {
  double step_us = 0;
  for (const auto& k : kernels) step_us += k.step_us;
  if (step_us <= 0) return;
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.step_us > b.step_us; });
  std::fprintf(stderr, "\nin the captured step (JLLM_TRACE): %.1f us from the first kernel's start to the last one's end\n",
               step_us);
  std::fprintf(stderr, "| %-58s | %5s | %9s | %6s | %10s | %9s | %9s | %9s | %9s |\n", "kernel", "calls", "step us",
               "share", "release us", "staged us", "stream us", "tail us", "spread us");
  const std::string d9(11, '-');
  std::fprintf(stderr, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", std::string(60, '-').c_str(), std::string(7, '-').c_str(),
               d9.c_str(), std::string(8, '-').c_str(), std::string(12, '-').c_str(), d9.c_str(), d9.c_str(), d9.c_str(),
               d9.c_str());
  for (const auto& k : kernels) {
    std::fprintf(stderr, "| %-58s | %5lld | %9.1f | %5.1f%% | %10.1f | %9.1f | %9.1f | %9.1f | %9.1f |\n",
                 k.name.substr(0, 58).c_str(), (long long)k.calls, k.step_us, 100.0 * k.step_us / step_us, k.release_us,
                 k.staged_us, k.stream_us, k.tail_us, k.spread_us);
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
    PrintStepTimeline(sorted);
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

int Main(int argc, char** argv) {
  using jllm::tools::IntRange;
  using jllm::tools::kNoMax;
  using jllm::tools::RealRange;
  using jllm::tools::UsageError;
  CLI::App app{"Runs a jllm plan: streams generated text to stdout, statistics to stderr."};
  std::string plan_path, prompt, prompt_file, prompt_ids_path, backend_name = "auto", dump_path,
      model_override;
  std::vector<std::string> stops;
  int64_t n_predict = -1, ctx = 0, threads = 0, seed = -1;
  bool chat = false, no_think = false, no_display_prompt = false, validate = false, profile = false;
  jllm::runtime::SamplerOptions so;
  app.add_option("plan", plan_path, "the plan file (from jllm-compile)")->required();
  auto* prompt_opt =
      app.add_option("-p,--prompt", prompt, "the prompt (with --chat: the system prompt)");
  app.add_option("-f,--file", prompt_file,
                 "read the prompt from FILE (- for standard input; with --chat: the system prompt)")
      ->excludes(prompt_opt);
  app.add_option("--prompt-ids", prompt_ids_path,
                 "a file of whitespace-separated token ids to use as the prompt (no tokenizer)");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate at most")
      ->check(IntRange(-2, kNoMax, "-1 = until end of generation, -2 = until the context is full"))
      ->capture_default_str();
  app.add_option("-c,--ctx-size", ctx, "context size in tokens (0: min(model's, 4096))")
      ->check(IntRange(0, kNoMax, "0 = the model's context, at most 4096"))
      ->capture_default_str();
  app.add_option("--temp", so.temperature, "temperature (0 = greedy)")
      ->check(RealRange(0, FLT_MAX, false, "0 = greedy"))
      ->capture_default_str();
  app.add_option("--top-k", so.top_k, "top-k (0 = off)")
      ->check(IntRange(0, INT32_MAX, "0 = off"))
      ->capture_default_str();
  app.add_option("--top-p", so.top_p, "top-p (1 = off)")
      ->check(RealRange(0, 1, /*min_exclusive=*/true, "1 = off"))
      ->capture_default_str();
  app.add_option("--min-p", so.min_p, "min-p (0 = off)")
      ->check(RealRange(0, 1, false, "0 = off"))
      ->capture_default_str();
  app.add_option("--repeat-penalty", so.repeat_penalty, "repetition penalty (1 = off)")
      ->check(RealRange(0, FLT_MAX, /*min_exclusive=*/true, "1 = off"))
      ->capture_default_str();
  app.add_option("--presence-penalty", so.presence_penalty,
                 "subtracted once from each token in the penalty window (0 = off)")
      ->check(RealRange(-2, 2, false, "0 = off"))
      ->capture_default_str();
  app.add_option("--frequency-penalty", so.frequency_penalty,
                 "subtracted per occurrence of each token in the penalty window (0 = off)")
      ->check(RealRange(-2, 2, false, "0 = off"))
      ->capture_default_str();
  app.add_option("--repeat-last-n", so.repeat_last_n,
                 "recent tokens the penalty looks at (0 = off, -1 = the whole context)")
      ->check(IntRange(-1, INT32_MAX, "0 = off, -1 = the whole context"))
      ->capture_default_str();
  app.add_option("--seed", seed, "random seed (-1: a random one)")
      ->check(IntRange(-1, kNoMax, "-1 = random"))
      ->capture_default_str();
  app.add_option("--backend", backend_name, "auto (the GPU if usable, else the CPU), cuda or cpu")
      ->check(CLI::IsMember(jllm::runtime::BackendNames()))
      ->capture_default_str();
  auto* validate_opt = app.add_flag(
      "--validate", validate,
      "run cpu_ref and cuda in lockstep on the prompt and -n steps (default 16); compare "
      "the logits of every step; exit 3 beyond the bounds");
  app.add_flag("--profile", profile,
               "print where the time of the prompt's first prefill chunk and of one decode step goes, "
               "by kernel, and exit; the decode step ends with the draw the sampling flags ask for (--temp 0: "
               "the greedy step, whose logits GEMV draws the token) (with JLLM_TRACE=1 in the environment, "
               "also each kernel's time in the decode step as its captured graph runs it)")
      ->excludes(validate_opt);
  app.add_option("-t,--threads", threads, "CPU threads (0: all cores)")
      ->check(IntRange(0, kNoMax, "0 = all cores"))
      ->capture_default_str();
  auto* chat_opt =
      app.add_flag("--chat", chat, "a multi-turn conversation on stdin with the chat template");
  app.add_flag("--no-think", no_think, "with --chat: ask the model to answer without thinking")
      ->needs(chat_opt);
  app.add_option("--stop", stops, "stop when this text appears (repeatable)")
      ->check(jllm::tools::NonEmpty("a stop string"));
  app.add_option("--dump-logits", dump_path,
                 "write float32 logits [positions x n_vocab] of every processed position to "
                 "FILE, and FILE.json with shape and token_ids");
  app.add_option("--model", model_override,
                 "the GGUF model, when it moved since jllm-compile (its fingerprint must match)");
  app.add_flag("--no-display-prompt", no_display_prompt, "do not echo the prompt to stdout");
  CLI11_PARSE(app, argc, argv);

  const bool has_prompt = app.count("--prompt") > 0 || !prompt_file.empty();
  if (!chat && !has_prompt && prompt_ids_path.empty()) {
    return UsageError("give a prompt (-p TEXT, -f FILE or --prompt-ids FILE) or --chat");
  }
  if (chat && !prompt_ids_path.empty()) return UsageError("--prompt-ids cannot be combined with --chat");
  if (chat && prompt_file == "-") {
    return UsageError("-f - cannot be combined with --chat (standard input carries the turns)");
  }
  if (has_prompt && !prompt_ids_path.empty()) return UsageError("give -p/-f or --prompt-ids, not both");
  if ((validate || profile) && chat) return UsageError("--validate and --profile take a prompt, not --chat");
  if ((validate || profile) && !dump_path.empty()) {
    return UsageError("--dump-logits cannot be combined with --validate or --profile (they write no logits)");
  }
  if (!prompt_file.empty()) {
    auto text = jllm::tools::ReadPromptText(prompt_file);
    if (!text.ok()) return Fail(text.status());
    prompt = *std::move(text);
  }
  if (!chat && app.count("--prompt") > 0 && prompt.empty()) return UsageError("-p: the prompt is empty");
  so.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  if (so.repeat_last_n < 0) so.repeat_last_n = INT32_MAX;  // the window never outgrows the context
  if (auto st = jllm::runtime::ValidateSamplerOptions(so); !st.ok()) return Fail(st);

  // Everything that can be refused without the model is refused before it is loaded.
  absl::StatusOr<std::vector<int32_t>> prompt_ids;
  if (!prompt_ids_path.empty()) {
    prompt_ids = jllm::tools::ReadPromptIds(prompt_ids_path);
    if (!prompt_ids.ok()) return Fail(prompt_ids.status());
  }
  auto plan = jllm::runtime::ReadPlanFile(plan_path);
  if (!plan.ok()) return Fail(plan.status());
  std::unique_ptr<jllm::tools::LogitsDump> dump;
  if (!dump_path.empty()) {
    const std::string inputs[] = {
        plan_path, model_override.empty() ? plan->weights.gguf_path : model_override,
        prompt_file == "-" ? "" : prompt_file, prompt_ids_path};
    auto created = jllm::tools::LogitsDump::Create(dump_path, plan->graph.config.n_vocab, inputs);
    if (!created.ok()) return Fail(created.status());
    dump = *std::move(created);
  }
  jllm::runtime::SessionOptions sess_opts;
  sess_opts.context = ctx;
  sess_opts.n_threads = jllm::tools::CapThreads("-t", threads);
  if (validate) {
    absl::StatusOr<std::vector<int32_t>> ids = std::move(prompt_ids);
    if (prompt_ids_path.empty()) {
      auto t = jllm::runtime::Tokenizer::Create(plan->tokenizer);
      if (!t.ok()) return Fail(t.status());
      jllm::runtime::EncodeOptions eo;
      eo.parse_special = true;
      ids = (*t)->Encode(prompt, eo);
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
        prompt_ids_path.empty() ? s.Tokenize(prompt) : std::move(prompt_ids);
    if (!ids.ok()) return Fail(ids.status());
    auto profiles = s.Profile(*ids, &so);
    if (!profiles.ok()) return Fail(profiles.status());
    PrintProfile(*profiles);
    return 0;
  }

  GenerateOptions go;
  go.max_tokens = n_predict < 0 ? -1 : n_predict;  // -1 and -2: no limit but the context's
  go.stop_strings = stops;
  // The prompt is echoed with the first generated text (or once the run succeeds), so a prompt
  // that is refused (too long for the context) is not printed in full before its error.
  bool echo_pending = !chat && !prompt.empty() && !no_display_prompt;
  const auto echo_prompt = [&] {
    if (!echo_pending) return jllm::tools::StdoutOk();
    echo_pending = false;
    return jllm::tools::WriteStdout(prompt);
  };
  go.on_text = [&](std::string_view piece) {
    return echo_prompt() && jllm::tools::WriteStdout(piece);  // false: stdout failed, stop
  };
  std::unique_ptr<jllm::tools::Progress> progress;
  go.on_prefill = [&progress](int64_t done, int64_t total) {
    if (progress) progress->Update(done, total);
  };
  if (dump) {
    go.on_logits = [&dump](int32_t token, absl::Span<const float> row) { dump->Add(token, row); };
  }
  jllm::runtime::Sampler sampler(so);
  const auto new_progress = [&progress] {
    progress = std::make_unique<jllm::tools::Progress>("prefill", jllm::tools::Progress::Unit::kTokens);
  };

  if (chat) {
    auto tmpl = jllm::runtime::ChatTemplate::FromGgufTemplate(plan->tokenizer.chat_template);
    if (!tmpl.ok()) return Fail(plan_path + ": " + std::string(tmpl.status().message()));
    jllm::runtime::ChatOptions co;
    co.enable_thinking = !no_think;
    jllm::runtime::Conversation conv(s, *tmpl, co, prompt);
    const bool tty = isatty(STDIN_FILENO);
    std::string line;
    int failed_turns = 0;
    while (true) {
      if (tty) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, line)) break;
      if (line.empty()) continue;
      new_progress();
      auto r = conv.Reply(line, sampler, go);
      progress.reset();
      if (!r.ok()) {
        // The context cannot take this turn, so none after it either: stop with an error
        // rather than drop the rest of the input and report success.
        if (absl::IsResourceExhausted(r.status())) {
          return Fail(std::string(r.status().message()) + "; the conversation ends here, unanswered input is left unread");
        }
        jllm::tools::PrintError(std::string(r.status().message()));
        ++failed_turns;
        continue;
      }
      if (!jllm::tools::WriteStdout("\n")) break;
      PrintStats(*r, s, n_predict);
    }
    if (failed_turns > 0) return Fail(std::to_string(failed_turns) + " turn(s) failed (see above)");
  } else {
    absl::StatusOr<std::vector<int32_t>> ids =
        prompt_ids_path.empty() ? s.Tokenize(prompt) : std::move(prompt_ids);
    if (!ids.ok()) return Fail(ids.status());
    new_progress();
    auto r = s.Generate(*ids, sampler, go);
    progress.reset();
    if (!r.ok()) return Fail(r.status());
    if (echo_prompt()) jllm::tools::WriteStdout("\n");
    PrintStats(*r, s, n_predict);
  }
  if (dump) {
    if (auto st = dump->Finish(); !st.ok()) return Fail(st);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-run", argc, argv, Main); }
