#include "backends/sampling.h"

#include <algorithm>
#include <cmath>

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace jllm {
namespace {

bool Better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

}  // namespace

absl::Status ValidateSamplingParams(const SamplingParams& o) {
  if (!std::isfinite(o.temperature) || o.temperature < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("temperature must be a finite number >= 0 (0 = greedy), not ", o.temperature));
  }
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("top-p must be in (0, 1] (1 = off), not ", o.top_p));
  }
  if (!(o.min_p >= 0 && o.min_p <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min-p must be in [0, 1] (0 = off), not ", o.min_p));
  }
  if (!std::isfinite(o.repeat_penalty) || o.repeat_penalty <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "repeat penalty must be a finite number > 0 (1 = off), not ", o.repeat_penalty));
  }
  for (const auto& [name, v] : {std::pair{"presence penalty", o.presence_penalty},
                                 std::pair{"frequency penalty", o.frequency_penalty}}) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat(name, " must be a finite number (0 = off), not ", v));
    }
  }
  if (o.repeat_last_n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeat-last-n must be >= 0, not ", o.repeat_last_n));
  }
  return absl::OkStatus();
}

void ApplyPenalties(absl::Span<float> logits, absl::Span<const int32_t> recent, const SamplingParams& params) {
  if (!params.Penalizes()) return;
  absl::flat_hash_map<int32_t, int32_t> count;
  for (int32_t id : recent) {
    if (id >= 0 && static_cast<size_t>(id) < logits.size()) ++count[id];
  }
  for (const auto& [id, n] : count) {
    float& l = logits[id];
    const float rp = params.repeat_penalty;
    l = l > 0 ? l / rp : l * rp;
    l -= static_cast<float>(n) * params.frequency_penalty + params.presence_penalty;
  }
}

std::vector<Candidate> SortedCandidates(absl::Span<const float> logits, int32_t k) {
  std::vector<Candidate> c(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    // NaN would break the ordering the sort relies on: it ranks last, as -infinity.
    const float l = std::isnan(logits[i]) ? -INFINITY : logits[i];
    c[i] = {static_cast<int32_t>(i), l};
  }
  if (k > 0 && static_cast<size_t>(k) < c.size()) {
    std::nth_element(c.begin(), c.begin() + (k - 1), c.end(), Better);
    c.resize(k);
  }
  std::sort(c.begin(), c.end(), Better);
  return c;
}

void KeepTopK(std::vector<Candidate>& c, int32_t k) {
  if (k > 0 && static_cast<size_t>(k) < c.size()) c.resize(k);
}

std::vector<double> CandidateProbabilities(const std::vector<Candidate>& c, float temperature) {
  std::vector<double> p(c.size());
  if (c.empty()) return p;
  double max_logit = c[0].logit;
  for (const auto& x : c) max_logit = std::max<double>(max_logit, x.logit);
  if (std::isinf(max_logit) && max_logit < 0) {  // every candidate masked: uniform
    std::fill(p.begin(), p.end(), 1.0 / c.size());
    return p;
  }
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    p[i] = std::exp((c[i].logit - max_logit) / temperature);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

void KeepTopP(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f || c.empty()) return;
  const std::vector<double> prob = CandidateProbabilities(c);
  double mass = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    mass += prob[i];
    if (mass >= p) {
      c.resize(i + 1);
      return;
    }
  }
}

void KeepMinP(std::vector<Candidate>& c, float min_p) {
  if (min_p <= 0.0f || c.empty()) return;
  // p_i / p_best = exp(l_i - l_best) >= min_p  <=>  l_i >= l_best + log(min_p).
  const double threshold = static_cast<double>(c[0].logit) + std::log(static_cast<double>(min_p));
  size_t keep = 1;
  while (keep < c.size() && c[keep].logit >= threshold) ++keep;
  c.resize(keep);
}

SamplingChoice SamplingDistribution(absl::Span<const float> logits, absl::Span<const int32_t> recent,
                                    const SamplingParams& params) {
  std::vector<float> penalized(logits.begin(), logits.end());
  ApplyPenalties(absl::MakeSpan(penalized), recent, params);
  SamplingChoice choice;
  if (params.temperature <= 0.0f) {
    choice.candidates = SortedCandidates(penalized, 1);
    choice.probabilities.assign(choice.candidates.size(), 1.0);
    return choice;
  }
  choice.candidates = SortedCandidates(penalized, params.top_k);
  KeepTopK(choice.candidates, params.top_k);
  KeepTopP(choice.candidates, params.top_p);
  KeepMinP(choice.candidates, params.min_p);
  choice.probabilities = CandidateProbabilities(choice.candidates, params.temperature);
  return choice;
}

int32_t SampleToken(absl::Span<const float> logits, absl::Span<const int32_t> recent,
                    const SamplingParams& params, int64_t position) {
  if (logits.empty()) return -1;
  const SamplingChoice choice = SamplingDistribution(logits, recent, params);
  if (choice.candidates.size() == 1) return choice.candidates[0].id;
  const double u = SampleUniform(params.seed, static_cast<uint64_t>(position));
  double mass = 0;
  for (size_t i = 0; i < choice.candidates.size(); ++i) {
    mass += choice.probabilities[i];
    if (u < mass) return choice.candidates[i].id;
  }
  return choice.candidates.back().id;  // rounding left u just above the total
}

}  // namespace jllm
