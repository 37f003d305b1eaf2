// Byte layouts of the quant blocks jllm supports (FORMATS.md §2): the one place their sizes and
// field offsets are written. Host C++ (the quantizers, cpu_ref, the CUDA backend's weight upload)
// and the NVRTC kernels include this same header, so no block size, offset or group size is
// restated anywhere (as ggml-common.h serves C, C++ and CUDA alike). It therefore includes only
// ir/fixed_width.h and, under NVRTC, no standard header.
//
// Every field has natural alignment, so the structs carry no padding; the static_asserts pin
// sizes and offsets to the ggml layout. fp16 values are kept as raw IEEE binary16 bits.
#pragma once

#include "ir/fixed_width.h"

#if !defined(__CUDACC_RTC__)
#include <cstddef>
#endif

namespace jllm::quant {

inline constexpr int kQK8_0 = 32;        // elements of a Q8_0 block
inline constexpr int kQK_K = 256;        // elements of a K-quant super-block
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales and mins of Q4_K / Q5_K
inline constexpr int kQ6KGroup = 16;     // elements sharing one int8 scale in Q6_K
inline constexpr int kKSubBlock = 32;    // elements sharing one 6-bit scale/min in Q4_K / Q5_K

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
  int8_t scales[kQK_K / kQ6KGroup];
  uint16_t d;  // fp16
};

// Field offsets the kernels address directly, from the sizes of the fields before them (valid in
// every compiler; NVRTC has no offsetof).
inline constexpr int kQ4KQsOffset = sizeof(BlockQ4_K::d) + sizeof(BlockQ4_K::dmin) + sizeof(BlockQ4_K::scales);
inline constexpr int kQ5KQhOffset = sizeof(BlockQ5_K::d) + sizeof(BlockQ5_K::dmin) + sizeof(BlockQ5_K::scales);
inline constexpr int kQ5KQsOffset = kQ5KQhOffset + sizeof(BlockQ5_K::qh);
inline constexpr int kQ6KQhOffset = sizeof(BlockQ6_K::ql);
inline constexpr int kQ6KScalesOffset = kQ6KQhOffset + sizeof(BlockQ6_K::qh);
// The part of a Q6_K block before d (ql, qh, scales): 208 bytes, a multiple of 16. The CUDA
// backend's device layout stores these bodies back to back and the d values after them, so
// every body starts 16-byte aligned (backends/cuda/device_layout.h).
inline constexpr int kQ6KBodyBytes = kQ6KScalesOffset + sizeof(BlockQ6_K::scales);

static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 layout");
static_assert(sizeof(BlockQ4_K) == 144 && kQ4KQsOffset == 16, "Q4_K layout");
static_assert(sizeof(BlockQ5_K) == 176 && kQ5KQhOffset == 16 && kQ5KQsOffset == 48, "Q5_K layout");
static_assert(sizeof(BlockQ6_K) == 210 && kQ6KQhOffset == 128 && kQ6KScalesOffset == 192 &&
                  kQ6KBodyBytes == 208,
              "Q6_K layout");
static_assert(kQ6KBodyBytes % 16 == 0, "Q6_K body must be 16-byte aligned");
#if !defined(__CUDACC_RTC__)
// The struct layout really is the one the constants describe (no padding anywhere).
static_assert(offsetof(BlockQ8_0, qs) == 2 && offsetof(BlockQ4_K, scales) == 4 &&
              offsetof(BlockQ4_K, qs) == kQ4KQsOffset && offsetof(BlockQ5_K, qh) == kQ5KQhOffset &&
              offsetof(BlockQ5_K, qs) == kQ5KQsOffset && offsetof(BlockQ6_K, qh) == kQ6KQhOffset &&
              offsetof(BlockQ6_K, scales) == kQ6KScalesOffset && offsetof(BlockQ6_K, d) == kQ6KBodyBytes);
#endif

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block
// (ggml's get_scale_min_k4). NVRTC compiles it as a device function (the kernels are compiled
// with --device-as-default-execution-space).
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
