// Decode attention (one query token) for GQA: out_h = softmax(scale · q_h·K^T) · V over the S
// positions the layer's cache holds (S = pos + 1: causal), for the G = H/Hkv query heads that
// share a kv head — each K and V row is read once for all of them.
//
// Split over the sequence (flash-decoding). The grid (Hkv x NSPLIT) is fixed, so a captured
// graph replays unchanged; the split of S is not: S is cut into `active` chunks of at least
// MINCHUNK positions (short contexts use few splits, so the merge stays cheap; long ones all).
// CTA (kv head, split) walks its chunk in tiles of 32 positions: the loads of the next tile are
// in flight (in registers) while the current one, staged in shared memory as f32, is used —
// each warp, for its query heads, scores the 32 positions (lane j: position j), keeps an online
// softmax (max, sum) and accumulates its heads' D dimensions of V. The CTA writes (acc, max, sum)
// per head; the last CTA of the kv head merges the active splits (attention_merge.cuh). A single
// active split (up to MINCHUNK positions) writes the output itself.
//
// With the head ops fused (FUSED_HEAD: Qwen3's q/k RMSNorm + RoPE + KV append, which head_ops.cu
// runs otherwise) every CTA norms and rotates its kv head's G query heads from the QKV
// projection's output as it stages them, and the CTA whose split holds the new position (the
// last active one) appends its k and v to the cache first, then reads them back with the rest:
// one kernel boundary and one L2 round trip less per layer. The other CTAs' first tile is in
// flight meanwhile, as is the appending CTA's unless that tile holds the new position.
//
// Constants (-D): JLLM_D, JLLM_H, JLLM_HK, JLLM_KV, JLLM_NSPLIT, JLLM_MINCHUNK, JLLM_NW,
// JLLM_FUSED_HEAD (0/1), JLLM_NROT (rotated dimensions, with FUSED_HEAD), JLLM_MERGE_FIRST,
// JLLM_MERGE_ONE_FENCE (attention_merge.cuh).
#include "attention_merge.cuh"
#include "head_transform.cuh"
#include "kernel_args.h"
#include "launch_geometry.h"

namespace {

using namespace jllm_kernels;

constexpr int kD = JLLM_D;
constexpr int kH = JLLM_H;
constexpr int kHk = JLLM_HK;
constexpr int kG = kH / kHk;
constexpr int kKv = JLLM_KV;
constexpr int kSplits = JLLM_NSPLIT;
constexpr int kMinChunk = JLLM_MINCHUNK;
constexpr int kNw = JLLM_NW;
constexpr int kThreads = 32 * kNw;
constexpr int kPer = kD / 32;
constexpr int kHeadsPerWarp = (kG + kNw - 1) / kNw;
constexpr int kTile = jllm::cuda::geometry::kAttnKeyTile;
constexpr int kPitch = kD + 1;
constexpr int kPartial = jllm::cuda::geometry::AttentionPartialFloats(kD);
constexpr int kChunks = kTile * (kD / 8);  // 8-element pieces of a K (or V) tile
constexpr int kLoads = (kChunks + kThreads - 1) / kThreads;  // pieces per thread
using Merge = AttentionMerge<kG, kD, kSplits, kThreads, JLLM_MERGE_FIRST, JLLM_MERGE_ONE_FENCE>;
constexpr bool kFusedHead = JLLM_FUSED_HEAD;
#ifndef JLLM_NROT
#define JLLM_NROT 0
#endif
constexpr int kRot = JLLM_NROT;

static_assert(kH % kHk == 0, "GQA: H a multiple of Hkv");
static_assert(kD % 32 == 0, "head_dim a multiple of 32");
static_assert(kTile == 32, "one position per lane");
static_assert(kMinChunk >= 1, "MINCHUNK >= 1");
static_assert(kG <= kTile, "a warp's heads");
static_assert(!kFusedHead || kNw <= kTile, "FUSED_HEAD: a RoPE buffer (a row of ks) per warp");

}  // namespace

