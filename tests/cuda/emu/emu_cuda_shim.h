// Host stand-ins for the CUDA builtins the jllm kernels use, so that the real kernel sources
// compile with g++ (-DJLLM_EMULATE -include this file) into a shared object that runs a launch
// on the CPU: every CUDA thread of a CTA is a host thread, CTAs run one after another, and
// __syncthreads and the warp operations are barriers. Semantics the kernels rely on are kept:
// a thread that returns stops counting for the barriers (as an exited CUDA thread does), the
// dynamic shared memory starts with garbage, atomics are atomic, misaligned vector loads trap.
//
// The object exports emu_launch(); tests/cuda/emu/emu_device.cc loads and calls it.
#pragma once

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) alignas(n)

struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct float4 { float x, y, z, w; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }

inline thread_local dim3 threadIdx, blockIdx;
inline dim3 gridDim, blockDim;

// ---- the CTA being run ----------------------------------------------------------------------

struct EmuCta {
  std::unique_ptr<std::barrier<>> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<uint64_t> slots;  // one per thread: a warp exchange's values
  std::vector<unsigned char> smem;
};
inline EmuCta* emu_cta = nullptr;

inline unsigned char* emu_dynamic_smem() { return emu_cta->smem.data(); }

[[noreturn]] inline void __trap() {
  std::fprintf(stderr, "emulated kernel: __trap()\n");
  std::abort();
}
inline void emu_check_aligned(const void* p, uintptr_t n) {
  if (reinterpret_cast<uintptr_t>(p) % n != 0) {
    std::fprintf(stderr, "emulated kernel: misaligned %u-byte access at %p\n", unsigned(n), p);
    std::abort();
  }
}

inline void __syncthreads() { emu_cta->block->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_cta->warps[threadIdx.x / 32]->arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// A warp exchange: every lane publishes 8 bytes, then reads another lane's.
template <class T>
T emu_exchange(T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "8-byte slots");
  const unsigned tid = threadIdx.x, warp0 = tid / 32 * 32;
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  emu_cta->slots[tid] = bits;
  __syncwarp();
  const uint64_t got = emu_cta->slots[warp0 + (src_lane & 31)];
  __syncwarp();
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) { return emu_exchange(v, (threadIdx.x & 31) ^ mask); }
template <class T>
T __shfl_sync(unsigned, T v, int lane) { return emu_exchange(v, lane); }
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned delta) {
  const int lane = threadIdx.x & 31;
  const T other = emu_exchange(v, lane >= int(delta) ? lane - int(delta) : lane);
  return lane >= int(delta) ? other : v;
}
inline unsigned __ballot_sync(unsigned, int pred) {
  const unsigned tid = threadIdx.x, warp0 = tid / 32 * 32;
  emu_cta->slots[tid] = pred ? 1 : 0;
  __syncwarp();
  unsigned out = 0;
  for (unsigned l = 0; l < 32; ++l) out |= (emu_cta->slots[warp0 + l] & 1u) << l;
  __syncwarp();
  return out;
}
inline int __all_sync(unsigned m, int pred) { return __ballot_sync(m, pred) == 0xffffffffu; }

// ---- atomics ----------------------------------------------------------------------------------
template <class T>
T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
inline unsigned atomicOr(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_or(v); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).exchange(v); }

// ---- arithmetic and bits -------------------------------------------------------------------
using std::max;
using std::min;
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned char b[8];
  std::memcpy(b, &x, 4);
  std::memcpy(b + 4, &y, 4);
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= unsigned(b[(s >> (4 * i)) & 7]) << (8 * i);
  return r;
}
inline int __ffs(unsigned x) { return x == 0 ? 0 : __builtin_ctz(x) + 1; }
inline int __clz(unsigned x) { return x == 0 ? 32 : __builtin_clz(x); }

inline float emu_half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0) {
    const float mag = float(man) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  uint32_t bits = exp == 31 ? (sign | 0x7F800000u | (man << 13)) : (sign | ((exp + 112) << 23) | (man << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// Round to nearest even, as cvt.rn.f16.f32.
inline uint16_t emu_float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return uint16_t(sign | 0x7E00u);  // NaN
  if (abs >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // rounds to infinity
  if (abs < 0x38800000u) {                                   // subnormal or zero in f16
    const float a = std::fabs(f) * 0x1p24f;                   // exact scaling; nearbyint rounds to even
    return uint16_t(sign | uint32_t(std::nearbyint(a)));
  }
  const uint32_t mant = abs & 0x7FFFFFu;
  uint32_t h = ((abs >> 23) - 112) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return uint16_t(sign | h);
}

// ---- the launch ----------------------------------------------------------------------------

extern "C" int emu_launch(void (*entry)(const void*), unsigned gx, unsigned gy, unsigned gz,
                          unsigned threads, size_t smem, const void* args) {
  if (threads == 0 || threads > 1024 || threads % 32 != 0) return 1;
  const dim3 grid{gx, gy, gz}, block{threads, 1, 1};
  gridDim = grid;
  blockDim = block;
  const unsigned n = block.x;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        EmuCta cta;
        cta.block = std::make_unique<std::barrier<>>(n);
        for (unsigned w = 0; w < n / 32; ++w) cta.warps.push_back(std::make_unique<std::barrier<>>(32));
        cta.slots.assign(n, 0);
        cta.smem.assign(smem + 16, 0xA5);  // garbage, as uninitialised shared memory is
        emu_cta = &cta;
        std::vector<std::thread> threads;
        threads.reserve(n);
        for (unsigned t = 0; t < n; ++t) {
          threads.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            blockIdx = {x, y, z};
            entry(args);
            // An exited thread no longer holds up barriers.
            emu_cta->warps[t / 32]->arrive_and_drop();
            emu_cta->block->arrive_and_drop();
          });
        }
        for (auto& th : threads) th.join();
        emu_cta = nullptr;
      }
    }
  }
  return 0;
}
