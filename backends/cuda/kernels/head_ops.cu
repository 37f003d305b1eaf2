// Per-head transforms of one token's q and k/v heads, the ops between the QKV projection and
// attention: head RMSNorm (Qwen3's q/k norm, one gamma shared by all heads), NEOX RoPE, and the
// KV-cache append — fused or alone, as the graph says (head_transform.cuh):
//   head_rms_norm  q part only, QNORM          rope      q part only, QROPE
//   kv_append      kv part only                qk_norm_rope_kv_append  both parts, all flags
// The "q part" maps HQ heads of xq to yq; the "kv part" maps HK heads of xk (KNORM, KROPE) and
// xv into the layer's cache at the token's position. One warp per head.
//
// Constants (-D): JLLM_D, JLLM_NROT, JLLM_HQ, JLLM_HK, JLLM_QNORM, JLLM_QROPE, JLLM_KNORM,
// JLLM_KROPE, JLLM_KV (cache element type), JLLM_NW (warps, heads, per CTA).
#include "kernel_args.h"
#include "head_transform.cuh"

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
  if (head < kHq) {
    const long long at = (static_cast<long long>(t) * kHq + head) * kD;
    float x[kPer];
    LoadHead<kD, kRot>(args.xq, at, args.q_gamma, kQNorm, kQRope, args.eps, pos, args.rope_step, args.rope_scale,
                       buf, x);
#pragma unroll
    for (int i = 0; i < kPer; ++i) args.yq[at + lane + 32 * i] = x[i];
    return;
  }
  const int h = head - kHq;
  AppendKvHead<kKv, kD, kRot>(args.xk, args.k_gamma, kKNorm, kKRope, args.xv, (static_cast<long long>(t) * kHk + h) * kD,
                              h, pos, args.eps, args.rope_step, args.rope_scale, args.k_cache, args.v_cache,
                              args.k_scales, args.v_scales, args.max_ctx, buf);
}
