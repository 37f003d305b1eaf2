// A conversation with one model: the backend running the plan's graph (with its KV cache), the
// tokenizer, and the generation loop — prefill, then sample and decode one token at a time
// until a stop rule fires — streaming text as it is produced.
//
//   ASSIGN_OR_RETURN(auto plan, ReadPlanFile("plan.bin"));
//   ASSIGN_OR_RETURN(auto session, Session::FromPlan(plan, "plan.bin", CreateCpuRefBackend(), {}));
//   ASSIGN_OR_RETURN(auto prompt, session->Tokenize("def fibonacci(n):"));
//   Sampler sampler({.temperature = 0});
//   ASSIGN_OR_RETURN(auto result, session->Generate(prompt, sampler,
//       {.max_tokens = 64, .on_text = [](std::string_view s) { fputs(...); return true; }}));
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/graph.h"
#include "runtime/plan_file.h"
#include "runtime/sampler.h"
#include "runtime/tokenizer/tokenizer.h"

namespace jllm::runtime {


struct SessionOptions {
  int64_t context = 0;          // KV cache positions; 0: the backend's DefaultContext
  int n_threads = 0;            // backend CPU threads (0: all cores)
  int64_t prefill_chunk = 512;  // prompt tokens per backend step (bounds prefill memory)
};

enum class StopReason {
  kEndOfGeneration,  // the model produced an end-of-generation token (<|im_end|>, eos, ...)
  kMaxTokens,        // GenerateOptions::max_tokens reached
  kStopString,       // a stop string appeared in the text
  kContextFull,      // the KV cache is full: no position left for another token
  kCancelled,        // the text callback asked to stop
};
std::string_view StopReasonName(StopReason r);  // "end of generation", "context full", ...

struct GenerationStats {
  int64_t prompt_tokens = 0;       // prompt tokens run through the model in this call
  int64_t reused_tokens = 0;       // prompt tokens whose keys/values were already cached
  double prompt_seconds = 0;       // prefill time
  int64_t generated_tokens = 0;    // tokens sampled (an end-of-generation token included)
  int64_t decode_steps = 0;        // one-token forward passes
  double decode_seconds = 0;       // time of those steps, with their sampling and streaming
  double time_to_first_token = 0;  // from the call until the first token was sampled
  double prompt_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

struct GenerateOptions {
  int64_t max_tokens = -1;  // tokens to sample at most (-n); < 0: no limit
  std::vector<std::string> stop_strings;
  // Receives the text as it becomes final: whole UTF-8 characters, control tokens left out,
  // nothing that might still be the start of a stop string. Return false to cancel.
  std::function<bool(std::string_view piece)> on_text;
  // Receives, in order, each processed position's token and logits row (prompt tokens and the
  // generated tokens fed back). Setting it makes the prefill compute every row.
  std::function<void(int32_t token, absl::Span<const float> logits)> on_logits;
  // Called after each prefill chunk with the prompt tokens run so far and their total (for a
  // progress display).
  std::function<void(int64_t done, int64_t total)> on_prefill;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // the sampled tokens, in order (an end-of-generation one too)
  std::string text;             // everything on_text received
  StopReason stop = StopReason::kEndOfGeneration;
  GenerationStats stats;
};

class Session {
 public:
  // Builds the tokenizer and loads `graph` into `backend` with `weights`, which the session
  // keeps alive as long as the backend.
  static absl::StatusOr<std::unique_ptr<Session>> Create(const ir::Graph& graph,
                                                         const gguf::TokenizerData& tokenizer,
                                                         std::unique_ptr<Backend> backend,
                                                         std::unique_ptr<WeightSource> weights,
                                                         const SessionOptions& options);
  // The same for a plan: maps its GGUF (or `gguf_override`) and checks the fingerprint first.
  static absl::StatusOr<std::unique_ptr<Session>> FromPlan(const Plan& plan,
                                                           const std::string& plan_path,
                                                           std::unique_ptr<Backend> backend,
                                                           const SessionOptions& options,
                                                           const std::string& gguf_override = "");

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ir::ModelConfig& config() const { return config_; }
  const Backend& backend() const { return *backend_; }
  int64_t context_size() const { return context_; }
  // The tokens whose keys and values the cache holds, position by position.
  absl::Span<const int32_t> cached_tokens() const { return cached_; }

  // Text to ids; control tokens written in the text ("<|im_start|>") become their ids.
  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text) const;

  // Generates a continuation of `prompt`, which is the whole context (earlier turns included):
  // the longest prefix already in the cache is reused, the rest is prefilled. The sampler's
  // penalty window is set to the prompt's tail. A prompt longer than the context, an empty one
  // or an id outside the vocabulary is an error; running out of context while generating is
  // StopReason::kContextFull.
  absl::StatusOr<GenerateResult> Generate(absl::Span<const int32_t> prompt, Sampler& sampler,
                                          const GenerateOptions& options);

  // Forgets the cached context (the next Generate prefills from position 0).
  void ClearCache() { cached_.clear(); }

  // --profile: where the time of a prefill of `prompt` (its last chunk, after the earlier chunks
  // prefilled unprofiled) and of the decode step after it goes, by kernel — so a long prompt
  // profiles the step at its depth. `sampling`: the draw the decode step ends with, as generation
  // would draw (a greedy step's kernels differ: Backend::Profile); null: none. Leaves the cache
  // holding the profiled positions.
  struct StepProfile {
    int64_t tokens = 0;    // in the step
    int64_t position = 0;  // of its first token
    double wall_seconds = 0;
    std::vector<KernelTiming> kernels;
  };
  absl::StatusOr<std::vector<StepProfile>> Profile(absl::Span<const int32_t> prompt,
                                                   const SamplerOptions* sampling = nullptr);

 private:
  Session() = default;
  // Runs the tokens after the cached ones in chunks; returns the token sampled from the last.
  absl::StatusOr<int32_t> Prefill(absl::Span<const int32_t> tokens, const GenerateOptions& options,
                                  const SamplerOptions& sampling);

  ir::ModelConfig config_;
  int64_t context_ = 0;
  int64_t prefill_chunk_ = 512;
  std::unique_ptr<Tokenizer> tokenizer_;
  // Declared before the backend, so the backend (which may read them) is destroyed first.
  std::unique_ptr<WeightSource> weights_;
  std::unique_ptr<Backend> backend_;
  std::vector<int32_t> cached_;
  std::vector<float> logits_;
};

}  // namespace jllm::runtime
