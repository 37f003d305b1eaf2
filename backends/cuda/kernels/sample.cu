// Samples the next token from one row of logits on the device, with exactly the semantics of
// backends/sampling.cc (penalties -> top-k -> top-p -> min-p -> temperature -> counter-based draw),
// and advances the step state: a decode step copies back nothing but the token id.
//
// Every filter keeps a prefix of the candidates sorted by (logit desc, id asc), so no sort is
// needed: with key(i) = order(logit_i) << 32 | ~i (larger key = earlier), each stage is "the
// first candidate at which a cumulative weight reaches a target" — weight 1 for top-k, the
// softmax mass for top-p and for the draw — found by a radix select over the 64-bit keys
// (8 bits a pass, histograms of count and weight in shared memory, done as soon as the chosen
// bucket holds one element). One CTA; a few passes over the row, which sits in L2. Greedy
// draws without penalties (decode's default) need only the best key: kSampleCtas CTAs scan a
// slice each and the last of them to finish takes the best of their keys (a single CTA took
// ~11 us a step to read 151,936 logits; docs/PERF.md).
//
// Constants (-D): JLLM_VOCAB.
#include "backends/sampling_params.h"
#include "draw_keys.cuh"
#include "kernel_args.h"
#include "launch_geometry.h"
#include "jllm_common.cuh"

namespace {

using jllm_kernels::DrawIdOf;
using jllm_kernels::DrawKeyOf;

constexpr int kV = JLLM_VOCAB;
constexpr int kThreads = jllm::cuda::geometry::kSampleThreads;
constexpr int kWarps = kThreads / 32;

// A logit as the sampler sees it: NaN ranks last, as -infinity (cpu: SortedCandidates).
__device__ __forceinline__ float Logit(const float* lg, int i) {
  const float l = lg[i];
  return l != l ? JLLM_NEG_INF : l;
}


struct Shared {
  double hist_w[256];
  unsigned hist_c[256];
  double warp_d[kWarps];
  jllm_u64 chosen;     // the selected key (or its prefix while selecting)
  double above;        // weight of the members before the current bucket
  int digit;
  jllm_kernels::DrawShared draw;  // the greedy draw's
};

// The largest key K among members with key >= floor (and logit >= min_logit) such that the
// weight of the members with key >= K reaches `target` (> target if strict); if none does, the
// smallest member key. weights == nullptr: every member weighs 1.
__device__ jllm_u64 SelectFirstReaching(const float* lg, const double* weights, jllm_u64 floor,
                                        double min_logit, double target, bool strict, Shared& sh) {
  const int tid = threadIdx.x, lane = tid & 31;
  jllm_u64 prefix = 0;
  double above = 0;
#pragma unroll 1
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = tid; b < 256; b += kThreads) {
      sh.hist_w[b] = 0;
      sh.hist_c[b] = 0;
    }
    __syncthreads();
    const jllm_u64 upper_mask = shift == 56 ? 0ull : (~0ull << (shift + 8));
    for (int i = tid; i < kV; i += kThreads) {
      const float l = Logit(lg, i);
      const jllm_u64 key = DrawKeyOf(l, i);
      if (key < floor || static_cast<double>(l) < min_logit) continue;
      if ((key & upper_mask) != (prefix & upper_mask)) continue;
      const int b = static_cast<int>((key >> shift) & 255);
      atomicAdd(&sh.hist_c[b], 1u);
      atomicAdd(&sh.hist_w[b], weights ? weights[i] : 1.0);
    }
    __syncthreads();
    if (tid < 32) {
      // Lane l scans buckets 255-8l down to 248-8l; an exclusive scan gives what lies above.
      double seg = 0;
      for (int j = 0; j < 8; ++j) seg += sh.hist_w[255 - 8 * lane - j];
      double excl = seg;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const double v = __shfl_up_sync(0xffffffffu, excl, o);
        if (lane >= o) excl += v;
      }
      excl -= seg;
      int hit = -1, last_nonempty = -1;
      double cum = above + excl, cum_at_hit = 0, cum_at_last = 0;
      for (int j = 0; j < 8; ++j) {
        const int b = 255 - 8 * lane - j;
        if (sh.hist_c[b] == 0) continue;
        const double next = cum + sh.hist_w[b];
        if (hit < 0 && (strict ? next > target : next >= target)) {
          hit = b;
          cum_at_hit = cum;
        }
        last_nonempty = b;
        cum_at_last = cum;
        cum = next;
      }
      const unsigned hits = __ballot_sync(0xffffffffu, hit >= 0);
      const unsigned nonempty = __ballot_sync(0xffffffffu, last_nonempty >= 0);
      if (hits != 0) {
        const int src = __ffs(hits) - 1;  // lowest lane: highest buckets
        const int b = __shfl_sync(0xffffffffu, hit, src);
        const double c = __shfl_sync(0xffffffffu, cum_at_hit, src);
        if (lane == 0) {
          sh.digit = b;
          sh.above = c;
        }
      } else {
        const int src = 31 - __clz(nonempty);  // highest lane: lowest buckets
        const int b = __shfl_sync(0xffffffffu, last_nonempty, src);
        const double c = __shfl_sync(0xffffffffu, cum_at_last, src);
        if (lane == 0) {
          sh.digit = b;
          sh.above = c;
        }
      }
    }
    __syncthreads();
    const int digit = sh.digit;
    above = sh.above;
    prefix |= static_cast<jllm_u64>(digit) << shift;
    const unsigned in_bucket = sh.hist_c[digit];
    __syncthreads();
    if (in_bucket == 1 && shift > 0) {
      // One member left with this prefix: find it.
      const jllm_u64 mask = ~0ull << shift;
      for (int i = tid; i < kV; i += kThreads) {
        const float l = Logit(lg, i);
        const jllm_u64 key = DrawKeyOf(l, i);
        if (key < floor || static_cast<double>(l) < min_logit) continue;
        if ((key & mask) == prefix) sh.chosen = key;
      }
      __syncthreads();
      return sh.chosen;
    }
  }
  return prefix;
}

