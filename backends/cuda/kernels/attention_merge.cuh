// The end of split decode attention (flash-decoding), shared by attention_decode.cu,
// attention_rows.cu and attention_mma.cu: each CTA (kv head, split) has written its G heads' partials — [D]
// unnormalized acc, then max and sum, per (head, split) — and the last CTA of the kv head to
// finish (a ticket counter, reset after) merges the active splits in a fixed order. Its loads:
// kFirst 0 (JLLM_MERGE_FIRST), every (max, sum), then every acc, 8 splits in flight at a time;
// kFirst 1, the first kMergeBatch splits' accs with the (max, sum)s in one round trip of L2 (at
// 8k positions 16 splits are active: one round instead of three after the ticket), the rest in
// batches after. The sums are the same in the same order either way. The ticket: kOneFence 0
// (JLLM_MERGE_ONE_FENCE), every thread fences its partial's writes before the barrier; 1, thread
// 0 fences once after it (the barrier orders the CTA's writes before its fence, as cooperative
// groups' grid barrier does), takes the ticket, and the last CTA's thread 0 fences again before
// the barrier that lets its threads read the other splits' partials.
#pragma once

#include "jllm_common.cuh"
#include "kernel_args.h"
#include "launch_geometry.h"

namespace jllm_kernels {

// This CTA's share of the weights a later kernel reads (JLLM_PREFETCH), asked of L2.
__device__ __forceinline__ void PrefetchNextWeights(const jllm::cuda::AttentionArgs& args) {
  for (int i = 0; i < 2; ++i) jllm_prefetch_l2_share(args.prefetch.p[i], args.prefetch.bytes[i]);
}

// The split of the S = pos + 1 cached positions that CTA (kv head, split) attends to: S is cut
// into `active` chunks of at least kMinChunk positions (short contexts use few splits, so the
// merge stays cheap), [p_begin, p_end) this CTA's (empty past `active`). Every decode attention
// kernel starts with it, by default after its grid dependency (kWait). Without it (the caller
// waits later): the position is the step state's, which the previous step's sampler advanced —
// every kernel passes its own wait before it lets its successor start, so when attention starts
// every kernel but its predecessor (head_ops: q and this position's cache row) is complete.
struct AttentionSplit {
  int n_pos, active, p_begin, p_end;
};
template <int kSplits, int kMinChunk, bool kWait = true, bool kPrefetch = true>
__device__ __forceinline__ AttentionSplit SplitOfStep(const jllm::cuda::AttentionArgs& args, int split) {
  if constexpr (kPrefetch) PrefetchNextWeights(args);
  if constexpr (kWait) {
    JLLM_GRID_WAIT();
    JLLM_LAUNCH_DEPENDENTS();
  }
  AttentionSplit s;
  s.n_pos = args.pos[0] + 1;
  const int chunk = max(kMinChunk, (s.n_pos + kSplits - 1) / kSplits);
  s.active = (s.n_pos + chunk - 1) / chunk;  // <= kSplits
  s.p_begin = split * chunk;
  s.p_end = min(s.n_pos, s.p_begin + chunk);
  return s;
}

template <int kG, int kD, int kSplits, int kThreads, bool kFirst, bool kOneFence>
struct AttentionMerge {
  static constexpr int kPartial = jllm::cuda::geometry::AttentionPartialFloats(kD);
  static constexpr int kPairs = (kG * kD + kThreads - 1) / kThreads;  // (head, d) per thread
  static constexpr int kMergeBatch = kFirst && kPairs <= 2 ? 16 : 8;  // registers: kPairs x this

  struct Smem {
    float weight[kG][kSplits];  // exp(max_split - max) per (head, split)
    float sums[kG][kSplits];
    float inv_sum[kG];
    unsigned ticket;
  };

  // The CTA's warps' (max, sum, unnormalized acc) per head merged in warp order — a warp without
  // positions has max -inf and weight 0 —, after the barrier that makes them visible: the output
  // itself if this is the only active split, else this split's partial.
  template <int kNw>
  static __device__ __forceinline__ void MergeWarps(const jllm::cuda::AttentionArgs& args, int hk, int split,
                                                    int active, const float (&accs)[kNw][kG][kD],
                                                    const float (&maxs)[kNw][kG], const float (&sums)[kNw][kG]) {
    for (int i = threadIdx.x; i < kG * kD; i += kThreads) {
      const int h = i / kD, d = i % kD;
      float mx = JLLM_NEG_INF;
#pragma unroll
      for (int w = 0; w < kNw; ++w) mx = fmaxf(mx, maxs[w][h]);
      float a = 0.f, sum = 0.f;
#pragma unroll
      for (int w = 0; w < kNw; ++w) {
        const float f = maxs[w][h] == JLLM_NEG_INF ? 0.f : expf(maxs[w][h] - mx);
        a = fmaf(accs[w][h][d], f, a);
        sum = fmaf(sums[w][h], f, sum);
      }
      if (active == 1) {
        args.out[(hk * kG + h) * kD + d] = a / sum;
      } else {
        float* part = args.partials + (static_cast<long long>(hk * kG + h) * kSplits + split) * kPartial;
        part[d] = a;
        if (d == 0) {
          part[kD] = mx;
          part[kD + 1] = sum;
        }
      }
    }
  }

