// Reference quantizers: exact bytes where the rule is simple enough to work out by hand (Q8_0,
// zero blocks), invariants of the K-quant algorithms (stored levels are the nearest levels for
// the stored scales; the largest scale maps to the top code), and round-trip error bounds.
// ggml_golden_test.cc pins every byte to ggml's own output, so error bands measured with this
// implementation (formerly ±10 % per type) would only be weaker copies of that check.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "quant/block_layout.h"
#include "quant/quant.h"
#include "gtest/gtest.h"

namespace jllm::quant {
namespace {

constexpr GgmlType kBlockTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                    GgmlType::kQ6_K};

std::vector<float> NormalData(int64_t n, uint32_t seed, float stddev) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) {  // Box-Muller, one value per pair
    const double r = std::sqrt(-2.0 * std::log(1.0 - u(rng)));
    x[i] = static_cast<float>(stddev * r * std::cos(2 * M_PI * u(rng)));
  }
  return x;
}

std::vector<uint8_t> Quantize(GgmlType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(RowBytes(type, static_cast<int64_t>(x.size())), 0xAB);
  const absl::Status s = QuantizeRow(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(s.ok()) << s;
  return q;
}

std::vector<float> RoundTrip(GgmlType type, const std::vector<float>& x) {
  const auto q = Quantize(type, x);
  std::vector<float> y(x.size());
  const absl::Status s = DequantizeRow(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(s.ok()) << s;
  return y;
}

// --- Q8_0 exact bytes -------------------------------------------------------------------------

TEST(QuantizeTest, Q8_0RoundsHalfAwayFromZero) {
  // max |x| = 127 makes d = 1 exactly, so q = roundf(x): ties go away from zero, not to even.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;     // -> 3 (nearest-even would give 2)
  x[2] = -0.5f;    // -> -1
  x[3] = 1.5f;     // -> 2
  x[4] = -2.5f;    // -> -3
  x[5] = 0.49f;    // -> 0
  x[6] = -126.6f;  // -> -127
  const auto q = Quantize(GgmlType::kQ8_0, x);
  EXPECT_EQ(q[0] | q[1] << 8, 0x3C00);  // d = 1.0
  const int8_t want[7] = {127, 3, -1, 2, -3, 0, -127};
  for (int j = 0; j < 7; ++j) EXPECT_EQ(static_cast<int8_t>(q[2 + j]), want[j]) << j;
}

TEST(QuantizeTest, Q8_0ScaleIsMaxOver127) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.01f * (j - 20);  // max |x| = 0.2 at j = 0
  const auto q = Quantize(GgmlType::kQ8_0, x);
  const uint16_t d = static_cast<uint16_t>(q[0] | q[1] << 8);
  EXPECT_EQ(d, F32ToFp16(0.2f / 127));
  EXPECT_EQ(static_cast<int8_t>(q[2]), -127);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 20]), 0);
  EXPECT_EQ(static_cast<int8_t>(q[2 + 30]), 64);  // 0.1/0.2*127 = 63.5 -> 64
}

// --- invariants of the K-quants --------------------------------------------------------------

// Unpacks the 6-bit scale/min pairs with FORMATS.md's get_scale_min_k4 rules, written out here.
void UnpackK4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
  }
}

// For Q4_K/Q5_K: every element's level is clamp(round_half_even((x + dmin*m)/(d*sc)), 0, nmax)
// wherever d*sc != 0, and the sub-block with the largest fitted scale gets code 63.
void CheckKLevels(GgmlType type, const std::vector<float>& x) {
  const int nmax = type == GgmlType::kQ4_K ? 15 : 31;
  const int64_t bytes = RowBytes(type, kQK_K);
  const auto q = Quantize(type, x);
  for (size_t blk = 0; blk * kQK_K < x.size(); ++blk) {
    const uint8_t* p = &q[blk * bytes];
    const float d = Fp16ToF32(static_cast<uint16_t>(p[0] | p[1] << 8));
    const float dmin = Fp16ToF32(static_cast<uint16_t>(p[2] | p[3] << 8));
    const uint8_t* qh = p + 16;
    const uint8_t* qs = type == GgmlType::kQ4_K ? p + 16 : p + 48;
    int max_code = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      UnpackK4(p + 4, j, &sc, &m);
      max_code = std::max(max_code, sc);
      const float dj = d * sc;
      if (dj == 0) continue;
      for (int i = 0; i < 32; ++i) {
        const int e = 32 * j + i;  // element index in the block
        const int c = e / 64, l = e % 32;
        const bool high = (e % 64) >= 32;
        int level = high ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 15;
        if (type == GgmlType::kQ5_K) level += 16 * ((qh[l] >> (2 * c + (high ? 1 : 0))) & 1);
        const float want = std::nearbyint((x[blk * kQK_K + e] + dmin * m) / dj);
        ASSERT_EQ(level, std::clamp(static_cast<int>(want), 0, nmax))
            << "block " << blk << " element " << e;
      }
    }
    EXPECT_EQ(max_code, 63) << "block " << blk;
  }
}

