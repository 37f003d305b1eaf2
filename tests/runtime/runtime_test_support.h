// Shared pieces of the runtime tests: a tiny synthesized Qwen3 GGUF (the byte-level
// vocabulary, so token ids are byte values), a scripted fake backend for the generation loop,
// and (from tests/support) temporary paths and whole-file reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/sampling.h"
#include "frontends/gguf/synth_model.h"
#include "ir/status.h"
#include "gtest/gtest.h"
#include "tests/support/temp_files.h"

namespace jllm::runtime::testing {

using ::jllm::testing::ReadFile;
using ::jllm::testing::TempPath;
using ::jllm::testing::WriteFile;

// The `tiny` preset (E 256, 4 layers, byte-level vocabulary of 261 tokens) with Q8_0 matrices.
inline void WriteTinyModel(const std::string& path, uint64_t seed = 1) {
  gguf::SynthOptions o;
  o.preset = "tiny";
  o.weights = gguf::SynthWeights::kQ8_0;
  o.seed = seed;
  o.threads = 1;
  auto s = gguf::WriteSynthModel(o, path);
  ASSERT_TRUE(s.ok()) << s.status();
}

// A backend that runs no model: each position's logits come from `next(position, token)`,
// which returns the token to favour there (its logit is 10, every other one 0), sampled with the
// reference sampler. It records every Step call and refuses calls past max_context, as the
// interface requires.
class ScriptedBackend : public Backend {
 public:
  struct Call {
    std::vector<int32_t> tokens;
    int64_t pos0;
    LogitsRows rows;
    bool profiled = false;  // through Profile
    bool drew = false;      // a profiled step given a draw (Profile's sampling)
  };
  using Next = std::function<int32_t(int64_t pos, int32_t token)>;

  ScriptedBackend(int64_t n_vocab, Next next, std::vector<Call>* calls)
      : n_vocab_(n_vocab), next_(std::move(next)), calls_(calls) {}

  std::string_view name() const override { return "scripted"; }
  absl::Status Load(const ir::Graph&, const WeightSource&, const BackendOptions& o) override {
    max_context_ = o.max_context;
    return absl::OkStatus();
  }
  absl::StatusOr<int32_t> Step(absl::Span<const int32_t> tokens, int64_t pos0,
                               const StepOptions& options) override {
    const LogitsRows rows = options.rows;
    if (calls_ != nullptr) calls_->push_back({{tokens.begin(), tokens.end()}, pos0, rows});
    if (tokens.empty() || pos0 < 0 || pos0 + static_cast<int64_t>(tokens.size()) > max_context_) {
      return absl::OutOfRangeError("scripted backend: positions past the context");
    }
    context_.resize(pos0);
    context_.insert(context_.end(), tokens.begin(), tokens.end());
    const size_t n_rows = rows == LogitsRows::kAll ? tokens.size() : 1;
    std::vector<float> logits(n_rows * n_vocab_, 0.0f);
    for (size_t r = 0; r < n_rows; ++r) {
      const size_t t = rows == LogitsRows::kAll ? r : tokens.size() - 1;
      const int32_t want = next_(pos0 + static_cast<int64_t>(t), tokens[t]);
      logits[r * n_vocab_ + want] = 10.0f;
    }
    int32_t next = -1;
    if (options.sampling != nullptr) {
      const auto last = absl::MakeConstSpan(logits).subspan((n_rows - 1) * n_vocab_, n_vocab_);
      const int64_t n = static_cast<int64_t>(context_.size());
      const int64_t first = std::max<int64_t>(0, n - std::max(options.sampling->repeat_last_n, 0));
      next = SampleToken(last, absl::MakeConstSpan(context_).subspan(first), *options.sampling, n);
    }
    if (options.logits != nullptr) *options.logits = std::move(logits);
    return next;
  }
  // A step as Step runs it (with the draw it is given), recorded as profiled, timed as one
  // "scripted" kernel.
  absl::StatusOr<std::vector<KernelTiming>> Profile(absl::Span<const int32_t> tokens, int64_t pos0,
                                                    const SamplingParams* sampling) override {
    StepOptions options;
    options.sampling = sampling;
    RETURN_IF_ERROR(Step(tokens, pos0, options).status());
    if (calls_ != nullptr) {
      calls_->back().profiled = true;
      calls_->back().drew = sampling != nullptr;
    }
    KernelTiming t;
    t.name = "scripted";
    t.calls = 1;
    return std::vector<KernelTiming>{t};
  }
  absl::StatusOr<std::vector<std::vector<float>>> Evaluate(int64_t, int64_t,
                                                           absl::Span<const NamedInput>,
                                                           absl::Span<const std::string>) override {
    return absl::UnimplementedError("scripted backend: no graph to evaluate");
  }

 private:
  int64_t n_vocab_;
  Next next_;
  std::vector<Call>* calls_;
  int64_t max_context_ = 0;
  std::vector<int32_t> context_;
};

}  // namespace jllm::runtime::testing
