// The K-quantizers' scale searches checked against a second implementation written here from
// FORMATS.md §3 in double precision (so it shares no code and no rounding with the library).
// The round-trip error tests cannot tell rmin = -1 from -0.5 or nstep 20 from 15 (the error
// moves by < 1%); the chosen 6-bit scale codes and fp16 super-scales can.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "quant/quant.h"
#include "gtest/gtest.h"

namespace jllm::quant {
namespace {

int RoundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// make_qkx2_quants as FORMATS.md §3 states it: fits x ~ scale*L + min, returns {scale, -min}.
std::pair<double, double> FitScaleMin(const double* x, int n, int nmax, double rmin, double rdelta,
                                      int nstep) {
  double av = 0;
  for (int i = 0; i < n; ++i) av += x[i] * x[i];
  av = std::sqrt(av / n);
  std::vector<double> w(n);
  for (int i = 0; i < n; ++i) w[i] = av + std::fabs(x[i]);
  double min = std::min(0.0, *std::min_element(x, x + n));
  const double max = *std::max_element(x, x + n);
  if (max == min) return {0.0, -min};
  auto levels = [&](double iscale) {
    std::vector<int> L(n);
    for (int i = 0; i < n; ++i) L[i] = std::clamp(RoundHalfEven(iscale * (x[i] - min)), 0, nmax);
    return L;
  };
  auto error = [&](const std::vector<int>& L, double scale, double m) {
    double e = 0;
    for (int i = 0; i < n; ++i) e += w[i] * (scale * L[i] + m - x[i]) * (scale * L[i] + m - x[i]);
    return e;
  };
  double scale = (max - min) / nmax;
  double best = error(levels(nmax / (max - min)), scale, min);
  for (int is = 0; is <= nstep; ++is) {
    // ggml's loop (not spelled out in FORMATS.md): once a candidate is accepted, later trials
    // measure x - min and max - min from the accepted min.
    const std::vector<int> L = levels((rmin + rdelta * is + nmax) / (max - min));
    double sw = 0, sl = 0, sl2 = 0, sx = 0, sxl = 0;
    for (int i = 0; i < n; ++i) {
      sw += w[i];
      sl += w[i] * L[i];
      sl2 += w[i] * L[i] * L[i];
      sx += w[i] * x[i];
      sxl += w[i] * L[i] * x[i];
    }
    const double D = sw * sl2 - sl * sl;
    if (D <= 0) continue;
    double s = (sw * sxl - sx * sl) / D;
    double m = (sl2 * sx - sl * sxl) / D;
    if (m > 0) {
      m = 0;
      s = sxl / sl2;
    }
    const double e = error(L, s, m);
    if (e < best) {
      best = e;
      scale = s;
      min = m;
    }
  }
  return {scale, -min};
}

struct KParams {
  GgmlType type;
  int nmax;
  double rmin, rdelta;
  int nstep;
};

// FORMATS.md §3: quantize_row_q4_K_ref / quantize_row_q5_K_ref parameters.
constexpr KParams kQ4K = {GgmlType::kQ4_K, 15, -1.0, 0.1, 20};
constexpr KParams kQ5K = {GgmlType::kQ5_K, 31, -0.5, 0.1, 15};

void UnpackK4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

std::vector<float> Data(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = normal(rng);
  // Shift some blocks so that the min/offset path is exercised, not only zero-centred data.
  for (int i = 0; i < n; ++i) x[i] += (i / 256) % 3 == 1 ? 1.5f : 0.0f;
  return x;
}

// Requires most blocks' fp16 d and dmin to be within one fp16 step of the double-precision
// reference, and within those blocks nearly all 6-bit scale and min codes to be equal.
void CheckScaleCodes(const KParams& p) {
  constexpr int kBlocks = 64;
  const auto x = Data(256 * kBlocks, 17);
  const int64_t bytes = RowBytes(p.type, 256);
  std::vector<uint8_t> q(bytes * kBlocks);
  ASSERT_TRUE(QuantizeRow(p.type, x.data(), q.data(), 256 * kBlocks).ok());
  int agree = 0, blocks_agree = 0;
  for (int b = 0; b < kBlocks; ++b) {
    double scales[8], mins[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      double xs[32];
      for (int i = 0; i < 32; ++i) xs[i] = x[256 * b + 32 * j + i];
      std::tie(scales[j], mins[j]) = FitScaleMin(xs, 32, p.nmax, p.rmin, p.rdelta, p.nstep);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const uint8_t* blk = &q[b * bytes];
    const int d_bits = blk[0] | blk[1] << 8, dmin_bits = blk[2] | blk[3] << 8;
    // A near-tie in the sub-block that holds the maximum moves every code of the block, so
    // codes are compared only in blocks whose super-scales agree.
    if (std::abs(d_bits - F32ToFp16(static_cast<float>(max_scale / 63))) > 1 ||
        std::abs(dmin_bits - F32ToFp16(static_cast<float>(max_min / 63))) > 1) {
      continue;
    }
    ++blocks_agree;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      UnpackK4(blk + 4, j, &sc, &m);
      const int want_sc =
          max_scale > 0 ? std::min(63, RoundHalfEven(63 * scales[j] / max_scale)) : 0;
      const int want_m = max_min > 0 ? std::min(63, RoundHalfEven(63 * mins[j] / max_min)) : 0;
      agree += (sc == want_sc && m == want_m);
    }
  }
  // f32 vs f64 may flip a near-tie between two candidate fits, or a code at a .5 boundary, in
  // the odd sub-block; a wrong search parameter changes a large fraction of them.
  EXPECT_GE(blocks_agree, kBlocks * 90 / 100) << blocks_agree << " of " << kBlocks;
  EXPECT_GE(agree, 8 * blocks_agree * 98 / 100) << agree << " of " << 8 * blocks_agree;
}

TEST(KQuantSearchTest, Q4_KScaleCodesMatchIndependentFit) { CheckScaleCodes(kQ4K); }
TEST(KQuantSearchTest, Q5_KScaleCodesMatchIndependentFit) { CheckScaleCodes(kQ5K); }

// make_qx_quants (nmax 32, weights x^2, 18 retries) per group of 16, then the int8 group scales.
double FitSymmetric(const double* x, int n, int nmax) {
  double amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-15) return 0;
  auto sums = [&](double iscale, double* slx, double* sl2) {
    *slx = *sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(RoundHalfEven(iscale * x[i]), -nmax, nmax - 1);
      *slx += x[i] * x[i] * x[i] * l;
      *sl2 += x[i] * x[i] * l * l;
    }
  };
  double slx, sl2;
  sums(-nmax / max, &slx, &sl2);
  double scale = sl2 != 0 ? slx / sl2 : 0, best = scale * slx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    sums(-(nmax + 0.1 * is) / max, &slx, &sl2);
    if (sl2 > 0 && slx * slx > best * sl2) {
      scale = slx / sl2;
      best = scale * slx;
    }
  }
  return scale;
}

