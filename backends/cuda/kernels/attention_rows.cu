// Decode attention (one query token) for GQA, every warp on its own tiles of 32 cache positions:
// out_h = softmax(scale · q_h·K^T) · V over the S = pos + 1 positions the layer's cache holds, for
// the G = H/Hkv query heads that share a kv head (each K and V row read once for all of them).
//
// The sequence is split as attention_decode.cu splits it (a fixed grid of Hkv x NSPLIT CTAs, S
// cut into `active` chunks of at least MINCHUNK positions, the last CTA of a kv head merging the
// splits: attention_merge.cuh), but inside a CTA nothing waits on a barrier per tile: warp w
// takes tiles w, w + NW, ... of the chunk. In a tile lane j scores position j — its whole K row,
// loaded straight into registers (D / 8 loads of 8 elements, all in flight together), against
// q in shared memory (broadcast reads) — then the warp updates its online softmax and reads the
// tile's V rows with the rows' 8-element pieces spread over D / 8 lanes (whole rows per load
// instruction), each lane adding its piece of 32 / (D / 8) rows times their weights (shuffled
// from the scoring lanes). The warps' (max, sum, acc) merge in shared memory at the end. So the
// cache streams with NW x 32 rows in flight per CTA, at every context length, and a short
// context costs two dependent round trips (K, then V) and one CTA barrier.
//
// Constants (-D): JLLM_D, JLLM_H, JLLM_HK, JLLM_KV, JLLM_NSPLIT, JLLM_MINCHUNK, JLLM_NW,
// JLLM_MERGE_FIRST, JLLM_MERGE_ONE_FENCE (attention_merge.cuh).
#include "attention_merge.cuh"
#include "kernel_args.h"
#include "kv_cache.cuh"
#include "launch_geometry.h"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

constexpr int kD = JLLM_D;
constexpr int kH = JLLM_H;
constexpr int kHk = JLLM_HK;
constexpr int kG = kH / kHk;
constexpr int kKv = JLLM_KV;
constexpr int kSplits = JLLM_NSPLIT;
constexpr int kMinChunk = JLLM_MINCHUNK;
constexpr int kNw = JLLM_NW;
constexpr int kThreads = 32 * kNw;
constexpr int kTile = 32;                 // positions per warp step: one per lane
constexpr int kPieces = kD / 8;           // 8-element pieces of a row
constexpr int kLpr = kPieces;             // lanes per V row
constexpr int kRowsPerLoad = 32 / kLpr;   // V rows per warp load instruction
using Merge = AttentionMerge<kG, kD, kSplits, kThreads, JLLM_MERGE_FIRST, JLLM_MERGE_ONE_FENCE>;

static_assert(kH % kHk == 0, "GQA: H a multiple of Hkv");
static_assert(geo::AttentionRowsSupported(kD), "D / 8 lanes hold a V row");
static_assert(kMinChunk >= 1, "MINCHUNK >= 1");
static_assert(geo::AttentionRowsSmemBytes(kG, kD, kNw) <= geo::kAttnRowsSmemMax, "the warps' merge fits");

}  // namespace

