// Decode attention (one query token) for GQA: out_h = softmax(scale · q_h·K^T) · V over the S
// positions the layer's cache holds (S = pos + 1: causal), for the G = H/Hkv query heads that
// share a kv head — each K and V row is read once for all of them.
//
// Split over the sequence (flash-decoding): CTA (kv head, split) takes a contiguous chunk of
// positions; its warps take 32-position tiles of it in turn (lane j scores position base + j for
// all G heads; then every lane accumulates its D/32 dimensions of V over the tile), with an
// online softmax. The warps merge in shared memory, the CTA writes (acc, max, sum) per head,
// and the last CTA of the kv head (a ticket counter) merges the splits in a fixed order.
// NSPLIT is fixed, so the grid does not depend on S and a captured graph replays unchanged.
//
// Constants (-D): JLLM_D, JLLM_H, JLLM_HK, JLLM_KV, JLLM_NSPLIT, JLLM_NW.
#include "kernel_args.h"
#include "kv_cache.cuh"
#include "launch_geometry.h"

namespace {

using namespace jllm_kernels;

constexpr int kD = JLLM_D;
constexpr int kH = JLLM_H;
constexpr int kHk = JLLM_HK;
constexpr int kG = kH / kHk;
constexpr int kKv = JLLM_KV;
constexpr int kSplits = JLLM_NSPLIT;
constexpr int kNw = JLLM_NW;
constexpr int kPer = kD / 32;
constexpr int kPartial = jllm::cuda::geometry::AttentionPartialFloats(kD);

static_assert(kH % kHk == 0, "GQA: H a multiple of Hkv");
static_assert(kD % 32 == 0, "head_dim a multiple of 32");

}  // namespace

JLLM_KERNEL(attention_decode, jllm::cuda::AttentionArgs, 32 * kNw, 1) {
  __shared__ float qs[kG][kD];
  __shared__ float wm[kNw][kG], wl[kNw][kG];
  __shared__ float wacc[kNw][kG][kD];
  __shared__ unsigned ticket;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = blockIdx.x, split = blockIdx.y;
  const int n_pos = args.pos[0] + 1;
  const int chunk = (n_pos + kSplits - 1) / kSplits;
  const int p_begin = split * chunk;
  const int p_end = min(n_pos, p_begin + chunk);

  for (int i = threadIdx.x; i < kG * kD; i += blockDim.x) {
    qs[i / kD][i % kD] = args.q[hk * kG * kD + i];
  }
  __syncthreads();

  float m[kG], l[kG], acc[kG][kPer];
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    m[g] = JLLM_NEG_INF;
    l[g] = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[g][i] = 0.f;
  }

  for (int base = p_begin + 32 * warp; base < p_end; base += 32 * kNw) {
    const int p = base + lane;
    const bool valid = p < p_end;
    float s[kG];
#pragma unroll
    for (int g = 0; g < kG; ++g) s[g] = 0.f;
    if (valid) {
      const void* krow = KvRow<kKv, kD>(args.k_cache, args.max_ctx, hk, p);
      const float ksc = KvScale<kKv>(args.k_scales, args.max_ctx, hk, p);
      for (int d0 = 0; d0 < kD; d0 += 8) {
        float k[8];
        KvLoad8<kKv>(krow, d0, ksc, k);
#pragma unroll
        for (int g = 0; g < kG; ++g) {
#pragma unroll
          for (int i = 0; i < 8; ++i) s[g] = fmaf(qs[g][d0 + i], k[i], s[g]);
        }
      }
    }
    float pj[kG];
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      const float sg = valid ? s[g] * args.scale : JLLM_NEG_INF;
      const float m_new = fmaxf(m[g], jllm_warp_max(sg));
      const float corr = m[g] == JLLM_NEG_INF ? 0.f : expf(m[g] - m_new);
      pj[g] = valid && m_new != JLLM_NEG_INF ? expf(sg - m_new) : 0.f;
      l[g] = l[g] * corr + jllm_warp_sum(pj[g]);
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[g][i] *= corr;
      m[g] = m_new;
    }
    const int n_valid = min(32, p_end - base);
    for (int j = 0; j < n_valid; ++j) {
      const void* vrow = KvRow<kKv, kD>(args.v_cache, args.max_ctx, hk, base + j);
      const float vsc = KvScale<kKv>(args.v_scales, args.max_ctx, hk, base + j);
      float v[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) v[i] = KvLoad<kKv>(vrow, lane + 32 * i, vsc);
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const float w = __shfl_sync(0xffffffffu, pj[g], j);
#pragma unroll
        for (int i = 0; i < kPer; ++i) acc[g][i] = fmaf(w, v[i], acc[g][i]);
      }
    }
  }

  // Merge the warps of this CTA.
#pragma unroll
  for (int g = 0; g < kG; ++g) {
    if (lane == 0) {
      wm[warp][g] = m[g];
      wl[warp][g] = l[g];
    }
#pragma unroll
    for (int i = 0; i < kPer; ++i) wacc[warp][g][lane + 32 * i] = acc[g][i];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kG * kD; i += blockDim.x) {
    const int g = i / kD, d = i % kD;
    float mx = JLLM_NEG_INF;
    for (int w = 0; w < kNw; ++w) mx = fmaxf(mx, wm[w][g]);
    float a = 0.f, sum = 0.f;
    if (mx != JLLM_NEG_INF) {
      for (int w = 0; w < kNw; ++w) {
        const float f = expf(wm[w][g] - mx);
        a = fmaf(wacc[w][g][d], f, a);
        sum = fmaf(wl[w][g], f, sum);
      }
    }
    float* part = args.partials + (static_cast<long long>(hk * kG + g) * kSplits + split) * kPartial;
    part[d] = a;
    if (d == 0) {
      part[kD] = mx;
      part[kD + 1] = sum;
    }
  }

  // The last CTA of this kv head merges the splits.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ticket = atomicAdd(&args.counters[hk], 1u);
  __syncthreads();
  if (ticket != kSplits - 1) return;
  __threadfence();
  const volatile float* parts = args.partials;
  for (int i = threadIdx.x; i < kG * kD; i += blockDim.x) {
    const int g = i / kD, d = i % kD;
    const long long row0 = static_cast<long long>(hk * kG + g) * kSplits;
    float mx = JLLM_NEG_INF;
    for (int sp = 0; sp < kSplits; ++sp) mx = fmaxf(mx, parts[(row0 + sp) * kPartial + kD]);
    float a = 0.f, sum = 0.f;
    for (int sp = 0; sp < kSplits; ++sp) {
      const float ms = parts[(row0 + sp) * kPartial + kD];
      if (ms == JLLM_NEG_INF) continue;
      const float f = expf(ms - mx);
      a = fmaf(parts[(row0 + sp) * kPartial + d], f, a);
      sum = fmaf(parts[(row0 + sp) * kPartial + kD + 1], f, sum);
    }
    args.out[(hk * kG + g) * kD + d] = a / sum;
  }
  if (threadIdx.x == 0) args.counters[hk] = 0;
}
