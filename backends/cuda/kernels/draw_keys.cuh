// The greedy draw's order, shared by the sampler (sample.cu) and the logits GEMV that draws
// greedily in its epilogue (gemv.cu, JLLM_ARGMAX): a candidate is the 64-bit key
// order(logit) << 32 | ~id, so the larger key is the larger logit and, on ties, the lower id
// (backends/sampling.cc's order); NaN ranks last, as -infinity. The best key of a row is then a
// plain maximum, whatever order the CTAs and lanes see the row in.
#pragma once

#include "jllm_common.cuh"
#include "kernel_args.h"
#include "launch_geometry.h"

namespace jllm_kernels {

__device__ __forceinline__ jllm_u64 DrawKeyOf(float logit, int id) {
  return (static_cast<jllm_u64>(jllm_float_order_key(logit)) << 32) | (0xFFFFFFFFu - static_cast<jllm_u32>(id));
}
__device__ __forceinline__ int DrawIdOf(jllm_u64 key) { return static_cast<int>(0xFFFFFFFFu - static_cast<jllm_u32>(key)); }

__device__ __forceinline__ jllm_u64 WarpMaxKey(jllm_u64 v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const jllm_u64 other = __shfl_xor_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

// The step state after the draw of `token` for the token at `pos`: the next step feeds it at
// pos + 1. `serial` is the state's count of draws plus one.
__device__ __forceinline__ void AdvanceStep(jllm::cuda::StepState* state, int token, int pos, unsigned serial) {
  state->token = token;
  state->pos = pos + 1;
  state->serial = serial;
}

// The end of a greedy draw spread over a grid, called by every thread of every CTA with its
// candidate key: the CTA's best goes to keys[its index] behind a ticket, and the last CTA to take
// one reduces all of them — each thread a few keys in one round trip, not one thread all of them
// in turn (132 dependent L2 round trips for the logits GEMV's grid) —, resets the ticket for the
// next launch and advances the step state.
struct DrawShared {
  jllm_u64 warp_keys[32];
  unsigned last;  // whether this CTA took the last ticket
};
static_assert(sizeof(DrawShared) == jllm::cuda::geometry::kDrawSharedBytes, "launch_geometry.h counts it");

__device__ __forceinline__ jllm_u64 CtaMaxKey(jllm_u64 v, DrawShared& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = WarpMaxKey(v);
  __syncthreads();  // warp_keys free (an earlier use)
  if (lane == 0) sh.warp_keys[warp] = v;
  __syncthreads();
  jllm_u64 best = 0;
  for (int w = 0; w < warps; ++w) best = sh.warp_keys[w] > best ? sh.warp_keys[w] : best;
  return best;
}

__device__ __forceinline__ void FinishGreedyDraw(jllm_u64 mine, jllm_u64* keys, unsigned* ticket,
                                                 jllm::cuda::StepState* state, DrawShared& sh) {
  const jllm_u64 cta_best = CtaMaxKey(mine, sh);
  if (threadIdx.x == 0) {
    keys[blockIdx.x] = cta_best;
    __threadfence();
    sh.last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!sh.last) return;  // (CTA-uniform)
  __threadfence();
  jllm_u64 v = 0;
  for (unsigned c = threadIdx.x; c < gridDim.x; c += blockDim.x) {
    const jllm_u64 k = jllm_load_l2_u64(keys + c);
    v = k > v ? k : v;
  }
  const jllm_u64 best = CtaMaxKey(v, sh);
  if (threadIdx.x == 0) {
    *ticket = 0;
    AdvanceStep(state, DrawIdOf(best), state->pos, state->serial + 1);
  }
}

}  // namespace jllm_kernels
