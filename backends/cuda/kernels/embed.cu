// Token embedding: y[t] = row tokens[t] of the table, dequantized exactly as cpu_ref does
// (weight_types.cuh Dequant8), for the T tokens of a step. It also records each token at its
// position in ctx_tokens, the context the sampler's repetition penalty looks back on, and flags
// an out-of-vocabulary id in the step state rather than reading past the table.
//
// Constants (-D): JLLM_TYPE (table type), JLLM_E (row width), JLLM_V (rows).
#include "kernel_args.h"
#include "weight_types.cuh"

namespace {

using namespace jllm_kernels;

constexpr int kType = JLLM_TYPE;
constexpr int kE = JLLM_E;
constexpr int kV = JLLM_V;
constexpr long long kRowStride = jllm::cuda::layout::RowStride(kType, kE);
static_assert(kE % 8 == 0, "rows are dequantized 8 elements at a time");

}  // namespace

JLLM_KERNEL(embed, jllm::cuda::EmbedArgs, 256, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  const int t = blockIdx.x;
  const int token = args.tokens[t];
  float* y = args.y + static_cast<long long>(t) * kE;
  if (token < 0 || token >= kV) {
    if (threadIdx.x == 0) atomicOr(&args.state->error, jllm::cuda::kStepErrorTokenRange);
    for (int e = threadIdx.x; e < kE; e += blockDim.x) y[e] = 0.f;
    return;
  }
  if (threadIdx.x == 0 && args.pos != nullptr) args.ctx_tokens[args.pos[t]] = token;
  const jllm_u8* row = static_cast<const jllm_u8*>(args.table) + token * kRowStride;
  for (int e = 8 * threadIdx.x; e < kE; e += 8 * blockDim.x) {
    float v[8];
    Dequant8<kType, kE>(row, e, v);
#pragma unroll
    for (int i = 0; i < 8; ++i) y[e + i] = v[i];
  }
}
