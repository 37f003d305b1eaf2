// Device helpers shared by the jllm kernels.
//
// Self-contained on purpose: NVRTC compiles the kernels without the CUDA toolkit headers, so fp16
// conversion and the cache-hinted loads are inline PTX. Every such helper also has a plain C++
// body under JLLM_EMULATE, the build in which tests/cuda/emu/ compiles the very same kernel
// sources with g++ and runs them on the CPU (one host thread per CUDA thread); that is why a
// kernel never writes inline asm or `extern __shared__` itself but goes through this file.
#pragma once

#if defined(JLLM_EMULATE)
#include <atomic>
#include <cmath>
#include <cstring>
#endif

typedef unsigned char jllm_u8;
typedef signed char jllm_i8;
typedef unsigned short jllm_u16;
typedef unsigned int jllm_u32;
typedef int jllm_i32;
typedef unsigned long long jllm_u64;
typedef long long jllm_i64;

// A kernel takes one argument struct by value (shared with the host in *_args.h).
#if defined(JLLM_EMULATE)
#define JLLM_KERNEL(name, Args, max_threads, min_blocks)                          \
  extern "C" void name(const Args args);                                          \
  extern "C" void name##_emu_entry(const void* a) { name(*static_cast<const Args*>(a)); } \
  extern "C" void name(const Args args)
#else
#define JLLM_KERNEL(name, Args, max_threads, min_blocks) \
  extern "C" __global__ void __launch_bounds__(max_threads, min_blocks) name(const Args args)
#endif

// The launch's dynamic shared memory, as an array of T (16-byte aligned).
#if defined(JLLM_EMULATE)
#define JLLM_DYNAMIC_SMEM(T, name) T* name = reinterpret_cast<T*>(emu_dynamic_smem())
#else
#define JLLM_DYNAMIC_SMEM(T, name) extern __shared__ __align__(16) T name[]
#endif

// ---- programmatic dependent launch (sm_90) ---------------------------------------------------
// A kernel launched with programmatic stream serialization may start while its predecessor in
// the stream still runs. Before JLLM_GRID_WAIT it may only read what no earlier kernel of the
// step writes (weights, cache rows of earlier positions); after it, everything the predecessor
// wrote is visible. Every thread passes the wait before its first global write or read of an
// activation. JLLM_LAUNCH_DEPENDENTS lets the successor start its own prologue. Both are no-ops
// before sm_90, without the launch attribute, and in the CPU emulation.
#if defined(JLLM_EMULATE) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
#define JLLM_GRID_WAIT() ((void)0)
#define JLLM_LAUNCH_DEPENDENTS() ((void)0)
#else
#define JLLM_GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define JLLM_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" :::)
#endif

// ---- number formats -------------------------------------------------------------------------

// -infinity (not a constant expression in CUDA: __int_as_float is a device intrinsic).
#define JLLM_NEG_INF (-__int_as_float(0x7f800000))

// IEEE binary16 bits -> f32 (exact).
__device__ __forceinline__ float jllm_half_to_float(jllm_u16 h) {
#if defined(JLLM_EMULATE)
  return emu_half_to_float(h);
#else
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

// f32 -> IEEE binary16 bits, round to nearest even (as quant::F32ToFp16).
__device__ __forceinline__ jllm_u16 jllm_float_to_half(float f) {
#if defined(JLLM_EMULATE)
  return emu_float_to_half(f);
#else
  jllm_u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#endif
}

// bfloat16 bits -> f32 (exact).
__device__ __forceinline__ float jllm_bf16_to_float(jllm_u16 h) {
  return __uint_as_float(static_cast<jllm_u32>(h) << 16);
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

// c + the dot product of the four signed bytes of a and of b.
__device__ __forceinline__ int jllm_dp4a(jllm_u32 a, jllm_u32 b, int c) {
#if defined(JLLM_EMULATE)
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>(static_cast<jllm_i8>((a >> (8 * i)) & 0xFF)) *
         static_cast<int>(static_cast<jllm_i8>((b >> (8 * i)) & 0xFF));
  }
  return c;
#else
  int d;
  asm("dp4a.s32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#endif
}

__device__ __forceinline__ int jllm_dp4a4(const jllm_u32 (&a)[4], uint4 b) {
  return jllm_dp4a(a[3], b.w, jllm_dp4a(a[2], b.z, jllm_dp4a(a[1], b.y, jllm_dp4a(a[0], b.x, 0))));
}

__device__ __forceinline__ float jllm_sum4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// Order-preserving map of a float to an unsigned key (larger float, larger key); NaN maps as
// -infinity, so it never wins a comparison.
__device__ __forceinline__ jllm_u32 jllm_float_order_key(float f) {
  if (f != f) f = JLLM_NEG_INF;
  const jllm_u32 bits = __float_as_uint(f);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// ---- memory --------------------------------------------------------------------------------

// 16-byte weight load that streams past L1: each weight byte is read once per launch, so keeping
// it in L1 would only evict the activations. `p` must be 16-byte aligned.
__device__ __forceinline__ uint4 jllm_load_stream16(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 16);
  uint4 v;
  std::memcpy(&v, p, 16);
  return v;
#else
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
#endif
}

// 4-byte load of read-only data through the non-coherent path (kept in L1).
__device__ __forceinline__ jllm_u32 jllm_load_ro32(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 4);
  jllm_u32 v;
  std::memcpy(&v, p, 4);
  return v;
#else
  return __ldg(static_cast<const unsigned int*>(p));
#endif
}

// A float another CTA of this launch wrote (after its __threadfence): read from L2, past this
// SM's L1, which may hold a stale line. Not volatile, so the compiler can issue many at once.
__device__ __forceinline__ float jllm_load_l2_f32(const float* p) {
#if defined(JLLM_EMULATE)
  return std::atomic_ref<const float>(*p).load(std::memory_order_relaxed);
#else
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
#endif
}

__device__ __forceinline__ jllm_u16 jllm_load_u16(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 2);
  jllm_u16 v;
  std::memcpy(&v, p, 2);
  return v;
#else
  return *static_cast<const jllm_u16*>(p);
#endif
}

// ---- warp and block reductions ---------------------------------------------------------------

__device__ __forceinline__ float jllm_warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ double jllm_warp_sum_d(double v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float jllm_warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole CTA (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// `scratch` holds 32 doubles of shared memory; the call begins and ends with a barrier.
__device__ __forceinline__ double jllm_block_sum_d(double v, double* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = jllm_warp_sum_d(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < warps; ++w) total += scratch[w];  // fixed order: deterministic
  return total;
}

// Sum of squares of x[0..n) in double with a fixed order per thread, as cpu_ref's RMSNorm
// (each square rounded in f32, then accumulated in double).
__device__ __forceinline__ double jllm_sum_squares(const float* x, int n, double* scratch) {
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += static_cast<double>(x[i] * x[i]);
  return jllm_block_sum_d(s, scratch);
}

// 1/sqrt(mean + eps) of cpu_ref's RmsNormRow, from the sum of squares over n elements.
__device__ __forceinline__ float jllm_rms_scale(double sum_squares, int n, float eps) {
  const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
  return 1.0f / sqrtf(mean + eps);
}