// One CTA an SM: a lane keeps a K row and its V pieces in flight together (~255 registers); the
// lowering's NSPLIT keeps Hkv x NSPLIT CTAs near one wave.
JLLM_KERNEL(attention_rows, jllm::cuda::AttentionArgs, kThreads, 1) {
  __shared__ float4 qs[kG][kD / 4];
  __shared__ float accs[kNw][kG][kD];
  __shared__ float maxs[kNw][kG], sums[kNw][kG];
  __shared__ Merge::Smem merge;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = blockIdx.x, split = blockIdx.y;

  const AttentionSplit sp = SplitOfStep<kSplits, kMinChunk>(args, split);
  const int active = sp.active;
  if (split >= active && active == 1) return;      // nothing to merge with
  const int p_begin = sp.p_begin, p_end = sp.p_end;

  if (split < active) {
    for (int i = threadIdx.x; i < kG * kD / 4; i += kThreads) {
      qs[i / (kD / 4)][i % (kD / 4)] = reinterpret_cast<const float4*>(args.q + hk * kG * kD)[i];
    }
    __syncthreads();
    float m[kG], l[kG], acc[kG][8];
#pragma unroll
    for (int g = 0; g < kG; ++g) {
      m[g] = JLLM_NEG_INF;
      l[g] = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] = 0.f;
    }
    const int piece = lane % kLpr, vrow = lane / kLpr;
    for (int base = p_begin + kTile * warp; base < p_end; base += kTile * kNw) {
      // Scores: lane j, position base + j, its whole K row.
      const int p = base + lane;
      const bool valid = p < p_end;
      KvRaw8<kKv> rk[kPieces];
      if (valid) {
        const void* row = KvRow<kKv, kD>(args.k_cache, args.max_ctx, hk, p);
        const jllm_u16* scale = KvScalePtr<kKv>(args.k_scales, args.max_ctx, hk, p);
#pragma unroll
        for (int c = 0; c < kPieces; ++c) rk[c] = KvLoadRaw8<kKv>(row, 8 * c, scale);
      }
      float s[kG][2];  // two FMA chains per head (even and odd pieces)
#pragma unroll
      for (int g = 0; g < kG; ++g) s[g][0] = s[g][1] = 0.f;
#pragma unroll
      for (int c = 0; c < kPieces; ++c) {
        float k8[8];
        if (valid) {
          KvRawToF32<kKv>(rk[c], k8);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) k8[e] = 0.f;
        }
#pragma unroll
        for (int g = 0; g < kG; ++g) {
          const float4 a = qs[g][2 * c], b = qs[g][2 * c + 1];
          float t = s[g][c & 1];
          t = fmaf(a.x, k8[0], t);
          t = fmaf(a.y, k8[1], t);
          t = fmaf(a.z, k8[2], t);
          t = fmaf(a.w, k8[3], t);
          t = fmaf(b.x, k8[4], t);
          t = fmaf(b.y, k8[5], t);
          t = fmaf(b.z, k8[6], t);
          t = fmaf(b.w, k8[7], t);
          s[g][c & 1] = t;
        }
      }
      // The warp's online softmax over the tile (a tile's first position is always valid).
      float pj[kG];
#pragma unroll
      for (int g = 0; g < kG; ++g) {
        const float sg = valid ? (s[g][0] + s[g][1]) * args.scale : JLLM_NEG_INF;
        const float m_new = fmaxf(m[g], jllm_warp_max(sg));
        const float corr = m[g] == JLLM_NEG_INF ? 0.f : expf(m[g] - m_new);
        pj[g] = valid ? expf(sg - m_new) : 0.f;
        l[g] = l[g] * corr + jllm_warp_sum(pj[g]);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] *= corr;
        m[g] = m_new;
      }
      // V: lane (vrow, piece) adds piece `piece` of rows vrow, vrow + 32 / LPR, ... (zero past
      // the chunk: the cache beyond it may hold anything, and 0 · NaN is NaN).
      KvRaw8<kKv> rv[kLpr];
#pragma unroll
      for (int i = 0; i < kLpr; ++i) {
        const int pv = base + kRowsPerLoad * i + vrow;
        if (pv < p_end) {
          rv[i] = KvLoadRaw8<kKv>(KvRow<kKv, kD>(args.v_cache, args.max_ctx, hk, pv), 8 * piece,
                                  KvScalePtr<kKv>(args.v_scales, args.max_ctx, hk, pv));
        }
      }
#pragma unroll
      for (int i = 0; i < kLpr; ++i) {
        const int j = kRowsPerLoad * i + vrow;
        float v8[8];
        if (base + j < p_end) {
          KvRawToF32<kKv>(rv[i], v8);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) v8[e] = 0.f;
        }
#pragma unroll
        for (int g = 0; g < kG; ++g) {
          const float w = __shfl_sync(0xffffffffu, pj[g], j);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(w, v8[e], acc[g][e]);
        }
      }
    }
    // The warp's acc: the lanes of one piece hold different rows' sums.
#pragma unroll
    for (int off = kLpr; off < 32; off *= 2) {
#pragma unroll
      for (int g = 0; g < kG; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] += __shfl_xor_sync(0xffffffffu, acc[g][e], off);
      }
    }
    if (lane < kLpr) {
#pragma unroll
      for (int g = 0; g < kG; ++g) {
#pragma unroll
        for (int e = 0; e < 8; ++e) accs[warp][g][8 * piece + e] = acc[g][e];
      }
    }
    if (lane == 0) {
#pragma unroll
      for (int g = 0; g < kG; ++g) maxs[warp][g] = m[g], sums[warp][g] = l[g];
    }
    __syncthreads();
    Merge::MergeWarps<kNw>(args, hk, split, active, accs, maxs, sums);
    if (active == 1) return;
  }
  Merge::IfLast(args, hk, active, merge);
}
