// Dequantization of hand-built blocks. The test packs every block itself, byte by byte, from the
// layout in FORMATS.md §2, and the expected values are worked out by hand (the spot checks) or
// from the FORMATS.md formula written out independently here (the full-block sweeps).
#include <cstdint>
#include <cstring>
#include <vector>

#include "quant/block_layout.h"
#include "quant/quant.h"
#include "gtest/gtest.h"

namespace jllm::quant {
namespace {

constexpr uint16_t kHalf = 0x3800;     // fp16 0.5
constexpr uint16_t kQuarter = 0x3400;  // fp16 0.25

void PutU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xFF);
  p[1] = static_cast<uint8_t>(v >> 8);
}

std::vector<float> Dequant(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n, -12345.0f);
  const absl::Status s = DequantizeRow(type, bytes.data(), out.data(), n);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// --- Q8_0 -----------------------------------------------------------------------------------

TEST(DequantizeTest, Q8_0TwoBlocks) {
  std::vector<uint8_t> b(68, 0);
  PutU16(&b[0], kHalf);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  PutU16(&b[34], 0xC000);  // -2.0
  b[36 + 0] = static_cast<uint8_t>(int8_t{-128});
  b[36 + 31] = 127;
  const auto x = Dequant(GgmlType::kQ8_0, b, 64);
  EXPECT_EQ(x[0], -8.0f);
  EXPECT_EQ(x[16], 0.0f);
  EXPECT_EQ(x[31], 7.5f);
  EXPECT_EQ(x[32], 256.0f);
  EXPECT_EQ(x[33], 0.0f);
  EXPECT_EQ(x[63], -254.0f);
}

// --- Q4_K / Q5_K shared scale packing ---------------------------------------------------------

// Six-bit scales and mins per sub-block, several >= 16 so the high-bit packing matters.
constexpr uint8_t kSc[8] = {1, 2, 17, 33, 63, 40, 5, 48};
constexpr uint8_t kMin[8] = {0, 3, 20, 63, 1, 50, 16, 9};

// Packs 12 scale bytes with FORMATS.md's byte formulas.
void PackScales(uint8_t* s) {
  for (int k = 0; k < 4; ++k) {
    s[k] = static_cast<uint8_t>(kSc[k] | ((kSc[k + 4] >> 4) << 6));
    s[4 + k] = static_cast<uint8_t>(kMin[k] | ((kMin[k + 4] >> 4) << 6));
    s[8 + k] = static_cast<uint8_t>((kSc[k + 4] & 15) | ((kMin[k + 4] & 15) << 4));
  }
}

TEST(DequantizeTest, UnpackScaleMinK4MatchesPacking) {
  uint8_t s[12];
  PackScales(s);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    UnpackScaleMinK4(j, s, &sc, &m);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(m, kMin[j]) << j;
  }
}

TEST(DequantizeTest, Q4_KSpotValues) {
  std::vector<uint8_t> b(144, 0);
  PutU16(&b[0], kHalf);
  PutU16(&b[2], kQuarter);
  PackScales(&b[4]);
  b[16 + 37] = 0xA3;   // qs[37]: c = 1, l = 5; low nibble 3, high nibble 10
  b[16 + 127] = 0xF1;  // qs[127]: c = 3, l = 31
  const auto x = Dequant(GgmlType::kQ4_K, b, 256);
  // element 64*1+5 = 69: low nibble, sub-block 2 (sc 17, m 20): 0.5*17*3 - 0.25*20
  EXPECT_EQ(x[69], 20.5f);
  // element 64*1+32+5 = 101: high nibble, sub-block 3 (sc 33, m 63): 0.5*33*10 - 0.25*63
  EXPECT_EQ(x[101], 149.25f);
  // element 64*3+31 = 223: low nibble 1, sub-block 6 (sc 5, m 16): 2.5 - 4
  EXPECT_EQ(x[223], -1.5f);
  // element 255: high nibble 15, sub-block 7 (sc 48, m 9): 0.5*48*15 - 2.25
  EXPECT_EQ(x[255], 357.75f);
  // zero nibbles give -dmin*m of their sub-block
  EXPECT_EQ(x[0], 0.0f);        // sub-block 0, m 0
  EXPECT_EQ(x[32], -0.75f);     // sub-block 1, m 3
  EXPECT_EQ(x[64 + 6], -5.0f);  // sub-block 2, m 20
  EXPECT_EQ(x[160], -12.5f);    // sub-block 5, m 50
}

