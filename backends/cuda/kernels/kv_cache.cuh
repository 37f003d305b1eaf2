// The device KV cache of one layer: K and V each [Hkv][max_ctx][D] of the element type the
// graph chose (ir KvDType: 0 f16, 1 int8, 2 f32); int8 rows carry one fp16 scale each, in
// [Hkv][max_ctx] arrays beside them. Writes round as cpu_ref's KvCache does: f16 to nearest
// even; int8 with d = max|x| / 127, q = round(x / d) (half away from zero), a non-finite row as
// q = 0 with a NaN scale.
#pragma once

#include "jllm_common.cuh"

namespace jllm_kernels {

inline constexpr int kKvF16 = 0, kKvInt8 = 1, kKvF32 = 2;

template <int kKv>
struct KvElem;
template <>
struct KvElem<kKvF16> { typedef jllm_u16 type; };
template <>
struct KvElem<kKvInt8> { typedef jllm_i8 type; };
template <>
struct KvElem<kKvF32> { typedef float type; };

// Stores one head row (D values, lane-strided: lane holds x[lane + 32 i]) at `row` (and its
// scale at `scale`, int8 only). Called by all 32 lanes of a warp.
template <int kKv, int kD>
__device__ __forceinline__ void KvStoreRow(const float (&x)[kD / 32], void* row_ptr, jllm_u16* scale) {
  const int lane = threadIdx.x & 31;
  if constexpr (kKv == kKvF16) {
    jllm_u16* row = static_cast<jllm_u16*>(row_ptr);
#pragma unroll
    for (int i = 0; i < kD / 32; ++i) row[lane + 32 * i] = jllm_float_to_half(x[i]);
  } else if constexpr (kKv == kKvF32) {
    float* row = static_cast<float*>(row_ptr);
#pragma unroll
    for (int i = 0; i < kD / 32; ++i) row[lane + 32 * i] = x[i];
  } else {
    jllm_i8* row = static_cast<jllm_i8*>(row_ptr);
    float amax = 0.f;
    int finite = 1;
#pragma unroll
    for (int i = 0; i < kD / 32; ++i) {
      amax = fmaxf(amax, fabsf(x[i]));
      finite &= (x[i] - x[i] == 0.f);  // false for inf and NaN
    }
    amax = jllm_warp_max(amax);
    finite = __all_sync(0xffffffffu, finite);
    if (!finite) {
#pragma unroll
      for (int i = 0; i < kD / 32; ++i) row[lane + 32 * i] = 0;
      if (lane == 0) *scale = 0x7E00;  // fp16 NaN
      return;
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
#pragma unroll
    for (int i = 0; i < kD / 32; ++i) {
      const float qv = fminf(fmaxf(roundf(x[i] * id), -127.0f), 127.0f);
      row[lane + 32 * i] = static_cast<jllm_i8>(qv);
    }
    if (lane == 0) *scale = jllm_float_to_half(d);
  }
}

// Reads element d of a cache row as f32.
template <int kKv>
__device__ __forceinline__ float KvLoad(const void* row_ptr, int d, float scale) {
  if constexpr (kKv == kKvF16) {
    return jllm_half_to_float(static_cast<const jllm_u16*>(row_ptr)[d]);
  } else if constexpr (kKv == kKvF32) {
    return static_cast<const float*>(row_ptr)[d];
  } else {
    return static_cast<float>(static_cast<const jllm_i8*>(row_ptr)[d]) * scale;
  }
}

// Elements d0..d0+7 of a cache row as f32 (d0 a multiple of 8; rows are 16-byte aligned).
template <int kKv>
__device__ __forceinline__ void KvLoad8(const void* row_ptr, int d0, float scale, float* out) {
  if constexpr (kKv == kKvF16) {
    const uint4 v = *reinterpret_cast<const uint4*>(static_cast<const jllm_u16*>(row_ptr) + d0);
    const jllm_u32 w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = jllm_half_to_float(static_cast<jllm_u16>(w[i] & 0xFFFFu));
      out[2 * i + 1] = jllm_half_to_float(static_cast<jllm_u16>(w[i] >> 16));
    }
  } else if constexpr (kKv == kKvF32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(row_ptr) + d0);
    const float4 a = p[0], b = p[1];
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  } else {
    const uint2 v = *reinterpret_cast<const uint2*>(static_cast<const jllm_i8*>(row_ptr) + d0);
    const jllm_u32 w[2] = {v.x, v.y};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      out[i] = static_cast<float>(static_cast<jllm_i8>((w[i >> 2] >> (8 * (i & 3))) & 0xFF)) * scale;
    }
  }
}

// Address of (kv head h, position p)'s row and scale, in a cache of max_ctx positions.
template <int kKv, int kD>
__device__ __forceinline__ const void* KvRow(const void* base, int max_ctx, int h, int p) {
  typedef typename KvElem<kKv>::type E;
  return static_cast<const E*>(base) + (static_cast<long long>(h) * max_ctx + p) * kD;
}
template <int kKv, int kD>
__device__ __forceinline__ void* KvRowMut(void* base, int max_ctx, int h, int p) {
  typedef typename KvElem<kKv>::type E;
  return static_cast<E*>(base) + (static_cast<long long>(h) * max_ctx + p) * kD;
}
template <int kKv>
__device__ __forceinline__ float KvScale(const jllm_u16* scales, int max_ctx, int h, int p) {
  if constexpr (kKv == kKvInt8) {
    return jllm_half_to_float(scales[static_cast<long long>(h) * max_ctx + p]);
  } else {
    return 1.0f;
  }
}

}  // namespace jllm_kernels
