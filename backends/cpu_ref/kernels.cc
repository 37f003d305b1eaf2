#include "backends/cpu_ref/kernels.h"

#include <algorithm>
#include <cmath>

#include "ir/ops.h"

namespace jllm::cpu_ref {

float Dot(const float* a, const float* b, int64_t n) {
  // 16 independent sums: a fixed summation order the compiler may map onto SIMD lanes.
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; j < kLanes / 2; ++j) acc[j] += acc[j + kLanes / 2];
  float sum = 0.0f;
  for (int j = 0; j < kLanes / 2; ++j) sum += acc[j];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void RmsNormRow(const float* x, const float* gamma, float eps, int64_t n, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * gamma[i];
}

void RopeAngles(int64_t pos, int64_t n_rot, float freq_base, float freq_scale, float* cos_out,
                float* sin_out) {
  // As ggml's rope cache: the unscaled angle is stepped in float, then scaled by freq_scale.
  const float step = ir::RopeThetaStep(freq_base, n_rot);
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const float angle = freq_scale * theta;
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
    theta *= step;
  }
}

void RopeHead(float* x, int64_t n_rot, const float* cos_t, const float* sin_t) {
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float a = x[i];
    const float b = x[i + half];
    x[i] = a * cos_t[i] - b * sin_t[i];
    x[i + half] = a * sin_t[i] + b * cos_t[i];
  }
}

void SoftmaxInPlace(float* s, int64_t n) {
  float max = -INFINITY;
  for (int64_t j = 0; j < n; ++j) max = std::max(max, s[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - max);
    sum += s[j];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

void MatVecRows(const float* w, int64_t k, int64_t o_begin, int64_t o_end, const float* x,
                int64_t t_rows, float* y, int64_t y_stride) {
  // A block of weight rows stays in cache while every row of x passes by it, so prefill reads
  // each weight once instead of once per token.
  constexpr int64_t kRowBlock = 16;
  for (int64_t ob = o_begin; ob < o_end; ob += kRowBlock) {
    const int64_t oe = std::min(o_end, ob + kRowBlock);
    for (int64_t t = 0; t < t_rows; ++t) {
      const float* xt = x + t * k;
      float* yt = y + t * y_stride;
      for (int64_t o = ob; o < oe; ++o) yt[o] = Dot(w + o * k, xt, k);
    }
  }
}

}  // namespace jllm::cpu_ref