constexpr int kV4 = kV / 4;

// The largest key among logits [4 * b4, 4 * e4) and, where e4 is the last float4, the ones past
// it: this thread's share. The row is read as float4, kMaxLoads of them in flight per thread (a
// plain strided loop kept a load or two in flight and cost ~20-30 us a step; docs/PERF.md).
__device__ jllm_u64 BestKeyIn(const float* lg, int b4, int e4) {
  const int tid = threadIdx.x;
  constexpr int kMaxLoads = 8;
  jllm_u64 best = 0;
  const float4* lg4 = reinterpret_cast<const float4*>(lg);  // the logits row and `work` are 16-byte aligned
  for (int i0 = b4 + tid; i0 < e4; i0 += kThreads * kMaxLoads) {
    float4 v[kMaxLoads];
#pragma unroll
    for (int u = 0; u < kMaxLoads; ++u) {
      const int i = i0 + u * kThreads;
      if (i < e4) v[u] = lg4[i];
    }
#pragma unroll
    for (int u = 0; u < kMaxLoads; ++u) {
      const int i = i0 + u * kThreads;
      if (i >= e4) continue;
      const float e[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const jllm_u64 k = DrawKeyOf(e[c] != e[c] ? JLLM_NEG_INF : e[c], 4 * i + c);  // as Logit()
        best = k > best ? k : best;
      }
    }
  }
  if (e4 == kV4) {
    for (int i = 4 * kV4 + tid; i < kV; i += kThreads) {
      const jllm_u64 k = DrawKeyOf(Logit(lg, i), i);
      best = k > best ? k : best;
    }
  }
  return best;
}

}  // namespace

