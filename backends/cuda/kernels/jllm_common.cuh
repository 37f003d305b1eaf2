// Device helpers shared by the jllm kernels.
//
// Self-contained on purpose: NVRTC compiles the kernels without the CUDA toolkit headers, so fp16
// conversion and the cache-hinted loads are inline PTX. Every such helper also has a plain C++
// body under JLLM_EMULATE, the build in which tests/cuda/emu/ compiles the very same kernel
// sources with g++ and runs them on the CPU (one host thread per CUDA thread); that is why a
// kernel never writes inline asm or `extern __shared__` itself but goes through this file.
#pragma once

#include "kernel_args.h"  // (TileMap: the emulation reads its own encoding)

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

// A kernel takes one argument struct by value (shared with the host in *_args.h), read in place
// (__grid_constant__: a tensor map in it is addressed where the launch put it). With
// JLLM_TRACE=<tag> (a measuring aid; the record's layout in kernel_trace.h) it also takes the
// step's trace buffer, and its body runs between a record of the CTA's entry and of its end; the
// grid wait, JLLM_TRACE_MARK() and JLLM_TRACE_STREAMED() stamp the same record.
#if defined(JLLM_TRACE) && JLLM_TRACE
#define JLLM_TRACING 1
#else
#define JLLM_TRACING 0
#endif
#if defined(JLLM_EMULATE) && JLLM_TRACING
#define JLLM_KERNEL(name, Args, max_threads, min_blocks)                                         \
  static void name##_body(const Args args);                                                       \
  extern "C" void name##_emu_entry(const void* a, jllm_u64* trace) {                              \
    jllm_trace_enter(trace);                                                                     \
    name##_body(*static_cast<const Args*>(a));                                                   \
    jllm_trace_exit();                                                                           \
  }                                                                                               \
  static void name##_body(const Args args)
#elif defined(JLLM_EMULATE)
#define JLLM_KERNEL(name, Args, max_threads, min_blocks)                          \
  extern "C" void name(const Args args);                                          \
  extern "C" void name##_emu_entry(const void* a, jllm_u64*) { name(*static_cast<const Args*>(a)); } \
  extern "C" void name(const Args args)
#elif JLLM_TRACING
#define JLLM_KERNEL(name, Args, max_threads, min_blocks)                                          \
  __device__ __forceinline__ void name##_body(const Args& args);                                  \
  extern "C" __global__ void __launch_bounds__(max_threads, min_blocks) name(const __grid_constant__ Args args, jllm_u64* trace) { \
    jllm_trace_enter(trace);                                                                      \
    name##_body(args);                                                                            \
    jllm_trace_exit();                                                                            \
  }                                                                                               \
  __device__ __forceinline__ void name##_body(const Args& args)
#else
#define JLLM_KERNEL(name, Args, max_threads, min_blocks) \
  extern "C" __global__ void __launch_bounds__(max_threads, min_blocks) name(const __grid_constant__ Args args)
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
// activation. JLLM_LAUNCH_DEPENDENTS lets the successor start its own prologue; every kernel
// calls it only after its own JLLM_GRID_WAIT, so when a kernel starts, every kernel before its
// predecessor is complete — what lets decode attention read the step state's position and most of
// its first cache tile before its wait (attention_merge.cuh, SplitOfStep). Both are no-ops before
// sm_90, without the launch attribute, and in the CPU emulation.
#if defined(JLLM_EMULATE) || !defined(__CUDA_ARCH__) || __CUDA_ARCH__ < 900
#define JLLM_GRID_WAIT_ONLY() ((void)0)
#define JLLM_LAUNCH_DEPENDENTS() ((void)0)
#else
#define JLLM_GRID_WAIT_ONLY() asm volatile("griddepcontrol.wait;" ::: "memory")
#define JLLM_LAUNCH_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" :::)
#endif