  // Called by every thread of every CTA of kv head hk, after its partials are written. The last
  // resets the ticket and, if given, a counter of the CTAs' own (attention_mma.cu's grabs).
  static __device__ __forceinline__ void IfLast(const jllm::cuda::AttentionArgs& args, int hk, int active, Smem& sm,
                                                unsigned* also_reset = nullptr) {
    if constexpr (kOneFence) {
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        sm.ticket = atomicAdd(&args.counters[hk], 1u);
        if (sm.ticket == kSplits - 1) __threadfence();
      }
      __syncthreads();
      if (sm.ticket != kSplits - 1) return;
    } else {
      __threadfence();
      __syncthreads();
      if (threadIdx.x == 0) sm.ticket = atomicAdd(&args.counters[hk], 1u);
      __syncthreads();
      if (sm.ticket != kSplits - 1) return;
      __threadfence();
    }
    const float* parts = args.partials + static_cast<long long>(hk * kG) * kSplits * kPartial;
    // Batch sp0's accs into v (zeros past the active splits and the (head, d) pairs).
    float v[kPairs][kMergeBatch];
    auto load_batch = [&](int sp0) {
#pragma unroll
      for (int k = 0; k < kPairs; ++k) {
        const int i = threadIdx.x + kThreads * k, g = i / kD, d = i % kD;
#pragma unroll
        for (int b = 0; b < kMergeBatch; ++b) {
          v[k][b] = (i < kG * kD && sp0 + b < active)
                        ? jllm_load_l2_f32(parts + (g * kSplits + sp0 + b) * kPartial + d)
                        : 0.f;
        }
      }
    };
    if constexpr (kFirst) load_batch(0);  // in flight with the (max, sum)s below
    for (int i = threadIdx.x; i < kG * active; i += kThreads) {
      const int g = i / active, sp = i % active;
      sm.weight[g][sp] = jllm_load_l2_f32(parts + (g * kSplits + sp) * kPartial + kD);
      sm.sums[g][sp] = jllm_load_l2_f32(parts + (g * kSplits + sp) * kPartial + kD + 1);
    }
    __syncthreads();
    if (threadIdx.x < kG) {
      const int g = threadIdx.x;
      float mx = JLLM_NEG_INF;
      for (int sp = 0; sp < active; ++sp) mx = fmaxf(mx, sm.weight[g][sp]);
      float sum = 0.f;
      for (int sp = 0; sp < active; ++sp) {
        const float f = sm.weight[g][sp] == JLLM_NEG_INF ? 0.f : expf(sm.weight[g][sp] - mx);
        sm.weight[g][sp] = f;
        sum = fmaf(sm.sums[g][sp], f, sum);
      }
      sm.inv_sum[g] = 1.0f / sum;
    }
    __syncthreads();
    float a[kPairs];
#pragma unroll
    for (int k = 0; k < kPairs; ++k) a[k] = 0.f;
    for (int sp0 = 0; sp0 < active; sp0 += kMergeBatch) {
      if (!kFirst || sp0 > 0) load_batch(sp0);
#pragma unroll
      for (int k = 0; k < kPairs; ++k) {
        const int i = threadIdx.x + kThreads * k, g = i / kD;
        if (i >= kG * kD) continue;
#pragma unroll
        for (int b = 0; b < kMergeBatch; ++b) {
          if (sp0 + b < active) a[k] = fmaf(v[k][b], sm.weight[g][sp0 + b], a[k]);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < kPairs; ++k) {
      const int i = threadIdx.x + kThreads * k, g = i / kD, d = i % kD;
      if (i < kG * kD) args.out[(hk * kG + g) * kD + d] = a[k] * sm.inv_sum[g];
    }
    if (threadIdx.x == 0) {
      args.counters[hk] = 0;
      if (also_reset != nullptr) *also_reset = 0;
    }
  }
};

}  // namespace jllm_kernels
