// Qwen3's per-head transforms of one head row, as a warp does them: head RMSNorm (one gamma for
// every head) and NEOX RoPE, with the angles built as cpu_ref's RopeAngles builds them (θ stepped
// by the host-computed base^(-2/n_rot) in f32); and the KV-cache append of a kv head. Used by
// head_ops.cu, by decode attention with the head ops fused (attention_decode.cu) and by the QKV
// GEMV with them in its tail (gemv.cu, HEAD).
#pragma once

#include "kv_cache.cuh"

namespace jllm_kernels {

// x (lane-strided: lane holds x[lane + 32 i]) -> normed and/or rotated, in place; `buf` is this
// warp's D floats of shared memory, used only where n_rot / 2 is not a multiple of 32 (else the
// rotation stays in registers). `gamma` is the lane's D / 32 gamma values.
template <int kD, int kRot>
__device__ __forceinline__ void HeadTransform(float (&x)[kD / 32], bool norm, const float (&gamma)[kD / 32],
                                              bool rope, float eps, int pos, float step, float freq_scale,
                                              float* buf) {
  constexpr int kPer = kD / 32;
  static_assert(kD % 32 == 0 && kD <= 512, "head_dim a multiple of 32");
  static_assert(kRot % 2 == 0 && kRot <= kD, "n_rot even and <= head_dim");
  const int lane = threadIdx.x & 31;
  if (norm) {
    double s = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) s += static_cast<double>(x[i] * x[i]);
    const float scale = jllm_rms_scale(jllm_warp_sum_d(s), kD, eps);
#pragma unroll
    for (int i = 0; i < kPer; ++i) x[i] = x[i] * scale * gamma[i];
  }
  if (!rope) return;
  constexpr int kHalf = kRot / 2;
  if constexpr (kHalf % 32 == 0) {
    // A pair's elements e and e + kHalf are both this lane's (x[i], x[i + kHalf / 32]): rotated
    // in registers, one angle a pair (Qwen3: head_dim 128, every dimension rotated). `buf` unused.
    constexpr int kPairsPerLane = kHalf / 32;
#pragma unroll
    for (int i = 0; i < kPairsPerLane; ++i) {
      const int pair = lane + 32 * i;
      float theta = static_cast<float>(pos);
      for (int j = 0; j < pair; ++j) theta *= step;
      const float angle = freq_scale * theta;
      const float c = cosf(angle), s = sinf(angle);
      const float a = x[i], b = x[i + kPairsPerLane];
      x[i] = a * c - b * s;
      x[i + kPairsPerLane] = a * s + b * c;
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) buf[lane + 32 * i] = x[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int e = lane + 32 * i;
    if (e >= kRot) continue;
    const int pair = e < kHalf ? e : e - kHalf;
    float theta = static_cast<float>(pos);
    for (int j = 0; j < pair; ++j) theta *= step;
    const float angle = freq_scale * theta;
    const float c = cosf(angle), s = sinf(angle);
    const float a = buf[pair], b = buf[pair + kHalf];
    x[i] = e < kHalf ? a * c - b * s : a * s + b * c;
  }
  __syncwarp();
}

// Loads head row `at` of x (and gamma, if `norm`) and transforms it (HeadTransform).
template <int kD, int kRot>
__device__ __forceinline__ void LoadHead(const float* x_rows, long long at, const float* gamma, bool norm,
                                         bool rope, float eps, int pos, float step, float freq_scale, float* buf,
                                         float (&x)[kD / 32]) {
  const int lane = threadIdx.x & 31;
  float g[kD / 32];
#pragma unroll
  for (int i = 0; i < kD / 32; ++i) {
    x[i] = x_rows[at + lane + 32 * i];
    g[i] = norm ? gamma[lane + 32 * i] : 1.f;
  }
  HeadTransform<kD, kRot>(x, norm, g, rope, eps, pos, step, freq_scale, buf);
}

// Stores kv head h's k (transformed) and v rows into the caches at position pos.
template <int kKv, int kD>
__device__ __forceinline__ void StoreKvHead(const float (&k)[kD / 32], const float (&v)[kD / 32], int h, int pos,
                                            void* k_cache, void* v_cache, jllm_u16* k_scales, jllm_u16* v_scales,
                                            int max_ctx) {
  const long long srow = static_cast<long long>(h) * max_ctx + pos;
  KvStoreRow<kKv, kD>(k, KvRowMut<kKv, kD>(k_cache, max_ctx, h, pos), k_scales != nullptr ? k_scales + srow : nullptr);
  KvStoreRow<kKv, kD>(v, KvRowMut<kKv, kD>(v_cache, max_ctx, h, pos), v_scales != nullptr ? v_scales + srow : nullptr);
}

// Appends kv head h's row `at` of x_k (transformed) and x_v to the caches at position pos.
template <int kKv, int kD, int kRot>
__device__ __forceinline__ void AppendKvHead(const float* xk, const float* k_gamma, bool norm, bool rope,
                                             const float* xv, long long at, int h, int pos, float eps,
                                             float step, float freq_scale, void* k_cache, void* v_cache,
                                             jllm_u16* k_scales, jllm_u16* v_scales, int max_ctx, float* buf) {
  const int lane = threadIdx.x & 31;
  float k[kD / 32], v[kD / 32];
#pragma unroll
  for (int i = 0; i < kD / 32; ++i) v[i] = xv[at + lane + 32 * i];
  LoadHead<kD, kRot>(xk, at, k_gamma, norm, rope, eps, pos, step, freq_scale, buf, k);
  StoreKvHead<kKv, kD>(k, v, h, pos, k_cache, v_cache, k_scales, v_scales, max_ctx);
}

}  // namespace jllm_kernels