TEST(KQuantSearchTest, Q6_KScaleCodesMatchIndependentFit) {
  constexpr int kBlocks = 64;
  const auto x = Data(256 * kBlocks, 18);
  std::vector<uint8_t> q(210 * kBlocks);
  ASSERT_TRUE(QuantizeRow(GgmlType::kQ6_K, x.data(), q.data(), 256 * kBlocks).ok());
  int agree = 0, blocks_agree = 0;
  for (int b = 0; b < kBlocks; ++b) {
    double scales[16], max_scale = 0;
    for (int g = 0; g < 16; ++g) {
      double xs[16];
      for (int i = 0; i < 16; ++i) xs[i] = x[256 * b + 16 * g + i];
      scales[g] = FitSymmetric(xs, 16, 32);
      if (std::fabs(scales[g]) > std::fabs(max_scale)) max_scale = scales[g];
    }
    const uint8_t* blk = &q[210 * b];
    const double iscale = -128 / max_scale;
    blocks_agree +=
        std::abs((blk[208] | blk[209] << 8) - F32ToFp16(static_cast<float>(1 / iscale))) <= 1;
    for (int g = 0; g < 16; ++g) {
      agree +=
          static_cast<int8_t>(blk[192 + g]) == std::min(127, RoundHalfEven(iscale * scales[g]));
    }
  }
  EXPECT_GE(agree, 16 * kBlocks * 97 / 100) << agree << " of " << 16 * kBlocks;
  EXPECT_GE(blocks_agree, kBlocks * 90 / 100) << blocks_agree << " of " << kBlocks;
}

}  // namespace
}  // namespace jllm::quant
