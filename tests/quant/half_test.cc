// fp16 / bf16 conversions: hand-picked IEEE cases (subnormals, overflow, NaN, ties), exhaustive
// fp16 round trips, and, where the compiler has _Float16, its soft-float conversion as an oracle.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "quant/quant.h"
#include "gtest/gtest.h"

namespace jllm::quant {
namespace {

float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Fp16Test, EncodesNormalValues) {
  EXPECT_EQ(F32ToFp16(1.0f), 0x3C00);
  EXPECT_EQ(F32ToFp16(-2.0f), 0xC000);
  EXPECT_EQ(F32ToFp16(0.5f), 0x3800);
  EXPECT_EQ(F32ToFp16(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(F32ToFp16(0x1p-14f), 0x0400);  // smallest normal
  EXPECT_EQ(F32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(F32ToFp16(-0.0f), 0x8000);
}

TEST(Fp16Test, RoundsTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 (0x3C00, even) and 1 + 2^-10 (0x3C01).
  EXPECT_EQ(F32ToFp16(1.0f + 0x1p-11f), 0x3C00);
  // 1 + 3*2^-11 lies halfway between 0x3C01 (odd) and 0x3C02 (even).
  EXPECT_EQ(F32ToFp16(1.0f + 3 * 0x1p-11f), 0x3C02);
  // Just above the halfway point rounds up.
  EXPECT_EQ(F32ToFp16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
  EXPECT_EQ(F32ToFp16(-(1.0f + 0x1p-11f + 0x1p-20f)), 0xBC01);
  // Rounding up carries into the exponent: 2 - 2^-12 -> 2.0.
  EXPECT_EQ(F32ToFp16(2.0f - 0x1p-12f), 0x4000);
}

TEST(Fp16Test, OverflowsToInfinity) {
  EXPECT_EQ(F32ToFp16(65519.0f), 0x7BFF);  // below the midpoint 65520
  EXPECT_EQ(F32ToFp16(65520.0f), 0x7C00);  // midpoint: 0x7BFF is odd, so up to inf
  EXPECT_EQ(F32ToFp16(1e6f), 0x7C00);
  EXPECT_EQ(F32ToFp16(-1e30f), 0xFC00);
  EXPECT_EQ(F32ToFp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(F32ToFp16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Fp16Test, EncodesSubnormals) {
  EXPECT_EQ(F32ToFp16(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(F32ToFp16(0x1p-25f), 0x0000);  // half of it: tie to even zero
  EXPECT_EQ(F32ToFp16(-0x1p-25f), 0x8000);
  EXPECT_EQ(F32ToFp16(FromBits(0x33000001)), 0x0001);  // just above 2^-25
  EXPECT_EQ(F32ToFp16(3 * 0x1p-25f), 0x0002);          // 1.5 units: tie to even 2
  EXPECT_EQ(F32ToFp16(5 * 0x1p-25f), 0x0002);          // 2.5 units: tie to even 2
  EXPECT_EQ(F32ToFp16(1023 * 0x1p-24f), 0x03FF);       // largest subnormal
  EXPECT_EQ(F32ToFp16(1023.5f * 0x1p-24f), 0x0400);    // tie: rounds into the smallest normal
  EXPECT_EQ(F32ToFp16(1e-10f), 0x0000);
  EXPECT_EQ(F32ToFp16(FromBits(0x00000001)), 0x0000);  // f32 subnormal
}

TEST(Fp16Test, EncodesNaNAsNaN) {
  const uint16_t h = F32ToFp16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  const uint16_t s = F32ToFp16(FromBits(0x7F800001));  // signalling NaN with a low payload
  EXPECT_EQ(s & 0x7C00, 0x7C00);
  EXPECT_NE(s & 0x03FF, 0);
}

TEST(Fp16Test, Decodes) {
  EXPECT_EQ(Fp16ToF32(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToF32(0xC000), -2.0f);
  EXPECT_EQ(Fp16ToF32(0x7BFF), 65504.0f);
  EXPECT_EQ(Fp16ToF32(0x0001), 0x1p-24f);
  EXPECT_EQ(Fp16ToF32(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(Fp16ToF32(0x8001), -0x1p-24f);
  EXPECT_EQ(Fp16ToF32(0x3555), 0x1.554p-2f);
  EXPECT_TRUE(std::isinf(Fp16ToF32(0x7C00)) && Fp16ToF32(0x7C00) > 0);
  EXPECT_TRUE(std::isinf(Fp16ToF32(0xFC00)) && Fp16ToF32(0xFC00) < 0);
  EXPECT_TRUE(std::isnan(Fp16ToF32(0x7E00)));
  EXPECT_TRUE(std::isnan(Fp16ToF32(0x7C01)));
  EXPECT_TRUE(std::signbit(Fp16ToF32(0x8000)));
}

TEST(Fp16Test, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (nan) continue;
    ASSERT_EQ(F32ToFp16(Fp16ToF32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

#if defined(__FLT16_MAX__)
// The compiler's float -> _Float16 conversion (libgcc soft-float, round to nearest even) is an
// implementation we did not write.
TEST(Fp16Test, MatchesCompilerFloat16OnRandomBitPatterns) {
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = rng();
    if (i % 2) bits = (bits & 0x80FFFFFF) | ((100 + bits % 45) << 23);  // focus on half's range
    const float f = FromBits(bits);
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_EQ(F32ToFp16(f), want) << std::hex << bits;
    ASSERT_EQ(std::bit_cast<uint32_t>(Fp16ToF32(want)),
              std::bit_cast<uint32_t>(static_cast<float>(h)));
  }
}
#endif

TEST(Bf16Test, EncodesWithRoundToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(F32ToBf16(-2.0f), 0xC000);
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808000)), 0x3F80);  // tie, 0x3F80 even
  EXPECT_EQ(F32ToBf16(FromBits(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd -> up
  EXPECT_EQ(F32ToBf16(FromBits(0x3F808001)), 0x3F81);  // above the tie
  EXPECT_EQ(F32ToBf16(FromBits(0x3F807FFF)), 0x3F80);  // below the tie
  EXPECT_EQ(F32ToBf16(FromBits(0x7F7FFFFF)), 0x7F80);  // FLT_MAX rounds up to inf
  EXPECT_EQ(F32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(F32ToBf16(FromBits(0x00018000)), 0x0002);  // f32 subnormal, tie to even
  EXPECT_EQ(F32ToBf16(FromBits(0x00008000)), 0x0000);
  EXPECT_EQ(F32ToBf16(-0.0f), 0x8000);
}

TEST(Bf16Test, KeepsNaNsNaN) {
  // ggml sets bit 6 so that a NaN whose payload lives in the low 16 bits stays a NaN.
  EXPECT_EQ(F32ToBf16(FromBits(0x7F800001)), 0x7FC0);
  EXPECT_EQ(F32ToBf16(FromBits(0xFF800001)), 0xFFC0);
  EXPECT_EQ(F32ToBf16(FromBits(0x7FC00000)), 0x7FC0);
  EXPECT_EQ(F32ToBf16(FromBits(0x7F812345)), 0x7F81 | 64);
}

TEST(Bf16Test, Decodes) {
  EXPECT_EQ(Bf16ToF32(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToF32(0x4049), FromBits(0x40490000));
  EXPECT_EQ(Bf16ToF32(0x0001), FromBits(0x00010000));
  EXPECT_TRUE(std::isinf(Bf16ToF32(0xFF80)));
  EXPECT_TRUE(std::isnan(Bf16ToF32(0x7FC0)));
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    if ((h & 0x7F80) == 0x7F80 && (h & 0x7F) != 0) continue;  // NaNs get bit 6 set
    ASSERT_EQ(F32ToBf16(Bf16ToF32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace jllm::quant
