// The greedy draw's order, shared by the sampler (sample.cu) and the logits GEMV that draws
// greedily in its epilogue (gemv.cu, JLLM_ARGMAX): a candidate is the 64-bit key
// order(logit) << 32 | ~id, so the larger key is the larger logit and, on ties, the lower id
// (backends/sampling.cc's order); NaN ranks last, as -infinity. The best key of a row is then a
// plain maximum, whatever order the CTAs and lanes see the row in.
#pragma once

#include "jllm_common.cuh"
#include "kernel_args.h"

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

// The end of a greedy draw spread over a grid: each CTA leaves its best key in keys[its index]
// and takes a ticket; the last to do so takes the best of all of them, resets the ticket for the
// next launch and advances the step state. Thread 0 of each CTA calls it (after the CTA's
// best is known); the CTA's other threads need not wait.
__device__ __forceinline__ void FinishGreedyDraw(jllm_u64 mine, jllm_u64* keys, unsigned* ticket,
                                                 jllm::cuda::StepState* state) {
  keys[blockIdx.x] = mine;
  __threadfence();
  if (atomicAdd(ticket, 1u) != gridDim.x - 1) return;  // not the last CTA
  __threadfence();
  jllm_u64 best = 0;
  for (unsigned c = 0; c < gridDim.x; ++c) {
    const jllm_u64 k = jllm_load_l2_u64(keys + c);
    best = k > best ? k : best;
  }
  *ticket = 0;
  AdvanceStep(state, DrawIdOf(best), state->pos, state->serial + 1);
}

}  // namespace jllm_kernels
