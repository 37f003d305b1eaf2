// Per-head transforms of one token's q and k/v heads, the ops between the QKV projection and
// attention: head RMSNorm (Qwen3's q/k norm, one gamma shared by all heads), NEOX RoPE, and the
// KV-cache append — fused or alone, as the graph says:
//   head_rms_norm  q part only, QNORM          rope      q part only, QROPE
//   kv_append      kv part only                qk_norm_rope_kv_append  both parts, all flags
// The "q part" maps HQ heads of xq to yq; the "kv part" maps HK heads of xk (KNORM, KROPE) and
// xv into the layer's cache at the token's position. One warp per head; the angles are built
// as cpu_ref's RopeAngles builds them (θ stepped by the host-computed base^(-2/n_rot) in f32).
//
// Constants (-D): JLLM_D, JLLM_NROT, JLLM_HQ, JLLM_HK, JLLM_QNORM, JLLM_QROPE, JLLM_KNORM,
// JLLM_KROPE, JLLM_KV (cache element type), JLLM_NW (warps, heads, per CTA).
#include "kernel_args.h"
#include "kv_cache.cuh"

namespace {

using namespace jllm_kernels;

constexpr int kD = JLLM_D;
constexpr int kRot = JLLM_NROT;
constexpr int kHq = JLLM_HQ;
constexpr int kHk = JLLM_HK;
constexpr bool kQNorm = JLLM_QNORM, kQRope = JLLM_QROPE;
constexpr bool kKNorm = JLLM_KNORM, kKRope = JLLM_KROPE;
constexpr int kKv = JLLM_KV;
constexpr int kWarps = JLLM_NW;
constexpr int kPer = kD / 32;  // elements per lane

static_assert(kD % 32 == 0 && kD <= 512, "head_dim a multiple of 32");
static_assert(kRot % 2 == 0 && kRot <= kD, "n_rot even and <= head_dim");

// x (lane-strided) -> normed and/or rotated, in place; `buf` is this warp's D floats.
// `gamma` is the lane's kPer gamma values (loaded with x: one round trip, not two).
__device__ __forceinline__ void Transform(float (&x)[kPer], bool norm, const float (&gamma)[kPer], bool rope,
                                          float eps, int pos, float step, float freq_scale, float* buf) {
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
#pragma unroll
  for (int i = 0; i < kPer; ++i) buf[lane + 32 * i] = x[i];
  __syncwarp();
  constexpr int kHalf = kRot / 2;
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

}  // namespace

JLLM_KERNEL(head_ops, jllm::cuda::HeadOpsArgs, 32 * kWarps, 1) {
  __shared__ float bufs[kWarps][kD];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int t = blockIdx.x;
  const int head = blockIdx.y * kWarps + warp;
  for (int i = 0; i < 2; ++i) jllm_prefetch_l2_share(args.prefetch.p[i], args.prefetch.bytes[i]);
  JLLM_GRID_WAIT();
  JLLM_LAUNCH_DEPENDENTS();
  if (head >= kHq + kHk) return;  // whole warps only: no CTA barrier below
  const int pos = args.pos != nullptr ? args.pos[t] : 0;  // no positions: no RoPE, no append
  float* buf = bufs[warp];
  float x[kPer], g[kPer], v[kPer];
  if (head < kHq) {
    const float* in = args.xq + (static_cast<long long>(t) * kHq + head) * kD;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      x[i] = in[lane + 32 * i];
      g[i] = kQNorm ? args.q_gamma[lane + 32 * i] : 1.f;
    }
    Transform(x, kQNorm, g, kQRope, args.eps, pos, args.rope_step, args.rope_scale, buf);
    float* out = args.yq + (static_cast<long long>(t) * kHq + head) * kD;
#pragma unroll
    for (int i = 0; i < kPer; ++i) out[lane + 32 * i] = x[i];
    return;
  }
  const int h = head - kHq;
  const long long at = (static_cast<long long>(t) * kHk + h) * kD;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    x[i] = args.xk[at + lane + 32 * i];
    v[i] = args.xv[at + lane + 32 * i];
    g[i] = kKNorm ? args.k_gamma[lane + 32 * i] : 1.f;
  }
  Transform(x, kKNorm, g, kKRope, args.eps, pos, args.rope_step, args.rope_scale, buf);
  const long long srow = static_cast<long long>(h) * args.max_ctx + pos;
  KvStoreRow<kKv, kD>(x, KvRowMut<kKv, kD>(args.k_cache, args.max_ctx, h, pos),
                      args.k_scales != nullptr ? args.k_scales + srow : nullptr);
  KvStoreRow<kKv, kD>(v, KvRowMut<kKv, kD>(args.v_cache, args.max_ctx, h, pos),
                      args.v_scales != nullptr ? args.v_scales + srow : nullptr);
}