// ---- the in-step trace (JLLM_TRACE; kernel_trace.h has the record's layout) ---------------------
#if JLLM_TRACING
#include "kernel_trace.h"
// The CTA's record in the step's trace buffer (set by jllm_trace_enter for the whole CTA).
__shared__ jllm_u64* jllm_trace_rec;
// The SM a CTA runs on (the emulation: its resident slot, emu_launch's `resident`).
__device__ __forceinline__ jllm_u32 jllm_smid() {
#if defined(JLLM_EMULATE)
  return emu_smid();
#else
  jllm_u32 sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  return sm;
#endif
}
__device__ __forceinline__ jllm_u64 jllm_now_ns() {
#if defined(JLLM_EMULATE)
  return emu_now_ns();
#else
  jllm_u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#endif
}
// Thread 0 takes the next record (the buffer's first word counts them) and stamps the entry.
__device__ __forceinline__ void jllm_trace_enter(jllm_u64* trace) {
  if (threadIdx.x == 0) {
    jllm_u64* rec = nullptr;
    if (trace != nullptr) {
      namespace tr = jllm::cuda::trace;
      const jllm_u64 i = atomicAdd(trace, 1ull);
      if (i < trace[1]) {  // the buffer's capacity in records
        rec = trace + tr::kWords * (i + 1);
        rec[tr::kId] = (static_cast<jllm_u64>(JLLM_TRACE) << tr::kTagShift) |
                       (static_cast<jllm_u64>(blockIdx.y) << tr::kYShift) | blockIdx.x;
        rec[tr::kEntry] = jllm_now_ns();
        rec[tr::kWait] = rec[tr::kMark] = rec[tr::kExit] = rec[tr::kStreamed] = 0;
        rec[tr::kSm] = jllm_smid();
      }
    }
    jllm_trace_rec = rec;
  }
  __syncthreads();
}
__device__ __forceinline__ void jllm_trace_stamp(int field) {
  if (threadIdx.x == 0 && jllm_trace_rec != nullptr) jllm_trace_rec[field] = jllm_now_ns();
}
// The CTA's end: the last warp to leave its body (every lane comes back here, so no warp waits
// on one that returned early).
__device__ __forceinline__ void jllm_trace_exit() {
  __syncwarp();
  if ((threadIdx.x & 31) == 0 && jllm_trace_rec != nullptr) {
    atomicMax(jllm_trace_rec + jllm::cuda::trace::kExit, jllm_now_ns());
  }
}
__device__ __forceinline__ void jllm_grid_wait_traced() {
  JLLM_GRID_WAIT_ONLY();
  jllm_trace_stamp(jllm::cuda::trace::kWait);
}
#define JLLM_GRID_WAIT() jllm_grid_wait_traced()
#define JLLM_TRACE_MARK() jllm_trace_stamp(jllm::cuda::trace::kMark)
// Called by every lane of a warp: the CTA's record keeps the last warp's time.
#define JLLM_TRACE_STREAMED()                                                                   \
  do {                                                                                          \
    __syncwarp();                                                                               \
    if ((threadIdx.x & 31) == 0 && jllm_trace_rec != nullptr) {                                 \
      atomicMax(jllm_trace_rec + jllm::cuda::trace::kStreamed, jllm_now_ns());                  \
    }                                                                                           \
  } while (0)
#else
#define JLLM_GRID_WAIT() JLLM_GRID_WAIT_ONLY()
#define JLLM_TRACE_MARK() ((void)0)
#define JLLM_TRACE_STREAMED() ((void)0)
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

// c + the dot product of the four unsigned bytes of a and the four signed bytes of b.
__device__ __forceinline__ int jllm_dp4a_us(jllm_u32 a, jllm_u32 b, int c) {
#if defined(JLLM_EMULATE)
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>((a >> (8 * i)) & 0xFF) * static_cast<int>(static_cast<jllm_i8>((b >> (8 * i)) & 0xFF));
  }
  return c;
#else
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
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

// As jllm_load_l2_f32, 8 bytes.
__device__ __forceinline__ jllm_u64 jllm_load_l2_u64(const jllm_u64* p) {
#if defined(JLLM_EMULATE)
  return std::atomic_ref<const jllm_u64>(*p).load(std::memory_order_relaxed);
#else
  jllm_u64 v;
  asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
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

// ---- asynchronous copies global -> shared (sm_80 cp.async) ----------------------------------
// 16 bytes copied without passing through registers: the copy is in flight until a
// jllm_cp_async_wait retires its group, so the bytes in flight are bounded by shared memory,
// not by registers. Each thread's copies form groups (jllm_cp_async_commit); wait<N> returns
// when at most N of the thread's groups are pending. Copies are visible to the issuing thread
// after the wait and to other threads after a barrier (__syncwarp for a warp's own ring).
// Weights are streamed with .cg (L2 only). In the CPU emulation the copy happens at issue.
__device__ __forceinline__ void jllm_cp_async16(void* smem_dst, const void* gmem_src) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(smem_dst, 16);
  emu_check_aligned(gmem_src, 16);
  std::memcpy(smem_dst, gmem_src, 16);
#else
  asm volatile(
      "{\n\t.reg .u64 a;\n\tcvta.to.shared.u64 a, %0;\n\tcp.async.cg.shared.global [a], [%1], 16;\n\t}"
      :
      : "l"(smem_dst), "l"(gmem_src)
      : "memory");
#endif
}

