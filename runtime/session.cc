#include "runtime/session.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "runtime/plan_weights.h"
#include "runtime/stop_strings.h"
#include "runtime/tokenizer/stream_decoder.h"

namespace jllm::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

std::string_view StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kEndOfGeneration: return "end of generation";
    case StopReason::kMaxTokens: return "token limit";
    case StopReason::kStopString: return "stop string";
    case StopReason::kContextFull: return "context full";
    case StopReason::kCancelled: return "cancelled";
  }
  return "unknown";
}

double GenerationStats::prompt_tokens_per_second() const {
  return prompt_seconds > 0 ? prompt_tokens / prompt_seconds : 0;
}

double GenerationStats::decode_tokens_per_second() const {
  return decode_seconds > 0 ? decode_steps / decode_seconds : 0;
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(const ir::Graph& graph,
                                                         const gguf::TokenizerData& tokenizer,
                                                         std::unique_ptr<Backend> backend,
                                                         std::unique_ptr<WeightSource> weights,
                                                         const SessionOptions& options) {
  if (backend == nullptr || weights == nullptr) {
    return absl::InvalidArgumentError("Session::Create needs a backend and a weight source");
  }
  std::unique_ptr<Session> s(new Session());
  s->config_ = graph.config;
  const int64_t model_ctx = graph.config.context_length;
  if (options.context < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("context size must be positive, not ", options.context));
  }
  s->prefill_chunk_ = std::max<int64_t>(1, options.prefill_chunk);
  BackendOptions bo;
  bo.n_threads = options.n_threads;
  bo.max_step_tokens = s->prefill_chunk_;
  if (options.context > 0) {
    s->context_ = options.context;
  } else {
    ASSIGN_OR_RETURN(s->context_, backend->DefaultContext(graph, bo));
  }
  if (s->context_ <= 0) {
    return absl::InvalidArgumentError("the model does not say its context length; pass one");
  }
  if (model_ctx > 0 && s->context_ > model_ctx) {
    return absl::InvalidArgumentError(absl::StrCat("context ", s->context_,
                                                   " exceeds the model's maximum context ",
                                                   model_ctx, "; pass a smaller one"));
  }
  ASSIGN_OR_RETURN(s->tokenizer_, Tokenizer::Create(tokenizer));
  if (s->tokenizer_->n_vocab() != graph.config.n_vocab) {
    return absl::InvalidArgumentError(absl::StrCat("the tokenizer has ", s->tokenizer_->n_vocab(),
                                                   " tokens but the model's vocabulary is ",
                                                   graph.config.n_vocab));
  }
  s->weights_ = std::move(weights);
  s->backend_ = std::move(backend);
  bo.max_context = s->context_;
  RETURN_IF_ERROR(s->backend_->Load(graph, *s->weights_, bo));
  return s;
}

absl::StatusOr<std::unique_ptr<Session>> Session::FromPlan(const Plan& plan,
                                                           const std::string& plan_path,
                                                           std::unique_ptr<Backend> backend,
                                                           const SessionOptions& options,
                                                           const std::string& gguf_override) {
  ASSIGN_OR_RETURN(std::unique_ptr<PlanWeights> weights,
                   PlanWeights::Open(plan.weights, plan_path, gguf_override));
  return Create(plan.graph, plan.tokenizer, std::move(backend), std::move(weights), options);
}

absl::StatusOr<std::vector<int32_t>> Session::Tokenize(std::string_view text) const {
  EncodeOptions eo;
  eo.parse_special = true;
  eo.add_bos = true;  // only if the vocabulary asks for it (Qwen3 does not)
  return tokenizer_->Encode(text, eo);
}

