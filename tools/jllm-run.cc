// jllm-run: runs a plan. Streams the generated text to stdout and the statistics to stderr.
//
//   jllm-run plan.bin -p "def fibonacci(n):" -n 64 --temp 0
//   jllm-run plan.bin --chat [--no-think] [-p "system prompt"]
//   jllm-run plan.bin --prompt-ids ids.txt -n 8 --temp 0 --dump-logits logits.f32
#include <unistd.h>

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
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "nlohmann/json.hpp"
#include "runtime/conversation.h"
#include "runtime/plan_file.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/tokenizer/chat_template.h"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Runs a jllm plan: streams generated text to stdout, statistics to stderr."};
  std::string plan_path, prompt, prompt_ids_path, backend_name = "cpu", dump_path, model_override;
  std::vector<std::string> stops;
  int64_t n_predict = -1, ctx = 0;
  int threads = 0;
  bool chat = false, no_think = false, no_display_prompt = false;
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
  app.add_option("--backend", backend_name, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
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

  if (backend_name == "cuda") {
    std::fprintf(stderr,
                 "jllm-run: the CUDA backend is not built yet (it arrives with the CUDA "
                 "backend issue); use --backend cpu\n");
    return 2;
  }
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
  auto session = jllm::runtime::Session::FromPlan(*plan, plan_path, jllm::CreateCpuRefBackend(),
                                                  sess_opts, model_override);
  if (!session.ok()) return Fail(session.status());
  jllm::runtime::Session& s = **session;
  std::fprintf(stderr, "jllm-run: %s backend, context %lld, seed %llu\n",
               std::string(s.backend().name()).c_str(), (long long)s.context_size(),
               (unsigned long long)so.seed);

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