TEST(DequantizeTest, Q4_KFullBlockFollowsLayout) {
  std::vector<uint8_t> b(2 * 144, 0);
  for (int blk = 0; blk < 2; ++blk) {
    uint8_t* p = &b[144 * blk];
    PutU16(p, blk ? 0x3C00 : kHalf);  // 1.0 in the second block
    PutU16(p + 2, kQuarter);
    PackScales(p + 4);
    for (int i = 0; i < 128; ++i) p[16 + i] = static_cast<uint8_t>((i * 7 + blk * 3) & 0xFF);
  }
  const auto x = Dequant(GgmlType::kQ4_K, b, 512);
  for (int blk = 0; blk < 2; ++blk) {
    const float d = blk ? 1.0f : 0.5f;
    const uint8_t* qs = &b[144 * blk + 16];
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = qs[32 * c + l] & 15, hi = qs[32 * c + l] >> 4;
        EXPECT_EQ(x[256 * blk + 64 * c + l], d * kSc[2 * c] * lo - 0.25f * kMin[2 * c]);
        EXPECT_EQ(x[256 * blk + 64 * c + 32 + l],
                  d * kSc[2 * c + 1] * hi - 0.25f * kMin[2 * c + 1]);
      }
    }
  }
}

// --- Q5_K -------------------------------------------------------------------------------------

TEST(DequantizeTest, Q5_KSpotValues) {
  std::vector<uint8_t> b(176, 0);
  PutU16(&b[0], kHalf);
  PutU16(&b[2], kQuarter);
  PackScales(&b[4]);
  uint8_t* qh = &b[16];
  uint8_t* qs = &b[48];
  qs[37] = 0xA3;     // c = 1, l = 5
  qh[5] = 0x0C | 1;  // bits 2 and 3 (c = 1, both halves) and bit 0 (c = 0, low half)
  const auto x = Dequant(GgmlType::kQ5_K, b, 256);
  EXPECT_EQ(x[69], 156.5f);    // q = 3 + 16, sub-block 2: 0.5*17*19 - 5
  EXPECT_EQ(x[101], 413.25f);  // q = 10 + 16, sub-block 3: 0.5*33*26 - 15.75
  EXPECT_EQ(x[5], 8.0f);       // q = 0 + 16, sub-block 0: 0.5*1*16 - 0
  EXPECT_EQ(x[37], -0.75f);    // bit 1 of qh[5] is clear: q = 0, sub-block 1
  EXPECT_EQ(x[133], -0.25f);   // element 128+5: bit 4 of qh[5] clear, sub-block 4 (m 1)
}

TEST(DequantizeTest, Q5_KFullBlockFollowsLayout) {
  std::vector<uint8_t> b(176, 0);
  PutU16(&b[0], kHalf);
  PutU16(&b[2], kQuarter);
  PackScales(&b[4]);
  for (int i = 0; i < 32; ++i) b[16 + i] = static_cast<uint8_t>(i * 37 + 11);
  for (int i = 0; i < 128; ++i) b[48 + i] = static_cast<uint8_t>(i * 13 + 5);
  const auto x = Dequant(GgmlType::kQ5_K, b, 256);
  const uint8_t* qh = &b[16];
  const uint8_t* qs = &b[48];
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int lo = (qs[32 * c + l] & 15) + 16 * ((qh[l] >> (2 * c)) & 1);
      const int hi = (qs[32 * c + l] >> 4) + 16 * ((qh[l] >> (2 * c + 1)) & 1);
      EXPECT_EQ(x[64 * c + l], 0.5f * kSc[2 * c] * lo - 0.25f * kMin[2 * c]);
      EXPECT_EQ(x[64 * c + 32 + l], 0.5f * kSc[2 * c + 1] * hi - 0.25f * kMin[2 * c + 1]);
    }
  }
}

// --- Q6_K -------------------------------------------------------------------------------------

TEST(DequantizeTest, Q6_KSpotValues) {
  std::vector<uint8_t> b(210, 0);
  uint8_t* ql = &b[0];
  uint8_t* qh = &b[128];
  for (int g = 0; g < 16; ++g) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(g - 5));
  PutU16(&b[208], kHalf);
  ql[64 + 3] = 0x92;  // h = 1, l = 3: L[3] low 2, high 9
  qh[32 + 3] = 0x21;  // H bits 0-1 = 1, bits 4-5 = 2
  ql[63] = 0xF7;      // h = 0, l = 31: L[l+32] low 7, high 15
  qh[31] = 0xC8;      // bits 2-3 = 2, bits 6-7 = 3
  const auto x = Dequant(GgmlType::kQ6_K, b, 256);
  EXPECT_EQ(x[195], 31.5f);    // 128+64+3: q = 9 | 2<<4 = 41, scales[12] = 7: 0.5*7*9
  EXPECT_EQ(x[131], -21.0f);   // 128+3: q = 2 | 1<<4 = 18, scales[8] = 3: 0.5*3*(-14)
  EXPECT_EQ(x[63], -7.0f);     // 32+31: q = 7 | 2<<4 = 39, scales[3] = -2: 0.5*(-2)*7
  EXPECT_EQ(x[127], 31.0f);    // 96+31: q = 15 | 3<<4 = 63, scales[7] = 2: 0.5*2*31
  EXPECT_EQ(x[31], 64.0f);     // 31: q = 0, scales[1] = -4: 0.5*(-4)*(-32)
  EXPECT_EQ(x[200], -112.0f);  // 128+64+8: q = 0, scales[12] = 7: 0.5*7*(-32)
}