TEST(QuantizeTest, Q4_KLevelsAreNearestForStoredScales) {
  CheckKLevels(GgmlType::kQ4_K, NormalData(256 * 32, 11, 0.02f));
}

TEST(QuantizeTest, Q5_KLevelsAreNearestForStoredScales) {
  CheckKLevels(GgmlType::kQ5_K, NormalData(256 * 32, 12, 0.02f));
}

TEST(QuantizeTest, Q6_KLevelsAreNearestForStoredScales) {
  const auto x = NormalData(256 * 32, 13, 0.02f);
  const auto q = Quantize(GgmlType::kQ6_K, x);
  for (size_t blk = 0; blk * kQK_K < x.size(); ++blk) {
    const uint8_t* p = &q[blk * 210];
    const float d = Fp16ToF32(static_cast<uint16_t>(p[208] | p[209] << 8));
    int min_scale = 0;
    for (int e = 0; e < 256; ++e) {
      const int h = e / 128, k = (e % 128) / 32, l = e % 32;
      const uint8_t* ql = p + 64 * h;
      const int H = p[128 + 32 * h + l];
      const int lo = (k == 0 || k == 2) ? ql[l] : ql[l + 32];
      const int nib = k < 2 ? (lo & 15) : (lo >> 4);
      const int q6 = nib | ((H >> (2 * k)) & 3) << 4;
      const int scale = static_cast<int8_t>(p[192 + e / 16]);
      min_scale = std::min(min_scale, scale);
      const float dg = d * scale;
      if (dg == 0) continue;
      const float want = std::nearbyint(x[blk * kQK_K + e] / dg);
      ASSERT_EQ(q6 - 32, std::clamp(static_cast<int>(want), -32, 31))
          << "block " << blk << " element " << e;
    }
    // The group with the largest |scale| is stored as -128 (iscale = -128/max_scale).
    EXPECT_EQ(min_scale, -128) << "block " << blk;
  }
}

// --- special blocks ---------------------------------------------------------------------------

TEST(QuantizeTest, ZeroBlocksAreAllZeroBytes) {
  const std::vector<float> zeros(512, 0.0f);
  for (GgmlType t : kBlockTypes) {
    const auto q = Quantize(t, zeros);
    EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](uint8_t b) { return b == 0; }))
        << GgmlTypeName(t);
    for (float v : RoundTrip(t, zeros)) ASSERT_EQ(v, 0.0f) << GgmlTypeName(t);
  }
}

TEST(QuantizeTest, ConstantBlocksComeBackWithinFp16Precision) {
  for (GgmlType t : kBlockTypes) {
    // Magnitudes large enough that d (c/4096 for Q6_K) stays a normal fp16; smaller ones get
    // a subnormal d with fewer significant bits.
    for (float c : {0.37f, -0.37f, 5.0f, -3.0f}) {
      const std::vector<float> x(256, c);
      for (float v : RoundTrip(t, x)) {
        // The only error source is the fp16 scale (relative step 2^-11) times the code range.
        ASSERT_NEAR(v, c, std::fabs(c) * 2e-3f) << GgmlTypeName(t) << " c=" << c;
      }
    }
  }
}

