// ggml's reference K-quantizers without an importance matrix (FORMATS.md §3): what
// llama-quantize runs for Q4_K, Q5_K and Q6_K tensors when no imatrix is given.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/kquant_math.h"
#include "quant/quant.h"
#include "quant/row_codecs.h"

namespace jllm::quant::internal {
namespace {

constexpr int kSubBlocks = kQK_K / 32;

// Steps 1-3 shared by Q4_K and Q5_K: per-sub-block fit, 6-bit scales/mins packed into
// `scales`, fp16 d/dmin, then the levels L (0..nmax) recomputed from the stored values.
void QuantizeScalesAndLevelsK(const float* x, int nmax, float rmin, int nstep, uint8_t* scales,
                              uint16_t* d_out, uint16_t* dmin_out, uint8_t* L) {
  float sub_scales[kSubBlocks];
  float sub_mins[kSubBlocks];
  float weights[32];
  uint8_t laux[32];
  float max_scale = 0;  // scales are positive once the min is taken out
  float max_min = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
    sub_scales[j] =
        MakeQkx2Quants(32, nmax, xs, weights, L + 32 * j, &sub_mins[j], laux, rmin, 0.1f, nstep);
    if (sub_scales[j] > max_scale) max_scale = sub_scales[j];
    if (sub_mins[j] > max_min) max_min = sub_mins[j];
  }

  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kSubBlocks; ++j) {
    // ggml narrows to uint8 before clamping; a negative fit would wrap and clamp to 63.
    const uint8_t ls =
        std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * sub_scales[j])));
    const uint8_t lm =
        std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * sub_mins[j])));
    if (j < 4) {
      scales[j] = ls;
      scales[j + 4] = lm;
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d_out = F32ToFp16(max_scale / 63.f);
  *dmin_out = F32ToFp16(max_min / 63.f);

  const float d_stored = Fp16ToF32(*d_out);
  const float dmin_stored = Fp16ToF32(*dmin_out);
  for (int j = 0; j < kSubBlocks; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(j, scales, &sc, &m);
    const float d = d_stored * sc;
    if (d == 0) continue;  // keep the levels of the fit
    const float dm = dmin_stored * m;
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] =
          static_cast<uint8_t>(std::clamp(NearestInt((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void QuantizeQ4_K(const float* x, BlockQ4_K* y, int64_t nblocks) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    BlockQ4_K& blk = y[b];
    QuantizeScalesAndLevelsK(x, 15, -1.f, 20, blk.scales, &blk.d, &blk.dmin, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        blk.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
      }
    }
  }
}

void QuantizeQ5_K(const float* x, BlockQ5_K* y, int64_t nblocks) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    BlockQ5_K& blk = y[b];
    QuantizeScalesAndLevelsK(x, 31, -0.5f, 15, blk.scales, &blk.d, &blk.dmin, L);
    std::memset(blk.qh, 0, sizeof(blk.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l];
        const int hi = L[64 * c + 32 + l];
        if (lo > 15) blk.qh[l] |= static_cast<uint8_t>(1u << (2 * c));
        if (hi > 15) blk.qh[l] |= static_cast<uint8_t>(1u << (2 * c + 1));
        blk.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      }
    }
  }
}

void QuantizeQ6_K(const float* x, BlockQ6_K* y, int64_t nblocks) {
  int8_t L[kQK_K];
  float group_scales[kQK_K / 16];
  for (int64_t b = 0; b < nblocks; ++b, x += kQK_K) {
    BlockQ6_K& blk = y[b];
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int g = 0; g < kQK_K / 16; ++g) {
      const float scale = MakeQxQuants(16, 32, x + 16 * g, L + 16 * g);
      group_scales[g] = scale;
      if (std::fabs(scale) > max_abs_scale) {
        max_abs_scale = std::fabs(scale);
        max_scale = scale;
      }
    }
    if (max_abs_scale < 1e-15f) {  // an all-zero block
      std::memset(&blk, 0, sizeof(blk));
      continue;
    }
    const float iscale = -128.f / max_scale;
    blk.d = F32ToFp16(1 / iscale);
    for (int g = 0; g < kQK_K / 16; ++g) {
      blk.scales[g] = static_cast<int8_t>(std::min(127, NearestInt(iscale * group_scales[g])));
    }
    const float d_stored = Fp16ToF32(blk.d);
    for (int g = 0; g < kQK_K / 16; ++g) {
      const float d = d_stored * blk.scales[g];
      if (d == 0) continue;
      for (int i = 0; i < 16; ++i) {
        L[16 * g + i] =
            static_cast<int8_t>(std::clamp(NearestInt(x[16 * g + i] / d), -32, 31) + 32);
      }
    }
    // Pack per FORMATS.md §2's Q6_K table: four quarter-rows of 32 share ql/qh bytes.
    for (int h = 0; h < 2; ++h) {
      uint8_t* ql = blk.ql + 64 * h;
      uint8_t* qh = blk.qh + 32 * h;
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) |
                                     ((q4 >> 4) << 6));
      }
    }
  }
}

}  // namespace jllm::quant::internal