TEST(DequantizeTest, Q6_KFullBlockFollowsTable) {
  std::vector<uint8_t> b(210, 0);
  for (int i = 0; i < 128; ++i) b[i] = static_cast<uint8_t>(i * 29 + 3);
  for (int i = 0; i < 64; ++i) b[128 + i] = static_cast<uint8_t>(i * 53 + 17);
  for (int g = 0; g < 16; ++g) b[192 + g] = static_cast<uint8_t>(static_cast<int8_t>(7 * g - 60));
  PutU16(&b[208], kQuarter);
  const auto x = Dequant(GgmlType::kQ6_K, b, 256);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* L = &b[64 * h];
    for (int l = 0; l < 32; ++l) {
      const int H = b[128 + 32 * h + l];
      const int q[4] = {(L[l] & 15) | (H & 3) << 4, (L[l + 32] & 15) | (H >> 2 & 3) << 4,
                        (L[l] >> 4) | (H >> 4 & 3) << 4, (L[l + 32] >> 4) | (H >> 6 & 3) << 4};
      for (int k = 0; k < 4; ++k) {
        const int e = 128 * h + 32 * k + l;
        const int scale = static_cast<int8_t>(b[192 + e / 16]);
        EXPECT_EQ(x[e], 0.25f * scale * (q[k] - 32)) << e;
      }
    }
  }
}

// --- plain float types ------------------------------------------------------------------------

TEST(DequantizeTest, FloatTypes) {
  const float f[3] = {1.5f, -0.0f, 3e38f};
  std::vector<uint8_t> b32(12);
  std::memcpy(b32.data(), f, 12);
  EXPECT_EQ(Dequant(GgmlType::kF32, b32, 3), std::vector<float>(f, f + 3));

  std::vector<uint8_t> b16(6);
  PutU16(&b16[0], 0x3E00);  // 1.5
  PutU16(&b16[2], 0xC500);  // -5
  PutU16(&b16[4], 0x0200);  // 2^-15 (subnormal)
  EXPECT_EQ(Dequant(GgmlType::kF16, b16, 3), (std::vector<float>{1.5f, -5.0f, 0x1p-15f}));

  std::vector<uint8_t> bb(4);
  PutU16(&bb[0], 0x3FC0);  // 1.5
  PutU16(&bb[2], 0xC2C8);  // -100
  EXPECT_EQ(Dequant(GgmlType::kBF16, bb, 2), (std::vector<float>{1.5f, -100.0f}));
}

TEST(DequantizeTest, UnalignedSourceGivesSameValues) {
  std::vector<uint8_t> b(1 + 210, 0);
  for (size_t i = 1; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 11);
  PutU16(&b[1 + 208], kHalf);
  std::vector<float> aligned(256), unaligned(256);
  std::vector<uint8_t> copy(b.begin() + 1, b.end());
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ6_K, copy.data(), aligned.data(), 256).ok());
  ASSERT_TRUE(DequantizeRow(GgmlType::kQ6_K, b.data() + 1, unaligned.data(), 256).ok());
  EXPECT_EQ(aligned, unaligned);
}

// --- sizes and errors -------------------------------------------------------------------------

TEST(DequantizeTest, BlockSizes) {
  EXPECT_EQ(RowBytes(GgmlType::kQ8_0, 32), 34);
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 256), 144);
  EXPECT_EQ(RowBytes(GgmlType::kQ5_K, 256), 176);
  EXPECT_EQ(RowBytes(GgmlType::kQ6_K, 256), 210);
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 2560), 1440);
  EXPECT_EQ(sizeof(BlockQ8_0), 34u);
  EXPECT_EQ(sizeof(BlockQ4_K), 144u);
  EXPECT_EQ(sizeof(BlockQ5_K), 176u);
  EXPECT_EQ(sizeof(BlockQ6_K), 210u);
}

TEST(DequantizeTest, RejectsUnsupportedTypesByName) {
  std::vector<uint8_t> b(1024, 0);
  std::vector<float> out(256);
  const absl::Status s = DequantizeRow(GgmlType::kQ4_0, b.data(), out.data(), 32);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("q4_0"), std::string::npos) << s;
  const absl::Status s2 = DequantizeRow(GgmlType::kIQ4_XS, b.data(), out.data(), 256);
  EXPECT_NE(s2.message().find("iq4_xs"), std::string::npos) << s2;
  const absl::Status s3 = DequantizeRow(static_cast<GgmlType>(4), b.data(), out.data(), 32);
  EXPECT_EQ(s3.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s3.message().find("4"), std::string::npos) << s3;
}

TEST(DequantizeTest, RejectsPartialBlocks) {
  std::vector<uint8_t> b(1024, 0);
  std::vector<float> out(512);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ4_K, b.data(), out.data(), 100).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DequantizeRow(GgmlType::kQ8_0, b.data(), out.data(), 33).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DequantizeRow(GgmlType::kF32, b.data(), out.data(), -1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(DequantizeRow(GgmlType::kQ4_K, b.data(), out.data(), 0).ok());
}

}  // namespace
}  // namespace jllm::quant