TEST(QuantizeTest, OneOutlierIsKeptAndOthersStayBounded) {
  for (GgmlType t : kBlockTypes) {
    auto x = NormalData(256, 21, 0.01f);
    x[77] = 10.0f;
    const auto y = RoundTrip(t, x);
    // The outlier sets the block's (or sub-block's) scale, so it is represented almost exactly:
    // within half a step of its own group, 10/(levels) where Q4_K has the fewest (15 steps).
    EXPECT_NEAR(y[77], 10.0f, 10.0f / 15 / 2 + 0.02f) << GgmlTypeName(t);
    // Other elements lose resolution but may not blow up: at worst they fall to zero or to a
    // neighbouring level of a coarse scale, so each error stays below the outlier's step.
    for (int i = 0; i < 256; ++i) {
      if (i == 77) continue;
      ASSERT_LT(std::fabs(y[i] - x[i]), 10.0f / 15) << GgmlTypeName(t) << " element " << i;
    }
  }
}

TEST(QuantizeTest, OutlierOnlyCoarsensItsOwnGroupInQ8_0) {
  auto x = NormalData(64, 22, 0.01f);
  x[5] = 10.0f;
  const auto y = RoundTrip(GgmlType::kQ8_0, x);
  // The second block of 32 does not see the outlier: its error is that of plain Q8_0.
  for (int i = 32; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 0.04f / 127) << i;
}

// --- round-trip error on random data ----------------------------------------------------------

// llama.cpp's tests/test-quantize-fns checks every type it can quantize on 0.1 + 2cos(i),
// 4096 values, with sqrt(sum of squared errors)/n < 0.002 (its MAX_QUANTIZATION_TOTAL_ERROR).
TEST(QuantizeTest, MeetsLlamaCppTotalErrorThreshold) {
  std::vector<float> x(4096);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f + 2 * std::cos(static_cast<float>(i));
  for (GgmlType t : kBlockTypes) {
    const auto y = RoundTrip(t, x);
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) sum += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    EXPECT_LT(std::sqrt(sum) / x.size(), 0.002) << GgmlTypeName(t);
  }
}

TEST(QuantizeTest, IsDeterministicAndBlockLocal) {
  const auto x = NormalData(1024, 9, 1.0f);
  for (GgmlType t : kBlockTypes) {
    const auto whole = Quantize(t, x);
    EXPECT_EQ(whole, Quantize(t, x));
    // Quantizing the second half alone gives the second half of the bytes.
    const std::vector<float> half(x.begin() + 512, x.end());
    const auto tail = Quantize(t, half);
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), whole.begin() + whole.size() / 2))
        << GgmlTypeName(t);
  }
}

TEST(QuantizeTest, UnalignedDestinationGivesSameBytes) {
  const auto x = NormalData(256, 3, 1.0f);
  for (GgmlType t : kBlockTypes) {
    const auto want = Quantize(t, x);
    std::vector<uint8_t> buf(want.size() + 1);
    ASSERT_TRUE(QuantizeRow(t, x.data(), buf.data() + 1, 256).ok());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), buf.begin() + 1)) << GgmlTypeName(t);
  }
}

TEST(QuantizeTest, FloatTypesConvertPerElement) {
  const std::vector<float> x = {1.0f, -2.5f, 65520.0f, 0x1p-25f};
  std::vector<uint8_t> q(8);
  ASSERT_TRUE(QuantizeRow(GgmlType::kF16, x.data(), q.data(), 4).ok());
  EXPECT_EQ(q, (std::vector<uint8_t>{0x00, 0x3C, 0x00, 0xC1, 0x00, 0x7C, 0x00, 0x00}));
  ASSERT_TRUE(QuantizeRow(GgmlType::kBF16, x.data(), q.data(), 4).ok());
  EXPECT_EQ(q[0] | q[1] << 8, 0x3F80);
  EXPECT_EQ(q[2] | q[3] << 8, 0xC020);
}

TEST(QuantizeTest, RejectsBadArguments) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> q(1024);
  const absl::Status s = QuantizeRow(GgmlType::kQ4_0, x.data(), q.data(), 32);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("q4_0"), std::string::npos) << s;
  EXPECT_NE(QuantizeRow(GgmlType::kQ2_K, x.data(), q.data(), 256).message().find("q2_K"),
            std::string::npos);
  EXPECT_EQ(QuantizeRow(GgmlType::kQ6_K, x.data(), q.data(), 128).code(),
            absl::StatusCode::kInvalidArgument);
  x[100] = std::nanf("");
  const absl::Status nan = QuantizeRow(GgmlType::kQ4_K, x.data(), q.data(), 256);
  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nan.message().find("100"), std::string::npos) << nan;
}

}  // namespace
}  // namespace jllm::quant
