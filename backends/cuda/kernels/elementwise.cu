// Elementwise ops on f32 tensors: y = a + b (residual add) or y = silu(a)·b (SwiGLU), with
// silu(g) = g / (1 + e^-g) as cpu_ref computes it.
//
// Constants (-D): JLLM_OP (0 add, 1 swiglu).
#include "kernel_args.h"
#include "jllm_common.cuh"

JLLM_KERNEL(elementwise, jllm::cuda::ElementwiseArgs, 256, 1) {
  JLLM_GRID_WAIT();  // everything it reads comes from the kernels before
  JLLM_LAUNCH_DEPENDENTS();
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < args.n; i += stride) {
#if JLLM_OP == 0
    args.y[i] = args.a[i] + args.b[i];
#else
    const float g = args.a[i];
    args.y[i] = jllm_swiglu(g, args.b[i]);
#endif
  }
}
