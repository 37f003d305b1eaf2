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

// Eight elements of a cache row as stored (and the row's scale, int8): loaded in one go, turned
// into f32 later, so a kernel can keep the next tile's loads in flight while it computes.
template <int kKv>
struct KvRaw8;
template <>
struct KvRaw8<kKvF16> { uint4 v; };
template <>
struct KvRaw8<kKvInt8> { uint2 v; jllm_u16 scale; };
template <>
struct KvRaw8<kKvF32> { uint4 a, b; };

// Elements d0..d0+7 of a cache row (d0 a multiple of 8; rows are 16-byte aligned); `scale` is
// the row's int8 scale (unused otherwise).
template <int kKv>
__device__ __forceinline__ KvRaw8<kKv> KvLoadRaw8(const void* row_ptr, int d0, const jllm_u16* scale) {
  KvRaw8<kKv> r;
  if constexpr (kKv == kKvF16) {
    r.v = *reinterpret_cast<const uint4*>(static_cast<const jllm_u16*>(row_ptr) + d0);
  } else if constexpr (kKv == kKvF32) {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const float*>(row_ptr) + d0);
    r.a = p[0];
    r.b = p[1];
  } else {
    r.v = *reinterpret_cast<const uint2*>(static_cast<const jllm_i8*>(row_ptr) + d0);
    r.scale = *scale;
  }
  return r;
}

template <int kKv>
__device__ __forceinline__ void KvRawToF32(const KvRaw8<kKv>& r, float* out) {
  if constexpr (kKv == kKvF16) {
    const jllm_u32 w[4] = {r.v.x, r.v.y, r.v.z, r.v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = jllm_half_to_float(static_cast<jllm_u16>(w[i] & 0xFFFFu));
      out[2 * i + 1] = jllm_half_to_float(static_cast<jllm_u16>(w[i] >> 16));
    }
  } else if constexpr (kKv == kKvF32) {
    const jllm_u32 w[8] = {r.a.x, r.a.y, r.a.z, r.a.w, r.b.x, r.b.y, r.b.z, r.b.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = __uint_as_float(w[i]);
  } else {
    const float scale = jllm_half_to_float(r.scale);
    const jllm_u32 w[2] = {r.v.x, r.v.y};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      out[i] = static_cast<float>(static_cast<jllm_i8>((w[i >> 2] >> (8 * (i & 3))) & 0xFF)) * scale;
    }
  }
}

template <int kKv>
__device__ __forceinline__ void KvLoad8(const void* row_ptr, int d0, const jllm_u16* scale, float* out) {
  KvRawToF32<kKv>(KvLoadRaw8<kKv>(row_ptr, d0, scale), out);
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
// The int8 scale of (h, p), or nullptr for caches without scales.
template <int kKv>
__device__ __forceinline__ const jllm_u16* KvScalePtr(const jllm_u16* scales, int max_ctx, int h, int p) {
  return kKv == kKvInt8 ? scales + static_cast<long long>(h) * max_ctx + p : nullptr;
}

}  // namespace jllm_kernels
