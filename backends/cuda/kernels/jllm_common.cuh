// Device helpers shared by the jllm kernels. Self-contained on purpose: NVRTC compiles the kernels
// without the CUDA toolkit headers, so fp16 conversion and the cache-hinted loads are inline PTX.
#pragma once

typedef unsigned char jllm_u8;
typedef unsigned short jllm_u16;
typedef unsigned int jllm_u32;

// IEEE binary16 bits -> f32 (exact).
__device__ __forceinline__ float jllm_half_to_float(jllm_u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// 16-byte weight load that streams past L1: each weight byte is read once per launch, so keeping
// it in L1 would only evict the activations. `p` must be 16-byte aligned.
__device__ __forceinline__ uint4 jllm_load_stream16(const void* p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ jllm_u32 jllm_smem_addr(const void* p) {
  return static_cast<jllm_u32>(__cvta_generic_to_shared(p));
}

// Asynchronous 16-byte global -> shared copy (sm_80+), bypassing L1 and registers. Copies
// `src_bytes` (0..16) and zero-fills the rest, so a tail chunk never reads past the tensor.
__device__ __forceinline__ void jllm_cp_async16(void* smem_dst, const void* gmem_src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(jllm_smem_addr(smem_dst)),
               "l"(gmem_src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void jllm_cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most N of this thread's committed copy groups are still in flight.
template <int N>
__device__ __forceinline__ void jllm_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

__device__ __forceinline__ float jllm_warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Byte `b` (0..3) of `w`, where every byte is < 128, as the float 0.5 + byte/256: the byte becomes
// the top mantissa bits under exponent 2^-1. One PRMT instead of an int->float conversion; the
// caller removes the 0.5 offset with the sum of the activations it multiplied.
template <int B>
__device__ __forceinline__ float jllm_byte_as_half_plus(jllm_u32 w) {
  return __int_as_float(static_cast<int>(__byte_perm(w, 0x3F000000u, 0x7044u | (B << 8))));
}

// acc + sum over the 4 bytes b of w of (0.5 + byte_b/256) * x_b.
__device__ __forceinline__ float jllm_fma4_bytes(jllm_u32 w, float4 x, float acc) {
  acc = fmaf(jllm_byte_as_half_plus<0>(w), x.x, acc);
  acc = fmaf(jllm_byte_as_half_plus<1>(w), x.y, acc);
  acc = fmaf(jllm_byte_as_half_plus<2>(w), x.z, acc);
  return fmaf(jllm_byte_as_half_plus<3>(w), x.w, acc);
}

__device__ __forceinline__ float jllm_sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// Copies x (COLS floats, 16-byte aligned) into shared memory as float4 slots in the order the
// kernel's lanes read them: slot_of(e) gives the slot of x[e..e+3] as part * UNITS + unit, so
// that 8 lanes reading their part p of 8 consecutive units touch 8 distinct bank groups.
template <int kCols, int kThreads, typename SlotOf>
__device__ __forceinline__ void jllm_stage_x(const float* __restrict__ x, float4* xs,
                                             SlotOf slot_of) {
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int i = threadIdx.x; i < kCols / 4; i += kThreads) xs[slot_of(4 * i)] = x4[i];
}