absl::StatusOr<int32_t> Session::Prefill(absl::Span<const int32_t> tokens,
                                         const GenerateOptions& options,
                                         const SamplerOptions& sampling) {
  const int64_t n_vocab = config_.n_vocab;
  int32_t next = -1;
  for (size_t begin = 0; begin < tokens.size(); begin += prefill_chunk_) {
    const auto chunk = tokens.subspan(begin, prefill_chunk_);
    const bool last = begin + chunk.size() == tokens.size();
    StepOptions step;
    step.sampling = last ? &sampling : nullptr;
    if (options.on_logits) {
      step.logits = &logits_;
      step.rows = LogitsRows::kAll;
    }
    ASSIGN_OR_RETURN(next, backend_->Step(chunk, static_cast<int64_t>(cached_.size()), step));
    cached_.insert(cached_.end(), chunk.begin(), chunk.end());
    if (options.on_logits) {
      if (logits_.size() != chunk.size() * n_vocab) {
        return absl::InternalError(absl::StrCat("backend ", Sv(backend_->name()), " returned ",
                                                logits_.size(), " logits for ", chunk.size(),
                                                " rows of ", n_vocab));
      }
      for (size_t i = 0; i < chunk.size(); ++i) {
        options.on_logits(chunk[i], absl::MakeConstSpan(logits_).subspan(i * n_vocab, n_vocab));
      }
    }
    if (options.on_prefill) {
      options.on_prefill(static_cast<int64_t>(begin + chunk.size()),
                         static_cast<int64_t>(tokens.size()));
    }
  }
  return next;
}

absl::StatusOr<GenerateResult> Session::Generate(absl::Span<const int32_t> prompt,
                                                 Sampler& sampler,
                                                 const GenerateOptions& options) {
  const auto start = Clock::now();
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  for (int32_t id : prompt) {
    if (!tokenizer_->IsValidId(id)) {
      return absl::InvalidArgumentError(absl::StrCat("prompt token id ", id,
                                                     " is outside the vocabulary [0, ",
                                                     tokenizer_->n_vocab(), ")"));
    }
  }
  if (static_cast<int64_t>(prompt.size()) > context_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the prompt is ", prompt.size(), " tokens but the context holds ", context_,
        ": shorten it or raise the context size (-c; the model allows up to ",
        config_.context_length, ")"));
  }
  RETURN_IF_ERROR(ValidateSamplerOptions(sampler.options()));

  // Reuse the cached prefix, but always recompute the last prompt token: its logits are needed.
  size_t reuse = 0;
  while (reuse < cached_.size() && reuse + 1 < prompt.size() && cached_[reuse] == prompt[reuse]) {
    ++reuse;
  }
  cached_.resize(reuse);

  GenerateResult result;
  GenerationStats& stats = result.stats;
  stats.reused_tokens = static_cast<int64_t>(reuse);
  stats.prompt_tokens = static_cast<int64_t>(prompt.size() - reuse);
  const SamplerOptions& sampling = sampler.options();
  const auto prefill_start = Clock::now();
  ASSIGN_OR_RETURN(int32_t token, Prefill(prompt.subspan(reuse), options, sampling));
  stats.prompt_seconds = Seconds(prefill_start, Clock::now());

  DecodeOptions dopt;
  dopt.skip_control = true;
  StreamDecoder decoder(*tokenizer_, dopt);
  StopStringFilter stops(options.stop_strings);
  bool cancelled = false;
  const auto emit = [&](const std::string& text) {
    if (text.empty() || cancelled) return;
    result.text += text;
    if (options.on_text && !options.on_text(text)) cancelled = true;
  };

  const int64_t n_vocab = config_.n_vocab;
  auto decode_start = Clock::now();
  while (true) {
    if (options.max_tokens >= 0 && stats.generated_tokens >= options.max_tokens) {
      result.stop = StopReason::kMaxTokens;
      break;
    }
    ++stats.generated_tokens;
    result.tokens.push_back(token);
    if (stats.generated_tokens == 1) {
      decode_start = Clock::now();
      stats.time_to_first_token = Seconds(start, decode_start);
    }
    if (tokenizer_->IsEndOfGeneration(token)) {
      result.stop = StopReason::kEndOfGeneration;
      break;
    }
    ASSIGN_OR_RETURN(std::string piece, decoder.Push(token));
    emit(stops.Push(piece));
    if (stops.stopped()) {
      result.stop = StopReason::kStopString;
      break;
    }
    if (cancelled) {
      result.stop = StopReason::kCancelled;
      break;
    }
    if (options.max_tokens >= 0 && stats.generated_tokens >= options.max_tokens) {
      result.stop = StopReason::kMaxTokens;
      break;
    }
    if (static_cast<int64_t>(cached_.size()) >= context_) {
      result.stop = StopReason::kContextFull;
      break;
    }
    const int32_t step_tokens[1] = {token};
    StepOptions step;
    step.sampling = &sampling;
    if (options.on_logits) step.logits = &logits_;
    ASSIGN_OR_RETURN(const int32_t next,
                     backend_->Step(step_tokens, static_cast<int64_t>(cached_.size()), step));
    if (options.on_logits && logits_.size() != static_cast<size_t>(n_vocab)) {
      return absl::InternalError(absl::StrCat("backend ", Sv(backend_->name()), " returned ",
                                              logits_.size(), " logits, not ", n_vocab));
    }
    cached_.push_back(token);
    ++stats.decode_steps;
    if (options.on_logits) options.on_logits(token, logits_);
    token = next;
  }
  if (stats.generated_tokens > 0) stats.decode_seconds = Seconds(decode_start, Clock::now());
  if (!stops.stopped()) {
    emit(stops.Push(decoder.Finish()));
    if (!stops.stopped()) emit(stops.Flush());
  }
  return result;
}

