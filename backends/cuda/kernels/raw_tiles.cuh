// Readers of a weight row's raw quant bytes for 256 columns (one K-quant super-block, eight
// q8_0 blocks) as the prefill GEMM (gemm_f16.cu) stages them in shared memory: the device
// layout's block bodies (backends/cuda/device_layout.h) copied as they are, followed, for the
// types with a scale tail, by the 16-byte chunk of the tail that holds their d values
// (launch_geometry.h: GemmRawChunks). The arithmetic is quant/dequantize_blocks.cc's, as in
// weight_types.cuh's Dequant8, so a value equals cpu_ref's dequantization before the GEMM
// rounds it to f16.
//
//  - RawChunk<T, K>(row, sb, c): where chunk c of super-block sb of a row comes from.
//  - RawTile<T>::Scale16(raw, e, sb): the scales shared by elements e..e+15 (e a multiple of
//    16, counted inside the super-block sb).
//  - RawTile<T>::Pair(raw, e, s): elements e and e + 1 (e even) as f32.
#pragma once

#include "jllm_common.cuh"
#include "backends/cuda/device_layout.h"
#include "launch_geometry.h"

namespace jllm_kernels {

namespace lay = jllm::cuda::layout;
namespace geo = jllm::cuda::geometry;
namespace q = jllm::quant;

template <int kType, int kK>
__device__ __forceinline__ const jllm_u8* RawChunk(const jllm_u8* row, int sb, int c) {
  constexpr int kBody = geo::GemmRawBodyBytes(kType);
  if constexpr (lay::HasScaleTail(kType)) {
    // The d values of the super-block's blocks: 2 bytes each.
    constexpr int kDBytes = 2 * geo::GemmRawBlocks(kType);
    if (c == geo::GemmRawBodyChunks(kType)) return row + lay::TailOffset(kType, kK) + (kDBytes * sb) / 16 * 16;
  }
  return row + sb * kBody + 16 * c;
}

// The raw tile's d values sit in a chunk of 8; the one of block b of super-block sb.
template <int kType>
__device__ __forceinline__ float RawTailD(const jllm_u8* raw, int sb, int b) {
  constexpr int kPerSb = geo::GemmRawBlocks(kType);
  return jllm_half_to_float(*reinterpret_cast<const jllm_u16*>(
      raw + geo::GemmRawBodyBytes(kType) + 2 * ((kPerSb * sb + b) & 7)));
}

template <int kType>
struct RawTile;

// q4_K and q5_K: d, dmin, 12 bytes of 6-bit scales and mins, (q5_K: qh,) qs.
template <class Block>
struct RawKQuant45Scale {
  struct Scale {
    float d1, m1;
  };
  __device__ static Scale Scale16(const jllm_u8* raw, int e, int /*sb*/) {
    const Block* b = reinterpret_cast<const Block*>(raw);
    jllm_u8 sc, m;
    q::UnpackScaleMinK4(e >> 5, b->scales, &sc, &m);
    const float d = jllm_half_to_float(b->d), dmin = jllm_half_to_float(b->dmin);
    return {d * sc, dmin * m};
  }
};

template <>
struct RawTile<lay::kQ4_K> : RawKQuant45Scale<q::BlockQ4_K> {
  __device__ static float2 Pair(const jllm_u8* raw, int e, Scale s) {
    const q::BlockQ4_K* b = reinterpret_cast<const q::BlockQ4_K*>(raw);
    const int c = e >> 6, hi = (e >> 5) & 1;
    const jllm_u32 two = *reinterpret_cast<const jllm_u16*>(b->qs + 32 * c + (e & 31)) >> (4 * hi);
    return make_float2(s.d1 * static_cast<int>(two & 0xF) - s.m1, s.d1 * static_cast<int>((two >> 8) & 0xF) - s.m1);
  }
};

template <>
struct RawTile<lay::kQ5_K> : RawKQuant45Scale<q::BlockQ5_K> {
  __device__ static float2 Pair(const jllm_u8* raw, int e, Scale s) {
    const q::BlockQ5_K* b = reinterpret_cast<const q::BlockQ5_K*>(raw);
    const int c = e >> 6, hi = (e >> 5) & 1, l = e & 31;
    const jllm_u32 two = *reinterpret_cast<const jllm_u16*>(b->qs + 32 * c + l) >> (4 * hi);
    const jllm_u32 h = *reinterpret_cast<const jllm_u16*>(b->qh + l) >> (2 * c + hi);
    const int q0 = static_cast<int>((two & 0xF) + ((h & 1) << 4)), q1 = static_cast<int>(((two >> 8) & 0xF) + (((h >> 8) & 1) << 4));
    return make_float2(s.d1 * q0 - s.m1, s.d1 * q1 - s.m1);
  }
};

// q6_K: body ql, qh, int8 scales per 16; d in the tail chunk.
template <>
struct RawTile<lay::kQ6_K> {
  struct Scale {
    float dsc;
  };
  __device__ static Scale Scale16(const jllm_u8* raw, int e, int sb) {
    const jllm_i8 sc = reinterpret_cast<const jllm_i8*>(raw + q::kQ6KScalesOffset)[e >> 4];
    return {RawTailD<lay::kQ6_K>(raw, sb, 0) * sc};
  }
  __device__ static float2 Pair(const jllm_u8* raw, int e, Scale s) {
    const int hh = e >> 7, quad = (e >> 5) & 3, l = e & 31;
    const jllm_u32 ql = *reinterpret_cast<const jllm_u16*>(raw + 64 * hh + 32 * (quad & 1) + l) >> (4 * (quad >> 1));
    const jllm_u32 qh = *reinterpret_cast<const jllm_u16*>(raw + q::kQ6KQhOffset + 32 * hh + l) >> (2 * quad);
    const int q0 = static_cast<int>((ql & 0xF) | ((qh & 3) << 4)) - 32;
    const int q1 = static_cast<int>(((ql >> 8) & 0xF) | (((qh >> 8) & 3) << 4)) - 32;
    return make_float2(s.dsc * q0, s.dsc * q1);
  }
};

// q8_0: eight bodies of 32 int8, their d values in the tail chunk.
template <>
struct RawTile<lay::kQ8_0> {
  struct Scale {
    float d;
  };
  __device__ static Scale Scale16(const jllm_u8* raw, int e, int sb) { return {RawTailD<lay::kQ8_0>(raw, sb, e >> 5)}; }
  __device__ static float2 Pair(const jllm_u8* raw, int e, Scale s) {
    const jllm_i8* qs = reinterpret_cast<const jllm_i8*>(raw) + e;
    return make_float2(qs[0] * s.d, qs[1] * s.d);
  }
};

}  // namespace jllm_kernels
