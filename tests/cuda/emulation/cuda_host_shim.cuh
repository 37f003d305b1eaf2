// Host stand-ins for the CUDA builtins and PTX wrappers the jllm kernels use, so that the real
// kernel sources run on the CPU, one std::thread per CUDA thread (see run_emulation.sh). The rest
// of jllm_common.cuh (the plain CUDA C++ helpers) is appended to this file by the script.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>

struct uint4 { unsigned x, y, z, w; };
struct float4 { float x, y, z, w; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
extern thread_local dim3 threadIdx, blockIdx;
extern dim3 gridDim, blockDim;
extern unsigned char* emu_dynamic_smem;
extern unsigned emu_dynamic_smem_bytes;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
void __syncthreads();
float __shfl_xor_sync(unsigned, float v, int off);
unsigned __shfl_xor_sync(unsigned, unsigned v, int off);
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned char b[8];
  std::memcpy(b, &x, 4);
  std::memcpy(b + 4, &y, 4);
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= unsigned(b[(s >> (4 * i)) & 7]) << (8 * i);
  return r;
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const uint64_t v = (uint64_t(hi) << 32) | lo;
  return unsigned(v >> (shift & 31));
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
[[noreturn]] inline void __trap() { std::fprintf(stderr, "TRAP\n"); std::abort(); }

typedef unsigned char jllm_u8;
typedef unsigned short jllm_u16;
typedef unsigned int jllm_u32;

float emu_half_to_float(uint16_t h);
inline float jllm_half_to_float(jllm_u16 h) { return emu_half_to_float(h); }
inline uint4 jllm_load_stream16(const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % 16) __trap();
  uint4 v; std::memcpy(&v, p, 16); return v;
}
inline void jllm_cp_async16(void* dst, const void* src, int n) {
  if (reinterpret_cast<uintptr_t>(dst) % 16 || reinterpret_cast<uintptr_t>(src) % 16) __trap();
  std::memset(dst, 0, 16);
  std::memcpy(dst, src, n);
}
inline void jllm_cp_async_commit() {}
template <int N> inline void jllm_cp_async_wait() {}
inline float jllm_warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