__device__ __forceinline__ void jllm_cp_async_commit() {
#if !defined(JLLM_EMULATE)
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void jllm_cp_async_wait() {
#if !defined(JLLM_EMULATE)
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// ---- bulk asynchronous copies with an mbarrier (sm_90 cp.async.bulk) ------------------------
// One thread copies a whole contiguous span (16-byte aligned, a multiple of 16 bytes) into
// shared memory; the span's bytes complete a phase of an mbarrier, on which every consumer
// waits. JLLM_HAS_BULK_COPY says whether this build has them (sm_90, and the CPU emulation,
// where the copy happens at issue and a barrier counts its completed phases; every lane of a
// warp waits on each phase, so the emulated wait is a warp barrier first, and a wait on a phase
// that was never armed aborts instead of hanging).
#if defined(JLLM_EMULATE) || (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
#define JLLM_HAS_BULK_COPY 1
#else
#define JLLM_HAS_BULK_COPY 0
#endif

#if JLLM_HAS_BULK_COPY
#if !defined(JLLM_EMULATE)
__device__ __forceinline__ jllm_u32 jllm_smem_u32(const void* p) {
  jllm_u32 a;
  asm("{\n\t.reg .u64 t;\n\tcvta.to.shared.u64 t, %1;\n\tcvt.u32.u64 %0, t;\n\t}" : "=r"(a) : "l"(p));
  return a;
}
#endif

// An mbarrier expecting one arrival per phase; visible to the copy engine after the fence.
__device__ __forceinline__ void jllm_mbar_init(jllm_u64* bar) {
#if defined(JLLM_EMULATE)
  *bar = 0;  // completed phases
#else
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(jllm_smem_u32(bar)) : "memory");
#endif
}
__device__ __forceinline__ void jllm_mbar_init_fence() {
#if !defined(JLLM_EMULATE)
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// The one arrival of the barrier's current phase, which then completes when `bytes` of bulk
// copies have landed (0: at once).
__device__ __forceinline__ void jllm_mbar_arrive_expect(jllm_u64* bar, jllm_u32 bytes) {
#if defined(JLLM_EMULATE)
  (void)bytes;
  ++*bar;
#else
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(jllm_smem_u32(bar)), "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void jllm_bulk_copy(void* smem_dst, const void* gmem_src, jllm_u32 bytes, jllm_u64* bar) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(smem_dst, 16);
  emu_check_aligned(gmem_src, 16);
  if (bytes % 16 != 0) {
    std::fprintf(stderr, "emulated kernel: bulk copy of %u bytes, not a multiple of 16\n", bytes);
    std::abort();
  }
  std::memcpy(smem_dst, gmem_src, bytes);
  (void)bar;
#else
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   jllm_smem_u32(smem_dst)),
               "l"(gmem_src), "r"(bytes), "r"(jllm_smem_u32(bar))
               : "memory");
#endif
}

// The box of `map` (kernel_args.h, TileMap) whose first byte is byte 8·x0 of row y0, into shared
// memory at smem_dst (128-byte aligned, box_bytes × box_rows dense), completing `bar` with the
// whole box's bytes (its zeros past the matrix included). One thread issues it: the coordinates
// are uniform, so it is one instruction instead of a copy a row.
#if defined(JLLM_EMULATE)
// The emulation's checks of a tensor-map access (`what`: "copy" or "prefetch"): the map was
// encoded, the box begins at a 16-byte column of a row. Returns the map's box.
inline const jllm::cuda::TileBox& emu_tile_box(const void* map, int x0, int y0, const char* what) {
  const jllm::cuda::EmuTileMap* m = static_cast<const jllm::cuda::EmuTileMap*>(map);
  if (m->magic != jllm::cuda::kEmuTileMapMagic) {
    std::fprintf(stderr, "emulated kernel: tile %s through a tensor map that was never encoded\n", what);
    std::abort();
  }
  const long long x = 8ll * x0;
  if (x < 0 || y0 < 0 || x % 16 != 0) {
    std::fprintf(stderr, "emulated kernel: tile %s at byte %lld of row %d\n", what, x, y0);
    std::abort();
  }
  return m->box;
}
#endif

