// RMSNorm of each token's row: y = x / sqrt(mean(x²) + eps) · gamma, with cpu_ref's rounding
// (squares in f32 summed in double, the scale in f32). One CTA per token.
//
// Constants (-D): JLLM_E (row width).
#include "kernel_args.h"
#include "jllm_common.cuh"

namespace {
constexpr int kE = JLLM_E;
}  // namespace

JLLM_KERNEL(rms_norm, jllm::cuda::RmsNormArgs, 256, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  __shared__ double scratch[32];
  const float* x = args.x + static_cast<long long>(blockIdx.x) * kE;
  float* y = args.y + static_cast<long long>(blockIdx.x) * kE;
  const float scale = jllm_rms_scale(jllm_sum_squares(x, kE, scratch), kE, args.eps);
  for (int i = threadIdx.x; i < kE; i += blockDim.x) y[i] = x[i] * scale * args.gamma[i];
}