JLLM_KERNEL(attention_decode, jllm::cuda::AttentionArgs, kThreads, 1) {
  __shared__ float qs[kG][kD];
  __shared__ float ks[kTile][kPitch];
  __shared__ float vs[kTile][kPitch];
  __shared__ Merge::Smem merge;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = blockIdx.x, split = blockIdx.y;

  const AttentionSplit sp = SplitOfStep<kSplits, kMinChunk>(args, split);
  const int n_pos = sp.n_pos, active = sp.active;
  const int p_begin = sp.p_begin, p_end = sp.p_end;

  const int pos = n_pos - 1;  // the new token's
  // FUSED_HEAD: this CTA appends the new k and v; its first tile waits for them if it holds them.
  const bool appends = kFusedHead && split == active - 1;
  const bool issue_early = !appends || pos >= p_begin + kTile;

  KvRaw8<kKv> rk[kLoads], rv[kLoads];
  auto issue = [&](int base) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int c = threadIdx.x + kThreads * i;
      const int p = base + c / (kD / 8), d0 = 8 * (c % (kD / 8));
      if (c < kChunks && p < p_end) {
        rk[i] = KvLoadRaw8<kKv>(KvRow<kKv, kD>(args.k_cache, args.max_ctx, hk, p), d0,
                                KvScalePtr<kKv>(args.k_scales, args.max_ctx, hk, p));
        rv[i] = KvLoadRaw8<kKv>(KvRow<kKv, kD>(args.v_cache, args.max_ctx, hk, p), d0,
                                KvScalePtr<kKv>(args.v_scales, args.max_ctx, hk, p));
      }
    }
  };
  if (issue_early && p_begin < p_end) issue(p_begin);
  if constexpr (kFusedHead) {
    // Warp jobs: query head g (0 <= g < G), then, in the appending CTA, the kv head (job G).
    // ks is free until the first tile is staged: row `warp` is the warp's RoPE buffer.
    const auto& h = args.head;
    const int jobs = split < active ? kG + (appends ? 1 : 0) : 0;  // splits past `active` have no positions
    for (int job = warp; job < jobs; job += kNw) {
      if (job < kG) {
        float x[kPer];
        LoadHead<kD, kRot>(h.xq, static_cast<long long>(hk * kG + job) * kD, h.q_gamma, true, true, h.eps, pos,
                           h.rope_step, h.rope_scale, ks[warp], x);
#pragma unroll
        for (int i = 0; i < kPer; ++i) qs[job][lane + 32 * i] = x[i];
      } else {
        AppendKvHead<kKv, kD, kRot>(h.xk, h.k_gamma, true, true, h.xv, static_cast<long long>(hk) * kD, hk, pos,
                                    h.eps, h.rope_step, h.rope_scale, h.k_cache, h.v_cache, h.k_scales,
                                    h.v_scales, args.max_ctx, ks[warp]);
      }
      __syncwarp();  // the warp's RoPE buffer is free for its next job
    }
    if (!issue_early) {
      __syncthreads();  // the new row is in the cache, visible to the CTA
      if (p_begin < p_end) issue(p_begin);
    }
  } else {
    for (int i = threadIdx.x; i < kG * kD; i += kThreads) qs[i / kD][i % kD] = args.q[hk * kG * kD + i];
  }

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
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int c = threadIdx.x + kThreads * i;
      if (c >= kChunks) continue;
      const int j = c / (kD / 8), d0 = 8 * (c % (kD / 8));
      float kv[8], vv[8];
      if (base + j < p_end) {
        KvRawToF32<kKv>(rk[i], kv);
        KvRawToF32<kKv>(rv[i], vv);
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
    if (base + kTile < p_end) issue(base + kTile);  // in flight while this tile is used
    const bool valid = base + lane < p_end;
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int g = warp + kNw * k;
      if (g >= kG) break;  // warp-uniform
      float s4[4] = {0.f, 0.f, 0.f, 0.f};  // four independent FMA chains, not one of length D
#pragma unroll 8
      for (int d = 0; d < kD; d += 4) {
#pragma unroll
        for (int c = 0; c < 4; ++c) s4[c] = fmaf(qs[g][d + c], ks[lane][d + c], s4[c]);
      }
      const float s = (s4[0] + s4[1]) + (s4[2] + s4[3]);
      const float sg = valid ? s * args.scale : JLLM_NEG_INF;
      const float m_new = fmaxf(m[k], jllm_warp_max(sg));
      const float corr = m[k] == JLLM_NEG_INF ? 0.f : expf(m[k] - m_new);
      const float pj = valid ? expf(sg - m_new) : 0.f;
      l[k] = l[k] * corr + jllm_warp_sum(pj);
#pragma unroll
      for (int i = 0; i < kPer; ++i) acc[k][i] *= corr;
      m[k] = m_new;
      // All 32 positions, unrolled (so the shuffles run ahead): invalid ones have weight 0
      // and zeroed V rows, adding exactly nothing.
#pragma unroll
      for (int j = 0; j < kTile; ++j) {
        const float w = __shfl_sync(0xffffffffu, pj, j);
#pragma unroll
        for (int i = 0; i < kPer; ++i) acc[k][i] = fmaf(w, vs[j][lane + 32 * i], acc[k][i]);
      }
    }
  }

  // One split (a short context): it is the result; no partials, no ticket, no merge.
  if (active == 1) {
    if (split != 0) return;
#pragma unroll
    for (int k = 0; k < kHeadsPerWarp; ++k) {
      const int g = warp + kNw * k;
      if (g >= kG) break;
      const float inv = 1.0f / l[k];
#pragma unroll
      for (int i = 0; i < kPer; ++i) args.out[(hk * kG + g) * kD + lane + 32 * i] = acc[k][i] * inv;
    }
    return;
  }

  // This split's partial per head; splits past `active` have no positions and write nothing.
  if (split < active) {
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
  }

  Merge::IfLast(args, hk, active, merge);
}
