// The two scale searches of ggml's reference K-quantizers. Every product and sum below is f32
// in ggml's order ((w*l)*l, (w*l)*x, ...) so the chosen levels match llama-quantize bit for bit.
#include "quant/kquant_math.h"

#include <algorithm>
#include <cmath>

namespace jllm::quant::internal {

float MakeQkx2Quants(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min,
                     uint8_t* laux, float rmin, float rdelta, int nstep) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float wi = w[i];
    sum_w += wi;
    sum_x += wi * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    *neg_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::clamp(l, 0, nmax));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  // Once a candidate is accepted, `min` is its fitted min, and later trials measure x - min
  // and max - min from it (ggml's loop; FORMATS.md §3 step 3 leaves this implicit).
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(NearestInt(iscale * (x[i] - min)), 0, nmax);
      laux[i] = static_cast<uint8_t>(l);
      const float wi = w[i];
      sum_l += wi * l;
      sum_l2 += wi * l * l;
      sum_xl += wi * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        std::copy(laux, laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

namespace {

// Levels for one trial inverse scale, and the weighted sums the fit needs.
void QxTrial(int n, int nmax, const float* x, float iscale, float* sumlx, float* suml2) {
  *sumlx = 0;
  *suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1);
    const float w = x[i] * x[i];
    *sumlx += w * x[i] * l;
    *suml2 += w * l * l;
  }
}

void QxLevels(int n, int nmax, const float* x, float iscale, int8_t* L) {
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<int8_t>(nmax + std::clamp(NearestInt(iscale * x[i]), -nmax, nmax - 1));
  }
}

}  // namespace

float MakeQxQuants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < 1e-15f) {  // ggml's GROUP_MAX_EPS
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx, suml2;
  QxTrial(n, nmax, x, iscale, &sumlx, &suml2);
  QxLevels(n, nmax, x, iscale, L);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    QxTrial(n, nmax, x, iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      QxLevels(n, nmax, x, iscale, L);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace jllm::quant::internal
