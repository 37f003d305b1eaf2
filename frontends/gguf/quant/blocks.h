// Byte layouts of the quant blocks jllm supports (FORMATS.md §2), as plain structs that other
// code (cpu_ref, the CUDA helpers' CPU references, tests) can overlay on GGUF tensor bytes.
// Every field has natural alignment, so the structs carry no padding; the static_asserts below
// pin sizes and offsets to the ggml layout. fp16 values are kept as raw IEEE binary16 bits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jllm::quant {

inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K

// Q8_0: x_j = d * qs_j.
struct BlockQ8_0 {
  uint16_t d;  // fp16
  int8_t qs[kQK8_0];
};

// Q4_K: 8 sub-blocks of 32; x = d*sc_j*q - dmin*m_j, q a 4-bit nibble.
struct BlockQ4_K {
  uint16_t d;     // fp16, scale of the 6-bit sub-block scales
  uint16_t dmin;  // fp16, scale of the 6-bit sub-block mins
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};

// Q5_K: Q4_K plus one high bit per element in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// Q6_K: 16 groups of 16 with int8 scales; x = d*scales[e/16]*(q - 32), q 6 bits.
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];  // low 4 bits
  uint8_t qh[kQK_K / 4];  // high 2 bits
  int8_t scales[kQK_K / 16];
  uint16_t d;  // fp16
};

static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, scales) == 4 &&
              offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, qh) == 16 &&
              offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, qh) == 128 &&
              offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208);

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block
// (ggml's get_scale_min_k4).
inline void UnpackScaleMinK4(int j, const uint8_t* s, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

}  // namespace jllm::quant