JLLM_KERNEL(sample, jllm::cuda::SampleArgs, kThreads, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  __shared__ Shared sh;
  const jllm::SamplingParams& p = *static_cast<const jllm::SamplingParams*>(args.params);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int pos = args.state->pos;  // position of the token whose logits these are
  const unsigned serial = args.state->serial + 1;

  if (p.GreedyWithoutPenalties()) {
    // Greedy: this CTA's slice of the row, then a ticket; the last CTA takes the best key.
    const int b4 = static_cast<int>(static_cast<long long>(kV4) * blockIdx.x / gridDim.x);
    const int e4 = static_cast<int>(static_cast<long long>(kV4) * (blockIdx.x + 1) / gridDim.x);
    jllm_kernels::FinishGreedyDraw(BestKeyIn(args.logits, b4, e4), reinterpret_cast<jllm_u64*>(args.weights),
                                   args.stamps + jllm::cuda::geometry::SampleTicketWord(kV), args.state, sh.draw);
    return;
  }
  if (blockIdx.x != 0) return;  // every other draw: one CTA

  // The penalties over the distinct ids among the last repeat_last_n context tokens: the thread
  // that stamps an id first penalizes it, counting its occurrences in the window.
  const float* lg = args.logits;
  if (p.Penalizes()) {
    for (int i = tid; i < kV; i += kThreads) args.work[i] = lg[i];
    __syncthreads();
    const int first = max(0, pos + 1 - p.repeat_last_n);
    for (int q = first + tid; q <= pos; q += kThreads) {
      const int id = args.ctx_tokens[q];
      if (id < 0 || id >= kV) continue;
      if (atomicExch(&args.stamps[id], serial) == serial) continue;  // seen in this window
      float l = args.work[id];
      l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
      if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
        int n = 0;
        for (int r = first; r <= pos; ++r) n += args.ctx_tokens[r] == id ? 1 : 0;
        l -= static_cast<float>(n) * p.frequency_penalty + p.presence_penalty;
      }
      args.work[id] = l;
    }
    __threadfence_block();
    __syncthreads();
    lg = args.work;
  }

  // The best key: the greedy choice, and the max logit for the softmax.
  jllm_u64 best = BestKeyIn(lg, 0, kV4);
  best = jllm_kernels::CtaMaxKey(best, sh.draw);
  jllm_u64 chosen = best;

  if (p.temperature > 0.0f) {
    const double best_logit = Logit(lg, DrawIdOf(best));
    const bool uniform = best_logit == static_cast<double>(JLLM_NEG_INF);  // every logit masked
    jllm_u64 floor = 0;
    if (p.top_k > 0 && p.top_k < kV) {
      floor = SelectFirstReaching(lg, nullptr, 0, static_cast<double>(JLLM_NEG_INF), p.top_k, false, sh);
    }
    // Softmax weights of the members at temperature t (cpu: exp((l - max) / t) in double).
    auto weigh = [&](double t, double min_logit) {
      double local = 0;
      for (int i = tid; i < kV; i += kThreads) {
        const float l = Logit(lg, i);
        const bool member = DrawKeyOf(l, i) >= floor && static_cast<double>(l) >= min_logit;
        const double w = !member ? 0.0 : uniform ? 1.0 : exp((static_cast<double>(l) - best_logit) / t);
        args.weights[i] = w;
        local += w;
      }
      __threadfence_block();
      return jllm_block_sum_d(local, sh.warp_d);
    };
    if (p.top_p < 1.0f) {
      const double z = weigh(1.0, static_cast<double>(JLLM_NEG_INF));
      floor = SelectFirstReaching(lg, args.weights, floor, static_cast<double>(JLLM_NEG_INF),
                                  static_cast<double>(p.top_p) * z, false, sh);
    }
    double min_logit = static_cast<double>(JLLM_NEG_INF);
    if (p.min_p > 0.0f) min_logit = best_logit + log(static_cast<double>(p.min_p));
    const double z = weigh(static_cast<double>(p.temperature), min_logit);
    const double u = jllm::SampleUniform(p.seed, static_cast<jllm_u64>(pos) + 1);
    chosen = SelectFirstReaching(lg, args.weights, floor, min_logit, u * z, true, sh);
  }

  if (tid == 0) jllm_kernels::AdvanceStep(args.state, DrawIdOf(chosen), pos, serial);
}
