// Comparing rows of logits: arg-max, log-softmax and KL divergence in double, shared by the
// tests that compare two runs of a model (pass on/off, int8 vs f16 KV cache, jllm vs a
// reference).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace jllm::testing {

// Index of the largest logit (the first one on a tie, as std::max_element).
inline int32_t Argmax(absl::Span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

inline std::vector<double> LogSoftmax(absl::Span<const float> row) {
  std::vector<double> out(row.begin(), row.end());
  const double m = *std::max_element(out.begin(), out.end());
  double sum = 0;
  for (double x : out) sum += std::exp(x - m);
  const double log_z = m + std::log(sum);
  for (double& x : out) x -= log_z;
  return out;
}

// log Σ exp(row), in double.
inline double LogSumExp(absl::Span<const float> row) {
  const double m = *std::max_element(row.begin(), row.end());
  double sum = 0;
  for (float x : row) sum += std::exp(static_cast<double>(x) - m);
  return m + std::log(sum);
}

// KL(p || q) in nats between the softmaxes of two rows of equal length.
inline double KlDivergence(absl::Span<const float> p_logits, absl::Span<const float> q_logits) {
  const std::vector<double> lp = LogSoftmax(p_logits), lq = LogSoftmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size() && i < lq.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

// Largest |a_i - b_i|.
inline double MaxAbsDiff(absl::Span<const float> a, absl::Span<const float> b) {
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m;
}

// ‖a − b‖₂ / ‖b‖₂ (b the reference), as the oracle scripts measure it.
inline double RelativeL2(absl::Span<const float> a, absl::Span<const float> b) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    err += d * d;
    ref += static_cast<double>(b[i]) * b[i];
  }
  return ref == 0 ? std::sqrt(err) : std::sqrt(err / ref);
}

// Per-position differences between two runs of the same positions (rows of logits).
struct RowsDiff {
  size_t positions = 0;
  double max_abs = 0;    // largest |Δlogit| anywhere
  double mean_kl = 0;    // KL(a || b) averaged over positions
  double max_kl = 0;
  double top1 = 0;       // fraction of positions with the same arg-max
  double max_logit = 0;  // largest |logit| of a, for scale
};

inline RowsDiff CompareRows(const std::vector<std::vector<float>>& a,
                            const std::vector<std::vector<float>>& b) {
  RowsDiff d;
  d.positions = std::min(a.size(), b.size());
  int same = 0;
  for (size_t r = 0; r < d.positions; ++r) {
    d.max_abs = std::max(d.max_abs, MaxAbsDiff(a[r], b[r]));
    for (float x : a[r]) d.max_logit = std::max(d.max_logit, std::fabs(static_cast<double>(x)));
    const double kl = KlDivergence(a[r], b[r]);
    d.mean_kl += kl / static_cast<double>(d.positions);
    d.max_kl = std::max(d.max_kl, kl);
    same += Argmax(a[r]) == Argmax(b[r]);
  }
  d.top1 = d.positions ? static_cast<double>(same) / static_cast<double>(d.positions) : 0;
  return d;
}

}  // namespace jllm::testing