absl::StatusOr<std::vector<Session::StepProfile>> Session::Profile(absl::Span<const int32_t> prompt,
                                                                  const SamplerOptions* sampling) {
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  if (sampling != nullptr) RETURN_IF_ERROR(ValidateSamplerOptions(*sampling));
  if (static_cast<int64_t>(prompt.size()) >= context_) {
    return absl::ResourceExhaustedError(absl::StrCat("--profile: the prompt is ", prompt.size(),
                                                     " tokens and the decode step after it needs one more, but the "
                                                     "context holds ",
                                                     context_, ": shorten it or raise the context size (-c)"));
  }
  cached_.clear();
  std::vector<StepProfile> out;
  // Every chunk but the last prefilled as Prefill does, unprofiled: the profiled steps run at
  // the prompt's depth.
  const size_t last_begin = (prompt.size() - 1) / prefill_chunk_ * prefill_chunk_;
  for (size_t begin = 0; begin < last_begin; begin += prefill_chunk_) {
    const auto earlier = prompt.subspan(begin, prefill_chunk_);
    RETURN_IF_ERROR(backend_->Step(earlier, static_cast<int64_t>(cached_.size()), StepOptions{}).status());
    cached_.insert(cached_.end(), earlier.begin(), earlier.end());
  }
  const auto chunk = prompt.subspan(last_begin);
  auto run = [&](absl::Span<const int32_t> tokens, int64_t pos, const SamplingParams* draw) -> absl::Status {
    StepProfile p;
    p.tokens = static_cast<int64_t>(tokens.size());
    p.position = pos;
    const auto start = Clock::now();
    ASSIGN_OR_RETURN(p.kernels, backend_->Profile(tokens, pos, draw));
    p.wall_seconds = Seconds(start, Clock::now());
    cached_.insert(cached_.end(), tokens.begin(), tokens.end());
    out.push_back(std::move(p));
    return absl::OkStatus();
  };
  if (chunk.size() > 1) RETURN_IF_ERROR(run(chunk, static_cast<int64_t>(cached_.size()), nullptr));
  const int32_t next[1] = {chunk.back()};
  RETURN_IF_ERROR(run(next, static_cast<int64_t>(cached_.size()), sampling));
  return out;
}

}  // namespace jllm::runtime