__device__ __forceinline__ void jllm_tile_copy(void* smem_dst, const void* map, int x0, int y0, jllm_u64* bar) {
#if defined(JLLM_EMULATE)
  const jllm::cuda::TileBox& b = emu_tile_box(map, x0, y0, "copy");
  emu_check_aligned(smem_dst, 128);
  const long long x = 8ll * x0;
  for (int r = 0; r < b.box_rows; ++r) {
    jllm_u8* dst = static_cast<jllm_u8*>(smem_dst) + static_cast<long long>(r) * b.box_bytes;
    const long long row = y0 + r;
    const long long n = row < b.rows ? (b.row_bytes - x < b.box_bytes ? b.row_bytes - x : b.box_bytes) : 0;
    const long long live = n > 0 ? n : 0;
    if (live > 0) std::memcpy(dst, static_cast<const jllm_u8*>(b.base) + row * b.row_stride + x, live);
    std::memset(dst + live, 0, b.box_bytes - live);
  }
  (void)bar;
#else
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(jllm_smem_u32(smem_dst)),
      "l"(map), "r"(x0), "r"(y0), "r"(jllm_smem_u32(bar))
      : "memory");
#endif
}

// The box jllm_tile_copy(…, map, x0, y0, …) would copy, asked of L2 only (sm_90): no bytes to
// the SM, nothing to wait on — a hint the GPU may drop. The emulation checks the map and the
// coordinates as the copy does and reads each live row's first byte (sanitizers).
__device__ __forceinline__ void jllm_tile_prefetch_l2(const void* map, int x0, int y0) {
#if defined(JLLM_EMULATE)
  const jllm::cuda::TileBox& b = emu_tile_box(map, x0, y0, "prefetch");
  const long long x = 8ll * x0;
  for (int r = 0; r < b.box_rows; ++r) {
    const long long row = y0 + r;
    if (row < b.rows && x < b.row_bytes) {
      (void)*(static_cast<const volatile unsigned char*>(b.base) + row * b.row_stride + x);
    }
  }
#else
  asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global.tile [%0, {%1, %2}];" ::"l"(map), "r"(x0), "r"(y0)
               : "memory");
#endif
}

// p rounded up to a multiple of `a` bytes in the shared-memory window (the dynamic array's base
// is only 16-byte aligned).
__device__ __forceinline__ jllm_u8* jllm_smem_align_up(jllm_u8* p, jllm_u32 a) {
#if defined(JLLM_EMULATE)
  const jllm_u64 v = reinterpret_cast<jllm_u64>(p);
  return p + (a - v % a) % a;
#else
  return p + (a - jllm_smem_u32(p) % a) % a;
#endif
}

// Waits until phase `k` (counted from 0 since init) of the barrier has completed.
__device__ __forceinline__ void jllm_mbar_wait(jllm_u64* bar, jllm_u32 k) {
#if defined(JLLM_EMULATE)
  __syncwarp();  // every lane waits once per phase: the arming lane has run up to here
  if (std::atomic_ref<jllm_u64>(*bar).load() <= k) {
    std::fprintf(stderr, "emulated kernel: waiting on mbarrier phase %u, which was never armed\n", k);
    std::abort();
  }
#else
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "JLLM_MBAR_WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra JLLM_MBAR_WAIT;\n\t}" ::"r"(jllm_smem_u32(bar)),
      "r"(k & 1u)
      : "memory");
#endif
}
#endif  // JLLM_HAS_BULK_COPY

#if JLLM_HAS_BULK_COPY
// One bulk L2 prefetch of [p, p + size) (sm_90): nothing to wait on, nothing to the SM. `p` and
// `size` multiples of 16. The emulation reads the range's first and last byte (sanitizers).
__device__ __forceinline__ void jllm_prefetch_l2_bulk(const void* p, unsigned size) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 16);
  if (size == 0 || size % 16 != 0) __trap();
  const volatile unsigned char* b = static_cast<const unsigned char*>(p);
  (void)b[0];
  (void)b[size - 1];
#else
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(size) : "memory");
#endif
}
#endif

