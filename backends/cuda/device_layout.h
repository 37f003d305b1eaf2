// How the CUDA backend lays a weight matrix out in device memory: the one place the host (which
// repacks rows while uploading them, backends/cuda/lowering/weight_repack.h) and the kernels
// (which read them) take the layout from. Compiled by host C++ and by NVRTC alike, so it
// includes only quant/block_layout.h and no standard header.
//
// A matrix is `rows` rows of K elements; each row starts 16-byte aligned (rows are padded to a
// multiple of 16 bytes), so a kernel can read any row with 16-byte loads. Inside a row the GGUF
// blocks are kept as they are, except for the two block types whose size is not a multiple of
// 16 bytes, whose fp16 scale d moves behind the row's block bodies:
//   f32, f16, bf16  the elements, then padding
//   q4_K, q5_K      the 144- / 176-byte blocks unchanged
//   q6_K            nb bodies of 208 bytes (ql, qh, scales), then nb fp16 d values, padding
//   q8_0            nb bodies of 32 int8 (qs), then nb fp16 d values, padding
// (nb = blocks per row). Vectors (1-D weights: norm gammas) are widened to f32.
#pragma once

#include "quant/block_layout.h"

namespace jllm::cuda::layout {

// ggml type ids (ir/ggml_type.h's GgmlType values; host code static_asserts they agree).
inline constexpr int kF32 = 0;
inline constexpr int kF16 = 1;
inline constexpr int kQ8_0 = 8;
inline constexpr int kQ4_K = 12;
inline constexpr int kQ5_K = 13;
inline constexpr int kQ6_K = 14;
inline constexpr int kBF16 = 30;

inline constexpr long long kRowAlign = 16;

constexpr bool IsSupported(int type) {
  return type == kF32 || type == kF16 || type == kBF16 || type == kQ8_0 || type == kQ4_K ||
         type == kQ5_K || type == kQ6_K;
}

// Elements per block and bytes per block body (the part read with 16-byte loads).
constexpr int BlockElems(int type) {
  return type == kQ8_0 ? quant::kQK8_0 : (type == kQ4_K || type == kQ5_K || type == kQ6_K) ? quant::kQK_K : 1;
}
constexpr int BodyBytes(int type) {
  return type == kF32 ? 4
         : (type == kF16 || type == kBF16) ? 2
         : type == kQ8_0 ? quant::kQK8_0
         : type == kQ4_K ? static_cast<int>(sizeof(quant::BlockQ4_K))
         : type == kQ5_K ? static_cast<int>(sizeof(quant::BlockQ5_K))
         : type == kQ6_K ? quant::kQ6KBodyBytes
                         : 0;
}
// Types whose fp16 block scale d lives behind the bodies.
constexpr bool HasScaleTail(int type) { return type == kQ8_0 || type == kQ6_K; }

constexpr long long RoundUp(long long v, long long a) { return (v + a - 1) / a * a; }

// Offset of the d values inside a row of k elements (types with a scale tail).
constexpr long long TailOffset(int type, long long k) {
  return k / BlockElems(type) * BodyBytes(type);
}
// Bytes between consecutive rows of k elements.
constexpr long long RowStride(int type, long long k) {
  return RoundUp(TailOffset(type, k) + (HasScaleTail(type) ? k / BlockElems(type) * 2 : 0),
                 kRowAlign);
}

}  // namespace jllm::cuda::layout
