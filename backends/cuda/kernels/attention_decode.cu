// Decode attention (one query token) for GQA: out_h = softmax(scale · q_h·K^T) · V over the S
// positions the layer's cache holds (S = pos + 1: causal), for the G = H/Hkv query heads that
// share a kv head — each K and V row is read once for all of them.
//
// Split over the sequence (flash-decoding): CTA (kv head, split) takes a contiguous chunk of
// positions and walks it in tiles of 32: the whole CTA stages the tile's K and V rows in shared
// memory (every load of the tile issued at once: one round trip), then each warp, for its query
// heads, scores the 32 positions (lane j: position j), keeps an online softmax (max, sum) and
// accumulates its heads' D dimensions of V. The CTA writes (acc, max, sum) per head; the last
// CTA of the kv head (a ticket counter) merges the splits. NSPLIT is fixed, so the grid does not
// depend on S and a captured graph replays unchanged; short contexts use only the first splits.
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
constexpr int kThreads = 32 * kNw;
constexpr int kPer = kD / 32;
constexpr int kHeadsPerWarp = (kG + kNw - 1) / kNw;
constexpr int kTile = jllm::cuda::geometry::kAttnKeyTile;
constexpr int kPitch = kD + 1;
constexpr int kPartial = jllm::cuda::geometry::AttentionPartialFloats(kD);
constexpr int kChunks = kTile * (kD / 8);  // 8-element pieces of a K (or V) tile

static_assert(kH % kHk == 0, "GQA: H a multiple of Hkv");
static_assert(kD % 32 == 0, "head_dim a multiple of 32");
static_assert(kTile == 32, "one position per lane");

}  // namespace

JLLM_KERNEL(attention_decode, jllm::cuda::AttentionArgs, kThreads, 1) {
  __shared__ float qs[kG][kD];
  __shared__ float ks[kTile][kPitch];
  __shared__ float vs[kTile][kPitch];
  __shared__ unsigned ticket;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = blockIdx.x, split = blockIdx.y;
  const int n_pos = args.pos[0] + 1;
  // At least one tile a split: a short context uses the first splits only.
  const int chunk = max(kTile, (n_pos + kSplits - 1) / kSplits);
  const int p_begin = split * chunk;
  const int p_end = min(n_pos, p_begin + chunk);

  for (int i = threadIdx.x; i < kG * kD; i += kThreads) qs[i / kD][i % kD] = args.q[hk * kG * kD + i];

  float m[kHeadsPerWarp], l[kHeadsPerWarp], acc[kHeadsPerWarp][kPer];
#pragma unroll
  for (int k = 0; k < kHeadsPerWarp; ++k) {
    m[k] = JLLM_NEG_INF;
    l[k] = 0.f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) acc[k][i] = 0.f;
  }

  for (int base = p_begin; base < p_end; base += kTile) {
    __syncthreads();  // the previous tile is consumed (and qs is written, the first time)
    for (int c = threadIdx.x; c < kChunks; c += kThreads) {
      const int j = c / (kD / 8), d0 = 8 * (c % (kD / 8));
      const int p = base + j;
      float kv[8], vv[8];
      if (p < p_end) {
        KvLoad8<kKv>(KvRow<kKv, kD>(args.k_cache, args.max_ctx, hk, p), d0,
                     KvScale<kKv>(args.k_scales, args.max_ctx, hk, p), kv);
        KvLoad8<kKv>(KvRow<kKv, kD>(args.v_cache, args.max_ctx, hk, p), d0,
                     KvScale<kKv>(args.v_scales, args.max_ctx, hk, p), vv);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) kv[e] = vv[e] = 0.f;
      }
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        ks[j][d0 + e] = kv[e];
        vs[j][d0 + e] = vv[e];
      }
    }
    __syncthreads();
    const bool valid = base + lane < p_end;
    const int n_valid = min(kTile, p_end - base);
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int g = warp + kNw * k;
      if (g >= kG) break;  // warp-uniform
      float s = 0.f;
#pragma unroll 8
      for (int d = 0; d < kD; ++d) s = fmaf(qs[g][d], ks[lane][d], s);
      const float sg = valid ? s * args.scale : JLLM_NEG_INF;
      const float m_new = fmaxf(m[k], jllm_warp_max(sg));
      const float corr = m[k] == JLLM_NEG_INF ? 0.f : expf(m[k] - m_new);
      const float pj = valid ? expf(sg - m_new) : 0.f;
      l[k] = l[k] * corr + jllm_warp_sum(pj);
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[k][i] *= corr;
      m[k] = m_new;
      for (int j = 0; j < n_valid; ++j) {
        const float w = __shfl_sync(0xffffffffu, pj, j);
#pragma unroll
        for (int i = 0; i < kPer; ++i) acc[k][i] = fmaf(w, vs[j][lane + 32 * i], acc[k][i]);
      }
    }
  }

  // This split's partial per head (an empty split writes max -inf, sum 0: it adds nothing).
#pragma unroll
  for (int k = 0; k < kHeadsPerWarp; ++k) {
    const int g = warp + kNw * k;
    if (g >= kG) break;
    float* part = args.partials + (static_cast<long long>(hk * kG + g) * kSplits + split) * kPartial;
#pragma unroll
    for (int i = 0; i < kPer; ++i) part[lane + 32 * i] = acc[k][i];
    if (lane == 0) {
      part[kD] = m[k];
      part[kD + 1] = l[k];
    }
  }

  // The last CTA of this kv head merges the splits that had positions.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) ticket = atomicAdd(&args.counters[hk], 1u);
  __syncthreads();
  if (ticket != kSplits - 1) return;
  __threadfence();
  const int active = min(kSplits, (n_pos + chunk - 1) / chunk);
  for (int i = threadIdx.x; i < kG * kD; i += kThreads) {
    const int g = i / kD, d = i % kD;
    const float* row0 = args.partials + static_cast<long long>(hk * kG + g) * kSplits * kPartial;
    // Independent loads, issued together: one round trip, not one per split.
    float ms[kSplits];
#pragma unroll
    for (int sp = 0; sp < kSplits; ++sp) {
      ms[sp] = sp < active ? jllm_load_l2_f32(row0 + sp * kPartial + kD) : JLLM_NEG_INF;
    }
    float mx = JLLM_NEG_INF;
#pragma unroll
    for (int sp = 0; sp < kSplits; ++sp) mx = fmaxf(mx, ms[sp]);
    float a = 0.f, sum = 0.f;
#pragma unroll
    for (int sp = 0; sp < kSplits; ++sp) {
      if (sp >= active || ms[sp] == JLLM_NEG_INF) continue;
      const float f = expf(ms[sp] - mx);
      a = fmaf(jllm_load_l2_f32(row0 + sp * kPartial + d), f, a);
      sum = fmaf(jllm_load_l2_f32(row0 + sp * kPartial + kD + 1), f, sum);
    }
    args.out[(hk * kG + g) * kD + d] = a / sum;
  }
  if (threadIdx.x == 0) args.counters[hk] = 0;
}
