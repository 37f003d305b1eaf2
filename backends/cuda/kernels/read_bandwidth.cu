// Read-bandwidth probe for the benchmark: streams n16 16-byte words with the same L1-bypassing
// loads the GEMV kernels use, several in flight per thread, and writes one word per CTA so the
// loads cannot be dropped. Its GB/s is the ceiling a decode step is measured against.
#include "jllm_common.cuh"
#include "kernel_args.h"

JLLM_KERNEL(read_bandwidth, jllm::cuda::ReadBandwidthArgs, 256, 1) {
  constexpr int kUnroll = 4;
  const uint4* src = static_cast<const uint4*>(args.src);
  const unsigned long long n16 = args.n16;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  jllm_u32 acc = 0;
  for (; i + (kUnroll - 1) * stride < n16; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) v[k] = jllm_load_stream16(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  }
  for (; i < n16; i += stride) {
    const uint4 v = jllm_load_stream16(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  jllm_cta_xor_store(acc, args.out);
}