// The 128-byte line at `p` asked of L2 (no data to the SM, nothing to wait on): a latency-bound
// loop warms L2 with what it reads a few steps later, so its own loads hit L2 instead of HBM
// while HBM streams ahead. Correctness never depends on it (L2 is where the GPU's writes land).
// The emulation reads the byte at `p`, so an address outside its buffer shows (sanitizers).
__device__ __forceinline__ void jllm_prefetch_l2(const void* p) {
#if defined(JLLM_EMULATE)
  (void)*static_cast<const volatile unsigned char*>(p);
#else
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// The 128-byte line at `p` asked into this SM's L1 (nothing to wait on): a scale word a later
// load reads, fetched while the loop does other work instead of at that load.
__device__ __forceinline__ void jllm_prefetch_l1(const void* p) {
#if defined(JLLM_EMULATE)
  (void)*static_cast<const volatile unsigned char*>(p);
#else
  asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#endif
}

// As jllm_prefetch_l2, with the evict-last priority.
__device__ __forceinline__ void jllm_prefetch_l2_evict_last(const void* p) {
#if defined(JLLM_EMULATE)
  (void)*static_cast<const volatile unsigned char*>(p);
#else
  asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
#endif
}

// 4 bytes at `p` (4-byte aligned), with L2 asked to fetch the whole 256-byte block around them.
__device__ __forceinline__ jllm_u32 jllm_load_l2_256(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 4);
  return *static_cast<const volatile jllm_u32*>(p);
#else
  jllm_u32 v;
  asm volatile("ld.global.nc.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#endif
}

// How jllm_prefetch_l2_share asks L2 (a jllm::cuda::L2PrefetchForm other than the load; the
// lowering's JLLM_PREFETCH_FORM): bulk prefetches by default.
#ifndef JLLM_PREFETCH_FORM
#define JLLM_PREFETCH_FORM 4
#endif
static_assert(JLLM_PREFETCH_FORM == jllm::cuda::kL2PrefetchBulk || JLLM_PREFETCH_FORM == jllm::cuda::kL2PrefetchLine ||
                  JLLM_PREFETCH_FORM == jllm::cuda::kL2PrefetchLineEvictLast ||
                  JLLM_PREFETCH_FORM == jllm::cuda::kL2PrefetchLoad256,
              "JLLM_PREFETCH_FORM: a prefetch form of kernel_args.h's L2PrefetchForm");

// This CTA's share of [p, p + bytes) prefetched into L2 (every thread of the CTA calls it): a
// latency-bound kernel warms L2 with the weights of the GEMVs after it while its own DRAM
// traffic is small. Weights only, so it may run before the grid dependency. `p` 256-byte
// aligned. Bulk (sm_90; elsewhere nothing): one thread, prefetches of at most 1 MB; the other
// forms: every thread, a line (or 256-byte block) at a time. The emulation touches each bulk
// range's first and last byte and each line's first, so a range outside its buffer shows under
// the sanitizers.
__device__ __forceinline__ void jllm_prefetch_l2_share(const void* p, unsigned long long bytes) {
  if (p == nullptr || bytes == 0) return;
  const unsigned long long ctas = static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z;
  const unsigned long long cta =
      blockIdx.x + static_cast<unsigned long long>(gridDim.x) * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned long long lo = bytes * cta / ctas / 16 * 16, hi = bytes * (cta + 1) / ctas / 16 * 16;
  const char* c = static_cast<const char*>(p);
#if JLLM_PREFETCH_FORM == 4  // kL2PrefetchBulk
#if JLLM_HAS_BULK_COPY
  if (threadIdx.x != 0) return;
  constexpr unsigned long long kChunk = 1ull << 20;
  for (unsigned long long o = lo; o < hi; o += kChunk) {
    jllm_prefetch_l2_bulk(c + o, static_cast<unsigned>(hi - o < kChunk ? hi - o : kChunk));
  }
#else
  (void)lo, (void)hi, (void)c;  // no bulk prefetch before sm_90
#endif
#else
  constexpr unsigned long long kStep = JLLM_PREFETCH_FORM == 3 ? 256 : 128;  // kL2PrefetchLoad256: blocks
  const unsigned long long threads = static_cast<unsigned long long>(blockDim.x) * blockDim.y * blockDim.z;
  const unsigned long long tid = threadIdx.x + static_cast<unsigned long long>(blockDim.x) * (threadIdx.y + blockDim.y * threadIdx.z);
  for (unsigned long long o = lo / kStep * kStep + tid * kStep; o < hi; o += threads * kStep) {
#if JLLM_PREFETCH_FORM == 1
    jllm_prefetch_l2(c + o);
#elif JLLM_PREFETCH_FORM == 2
    jllm_prefetch_l2_evict_last(c + o);
#else
    (void)jllm_load_l2_256(c + o);
#endif
  }
#endif
}

// 16 and 4 bytes of shared memory (a GEMV ring slot); `p` aligned to its size.
__device__ __forceinline__ uint4 jllm_load_shared16(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 16);
#endif
  return *static_cast<const uint4*>(p);
}
__device__ __forceinline__ jllm_u32 jllm_load_shared4(const void* p) {
#if defined(JLLM_EMULATE)
  emu_check_aligned(p, 4);
#endif
  return *static_cast<const jllm_u32*>(p);
}

