// L2 prefetch probe (jllm-bench --probe l2-prefetch): asks L2 for [src, src + bytes) in one of
// the forms a kernel could use to warm the weights of a later kernel (L2PrefetchForm,
// kernel_args.h); the host then times a read of the buffer against a cold and a warm one.
// The prefetch forms bring nothing into the SM; the loading forms fold what they read into one
// word per CTA so that their loads cannot be dropped. CTA 0 may then hold the kernel open, so
// that a read launched behind it starts that long after the prefetches were issued.
#include "jllm_common.cuh"
#include "kernel_args.h"

namespace {

__device__ __forceinline__ unsigned long long ProbeNowNs() {
#if defined(JLLM_EMULATE)
  return emu_now_ns();
#else
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}

}  // namespace

JLLM_KERNEL(l2_prefetch_probe, jllm::cuda::L2PrefetchProbeArgs, 256, 1) {
  namespace cu = jllm::cuda;
  const char* src = static_cast<const char*>(args.src);
  const unsigned long long threads = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long start = ProbeNowNs();
  jllm_u32 acc = 0;
  switch (args.form) {
    case cu::kL2PrefetchLoad:
      for (unsigned long long o = t * 16; o < args.bytes; o += threads * 16) {
        const uint4 v = jllm_load_stream16(src + o);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
      }
      break;
    case cu::kL2PrefetchLine:
      for (unsigned long long o = t * 128; o < args.bytes; o += threads * 128) jllm_prefetch_l2(src + o);
      break;
    case cu::kL2PrefetchLineEvictLast:
      for (unsigned long long o = t * 128; o < args.bytes; o += threads * 128) jllm_prefetch_l2_evict_last(src + o);
      break;
    case cu::kL2PrefetchLoad256:
      for (unsigned long long o = t * 256; o < args.bytes; o += threads * 256) acc ^= jllm_load_l2_256(src + o);
      break;
    case cu::kL2PrefetchBulk: {
#if JLLM_HAS_BULK_COPY
      // The CTA's share in chunks, chunk k issued by thread k % blockDim.x.
      const unsigned long long lo = args.bytes * blockIdx.x / gridDim.x / 16 * 16;
      const unsigned long long hi = args.bytes * (blockIdx.x + 1) / gridDim.x / 16 * 16;
      for (unsigned long long o = lo + static_cast<unsigned long long>(threadIdx.x) * args.chunk; o < hi;
           o += static_cast<unsigned long long>(blockDim.x) * args.chunk) {
        jllm_prefetch_l2_bulk(src + o, static_cast<unsigned>(hi - o < args.chunk ? hi - o : args.chunk));
      }
#endif
      break;
    }
    default:
      break;
  }
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    while (ProbeNowNs() - start < args.spin_ns) {
    }
  }
  jllm_cta_xor_store(acc, args.out);
}
