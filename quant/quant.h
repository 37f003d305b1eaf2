// Quant block formats (FORMATS.md §2–3): dequantization for every supported type and the
// reference quantizers from f32. Plain scalar code: this is the ground truth other code is
// checked against, so it follows ggml's arithmetic order where bit-exactness depends on it.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "ir/ggml_type.h"

namespace jllm::quant {

// IEEE binary16 / bfloat16 <-> f32 (round to nearest even; bf16 NaN handling as ggml).
float Fp16ToF32(uint16_t h);
uint16_t F32ToFp16(float f);
float Bf16ToF32(uint16_t h);
uint16_t F32ToBf16(float f);

// Dequantizes `n` elements (a multiple of the block size) from `src` into `dst`.
// Supported: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
absl::Status DequantizeRow(GgmlType type, const void* src, float* dst, int64_t n);

// Quantizes `n` f32 values (a multiple of the block size) into `dst` (RowBytes(type, n) bytes).
// Supported: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K (the *_ref quantizers, no imatrix).
absl::Status QuantizeRow(GgmlType type, const float* src, void* dst, int64_t n);

}  // namespace jllm::quant