// ---- tensor cores (sm_80 mma.sync, tf32) -----------------------------------------------------
// f32 -> tf32 (10-bit mantissa), round to nearest, ties away from zero (cvt.rna), as the bits of
// an f32 whose low 13 bits are zero.
__device__ __forceinline__ jllm_u32 jllm_to_tf32(float f) {
#if defined(JLLM_EMULATE)
  jllm_u32 b;
  std::memcpy(&b, &f, 4);
  if ((b & 0x7f800000u) != 0x7f800000u) b = (b + 0x1000u) & 0xffffe000u;  // finite: round
  return b;
#else
  jllm_u32 t;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(f));
  return t;
#endif
}

// c += A·B for one warp: A 16x8 (row-major), B 8x8 (column-major), tf32 in, f32 accumulate.
// Fragments (g = lane / 4, t = lane % 4): a = A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4];
// b = B[t][g], B[t+4][g]; c = C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1].
__device__ __forceinline__ void jllm_mma_tf32_16x8x8(float (&c)[4], const jllm_u32 (&a)[4], const jllm_u32 (&b)[2]) {
#if defined(JLLM_EMULATE)
  emu_mma_tf32_16x8x8(c, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// f16 tensor cores (sm_80 mma.sync m16n8k16, f32 accumulate), for the prefill GEMM of
// quantized weights. Two f32 -> one register of two f16 (lo in the low half), rounded to
// nearest even (cvt.rn.f16x2.f32).
__device__ __forceinline__ jllm_u32 jllm_pack_half2(float lo, float hi) {
#if defined(JLLM_EMULATE)
  return jllm_u32{emu_float_to_half(lo)} | (jllm_u32{emu_float_to_half(hi)} << 16);
#else
  jllm_u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#endif
}

// Four 8x8 matrices of 16-bit elements from shared memory, one register each: lanes 8i..8i+7
// give the row addresses (16-byte aligned) of matrix i; lane l receives, of every matrix, row
// l / 4, elements 2 (l % 4) and 2 (l % 4) + 1.
__device__ __forceinline__ void jllm_ldmatrix_x4(jllm_u32 (&r)[4], const void* row) {
#if defined(JLLM_EMULATE)
  emu_ldmatrix_x4(r, row);
#else
  asm volatile(
      "{\n\t.reg .u64 a;\n\t.reg .u32 s;\n\tcvta.to.shared.u64 a, %4;\n\tcvt.u32.u64 s, a;\n\t"
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [s];\n\t}"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "l"(row)
      : "memory");
#endif
}

// c += A·B for one warp: A 16x16 (row-major), B 16x8 (column-major), f16 in, f32 accumulate.
// Fragments (g = lane / 4, t = lane % 4; each register two elements, the lower k in the low
// half): a = A[g][2t..], A[g+8][2t..], A[g][2t+8..], A[g+8][2t+8..]; b = B[2t..][g],
// B[2t+8..][g]; c as in jllm_mma_tf32_16x8x8.
__device__ __forceinline__ void jllm_mma_f16_16x8x16(float (&c)[4], const jllm_u32 (&a)[4], const jllm_u32 (&b)[2]) {
#if defined(JLLM_EMULATE)
  emu_mma_f16_16x8x16(c, a, b);
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// SwiGLU of a gate and an up value: silu(g) * u, silu(g) = g / (1 + e^-g) as cpu_ref computes it.
__device__ __forceinline__ float jllm_swiglu(float g, float u) { return g / (1.0f + expf(-g)) * u; }

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

// The XOR of every thread's word, stored by thread 0 to out[blockIdx.x]: a probe kernel's one
// store per CTA, so that its loads cannot be dropped (blockDim.x a multiple of 32, at most 256).
__device__ __forceinline__ void jllm_cta_xor_store(jllm_u32 acc, jllm_u32* out) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  __shared__ jllm_u32 warp_acc[8];
  if ((threadIdx.x & 31) == 0) warp_acc[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    jllm_u32 total = 0;
    for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total ^= warp_acc[w];
    out[blockIdx.x] = total;
  }
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
