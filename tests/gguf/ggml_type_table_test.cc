// ir/ggml_type's block table against the block structs of ggml/src/ggml-common.h, summed field by
// field here (QK_K = 256), and the id list of ggml.h (retired ids unknown).
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "ir/ggml_type.h"

namespace jllm {
namespace {

struct Row {
  uint32_t id;
  const char* name;
  int64_t block;
  int64_t bytes;
};

constexpr int64_t K = 256, half = 2;

// Field sums of each block struct; comments name the fields.
const Row kRows[] = {
    {0, "f32", 1, 4},
    {1, "f16", 1, 2},
    {2, "q4_0", 32, half + 32 / 2},                  // d, qs
    {3, "q4_1", 32, 2 * half + 32 / 2},              // d, m, qs
    {6, "q5_0", 32, half + 4 + 32 / 2},              // d, qh[4], qs
    {7, "q5_1", 32, 2 * half + 4 + 32 / 2},          // d, m, qh[4], qs
    {8, "q8_0", 32, half + 32},                      // d, qs
    {9, "q8_1", 32, 2 * half + 32},                  // d, s, qs
    {10, "q2_K", K, K / 16 + K / 4 + 2 * half},      // scales, qs, d, dmin
    {11, "q3_K", K, K / 8 + K / 4 + 12 + half},      // hmask, qs, scales, d
    {12, "q4_K", K, 2 * half + 12 + K / 2},          // d, dmin, scales, qs
    {13, "q5_K", K, 2 * half + 12 + K / 8 + K / 2},  // d, dmin, scales, qh, qs
    {14, "q6_K", K, K / 2 + K / 4 + K / 16 + half},  // ql, qh, scales, d
    {15, "q8_K", K, 4 + K + 2 * (K / 16)},           // f32 d, qs, int16 bsums
    {16, "iq2_xxs", K, half + 2 * (K / 8)},          // d, u16 qs
    {17, "iq2_xs", K, half + 2 * (K / 8) + K / 32},  // d, u16 qs, scales
    {18, "iq3_xxs", K, half + 3 * (K / 8)},          // d, qs
    {19, "iq1_s", K, half + K / 8 + 2 * (K / 32)},   // d, qs, u16 qh
    {20, "iq4_nl", 32, half + 32 / 2},               // d, qs
    {21, "iq3_s", K, half + K / 4 + K / 32 + K / 8 + K / 64},  // d, qs, qh, signs, scales
    {22, "iq2_s", K, half + K / 4 + K / 32 + K / 32},          // d, qs, qh, scales
    {23, "iq4_xs", K, half + 2 + K / 64 + K / 2},              // d, scales_h, scales_l, qs
    {24, "i8", 1, 1},
    {25, "i16", 1, 2},
    {26, "i32", 1, 4},
    {27, "i64", 1, 8},
    {28, "f64", 1, 8},
    {29, "iq1_m", K, K / 8 + K / 16 + K / 32},        // qs, qh, scales
    {30, "bf16", 1, 2},
    {34, "tq1_0", K, (K - 4 * K / 64) / 5 + K / 64 + half},  // qs, qh, d
    {35, "tq2_0", K, K / 4 + half},                          // qs, d
    {39, "mxfp4", 32, 1 + 32 / 2},                           // e8m0 e, qs
    {40, "nvfp4", 64, 64 / 16 + 64 / 2},                     // ue4m3 d[4], qs
    {41, "q1_0", 128, half + 128 / 8},                       // d, qs
    {42, "q2_0", 64, half + 64 / 4},                         // d, qs
};

TEST(GgmlTypeTable, MatchesGgmlBlockStructs) {
  for (const Row& r : kRows) {
    SCOPED_TRACE(r.name);
    auto t = LookupGgmlType(r.id);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(std::string(t->name), r.name);
    EXPECT_EQ(t->block_size, r.block);
    EXPECT_EQ(t->type_size, r.bytes);
    EXPECT_EQ(static_cast<uint32_t>(t->type), r.id);
  }
}

TEST(GgmlTypeTable, RetiredAndUnknownIdsAreAbsent) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 44u, 0xFFFFFFFFu}) {
    EXPECT_FALSE(LookupGgmlType(id).has_value()) << id;
  }
}

TEST(GgmlTypeTable, RowBytes) {
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 2560), 10 * 144);
  EXPECT_EQ(RowBytes(GgmlType::kQ8_0, 64), 68);
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 100), -1);
  EXPECT_EQ(RowBytes(GgmlType::kF32, -1), -1);
}

}  // namespace
}  // namespace jllm
