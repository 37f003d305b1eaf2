// Host stand-ins for the CUDA builtins the jllm kernels use, so that the real kernel sources
// compile with g++ (-DJLLM_EMULATE -include this file) into a shared object that runs a launch
// on the CPU: every CUDA thread of a CTA is a fiber, CTAs run one after another in a shuffled
// order (a GPU promises none: a kernel whose result depends on it — tickets counted by the wrong
// CTAs, a "last CTA" that is not — fails here rather than only where CTAs interleave), a CTA's
// threads resumed in a shuffled order each round (so a read of another warp's or lane's write
// without the barrier between them fails too, whichever index the writer has), and
// __syncthreads and the warp operations are barriers that switch fibers. Semantics the kernels rely on are kept:
// a thread that returns stops counting for the barriers (as an exited CUDA thread does), the
// dynamic shared memory starts with garbage, atomics are atomic, misaligned vector loads trap.
//
// The object exports emu_launch(); tests/cuda/emu/emu_device.cc loads and calls it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Static shared memory lives in one section of the kernel's object, so that CTAs run
// concurrently (emu_launch's `resident`) each keep their own copy: the scheduler swaps the
// section's bytes in and out as it moves between CTAs.
#define __shared__ static __attribute__((section("emu_shared")))
extern "C" unsigned char __start_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" unsigned char __stop_emu_shared[] __attribute__((weak, visibility("hidden")));
#define __align__(n) alignas(n)

struct uint2 { unsigned x, y; };
struct uint4 { unsigned x, y, z, w; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct dim3 { unsigned x = 1, y = 1, z = 1; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float2 make_float2(float a, float b) { return {a, b}; }

// splitmix64: the shuffles' reproducible random numbers.
inline uint64_t emu_next_random(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  uint64_t r = state;
  r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ull;
  r = (r ^ (r >> 27)) * 0x94D049BB133111EBull;
  return r ^ (r >> 31);
}
template <class T>
void emu_shuffle(std::vector<T>& v, uint64_t& state) {  // Fisher-Yates
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[emu_next_random(state) % i]);
}

// CTAs run on one host thread, one at a time or (emu_launch's `resident`) several interleaved;
// their CUDA threads are fibers, switched at barriers, warp exchanges and waits, so a launch
// costs no OS threads and runs deterministically.
inline dim3 threadIdx, blockIdx;  // of the fiber running now (set before each switch to it)
inline dim3 gridDim, blockDim;

// ---- the CTA being run ----------------------------------------------------------------------

struct EmuBarrier {
  unsigned expected = 0, arrived = 0, generation = 0;
};

// Switching fibers. On x86-64 a switch saves the callee-saved registers on the running stack
// and moves to the other stack (emu_switch): swapcontext also saves the signal mask, a system
// call per switch — millions per emulated GEMV, half the emulated tests' time. Elsewhere,
// ucontext.
#if defined(__x86_64__)
extern "C" void emu_switch(void** save_sp, void* resume_sp);
asm(R"(
  .text
  .globl emu_switch
  .hidden emu_switch
  .type emu_switch, @function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch, .-emu_switch
)");
struct EmuContext {
  void* sp = nullptr;
};
inline void emu_swap(EmuContext& save, EmuContext& resume) { emu_switch(&save.sp, resume.sp); }
// A context that, resumed, runs entry() on the stack [stack, stack + bytes); entry never returns.
inline void emu_make_context(EmuContext& c, char* stack, size_t bytes, EmuContext& /*link*/, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;                               // entry's return address: entry never returns
  *--sp = reinterpret_cast<void*>(entry);        // where emu_switch's ret goes (rsp = 8 mod 16 there)
  for (int i = 0; i < 6; ++i) *--sp = nullptr;   // rbp, rbx, r12..r15
  c.sp = sp;
}
#else
struct EmuContext {
  ucontext_t uc;
};
inline void emu_swap(EmuContext& save, EmuContext& resume) { swapcontext(&save.uc, &resume.uc); }
inline void emu_make_context(EmuContext& c, char* stack, size_t bytes, EmuContext& link, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = bytes;
  c.uc.uc_link = &link.uc;
  makecontext(&c.uc, entry, 0);
}
#endif

struct EmuFiber {
  EmuContext context;
  bool done = false;
};

struct EmuCta {
  EmuBarrier block;
  std::vector<EmuBarrier> warps;
  std::vector<uint64_t> slots;  // one per thread: a warp exchange's values
  std::vector<unsigned char> smem;
  std::vector<unsigned char> statics;  // its static shared memory while another CTA runs
  std::vector<EmuFiber> fibers;
  EmuContext scheduler;
  unsigned current = 0;
  dim3 index;
  unsigned stack_slot = 0;  // which of the launch's stack sets its fibers run on
  unsigned live = 0;        // fibers not done
};
inline EmuCta* emu_cta = nullptr;
inline uint64_t emu_progress = 0;  // arrivals and exits: a scheduler round without any is a deadlock

inline unsigned char* emu_dynamic_smem() { return emu_cta->smem.data(); }
inline unsigned emu_smid() { return emu_cta->stack_slot; }  // %smid: the CTA's resident slot

inline void emu_yield() {
  EmuCta& c = *emu_cta;
  emu_swap(c.fibers[c.current].context, c.scheduler);
}

inline void emu_arrive_and_wait(EmuBarrier& b) {
  ++emu_progress;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  const unsigned g = b.generation;
  while (b.generation == g) emu_yield();
}

// A wait on memory another CTA writes (a counter a dataflow kernel waits on): the fiber yields
// until ready() holds; its wake counts as progress. With one CTA resident at a time a wait on a
// later CTA is a deadlock, as on a GPU whose SMs cannot hold both.
template <class Ready>
inline void emu_wait_until(Ready ready) {
  while (!ready()) emu_yield();
  ++emu_progress;
}

// An exited thread no longer holds up a barrier, as an exited CUDA thread does not.
inline void emu_drop(EmuBarrier& b) {
  --b.expected;
  if (b.expected > 0 && b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
  }
}

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

inline void __syncthreads() { emu_arrive_and_wait(emu_cta->block); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_arrive_and_wait(emu_cta->warps[threadIdx.x / 32]); }
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

// Every lane's 8-byte value, in lane order (a warp collective, like emu_exchange).
inline void emu_warp_gather(uint64_t v, uint64_t (&out)[32]) {
  const unsigned tid = threadIdx.x, warp0 = tid / 32 * 32;
  emu_cta->slots[tid] = v;
  __syncwarp();
  for (unsigned l = 0; l < 32; ++l) out[l] = emu_cta->slots[warp0 + l];
  __syncwarp();
}

// The warp's A (4 registers) and B (2) fragments of an mma.sync, every lane's, in lane order:
// a01[l] = registers 0 and 1 of lane l, a23[l] = 2 and 3, b01[l] = 0 and 1.
inline void emu_gather_mma(const unsigned (&a)[4], const unsigned (&b)[2], uint64_t (&a01)[32], uint64_t (&a23)[32],
                           uint64_t (&b01)[32]) {
  emu_warp_gather(a[0] | (uint64_t{a[1]} << 32), a01);
  emu_warp_gather(a[2] | (uint64_t{a[3]} << 32), a23);
  emu_warp_gather(b[0] | (uint64_t{b[1]} << 32), b01);
}
// c[e] += row r of A times column n of B, summed over k in order, for the lane's four outputs
// (g = lane / 4, t = lane % 4: C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]).
template <int kK, class FA, class FB>
inline void emu_mma_accumulate(float (&c)[4], FA A, FB B) {
  const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  for (int e = 0; e < 4; ++e) {
    const int r = g + (e >= 2 ? 8 : 0), n = 2 * t + (e & 1);
    float sum = 0.f;
    for (int k = 0; k < kK; ++k) sum += A(r, k) * B(k, n);
    c[e] += sum;
  }
}

// mma.sync m16n8k8 tf32 (jllm_common.cuh gives the fragment layout): the lanes' fragments are
// gathered, and each lane adds its four elements of A·B, the products exact (tf32 x tf32 fits
// an f32), summed over k in order.
inline void emu_mma_tf32_16x8x8(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  uint64_t a01[32], a23[32], b01[32];
  emu_gather_mma(a, b, a01, a23, b01);
  auto f = [](uint64_t w, int hi) {
    const uint32_t bits = static_cast<uint32_t>(w >> (hi ? 32 : 0)) & 0xffffe000u;  // tf32 reads 19 bits
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  auto A = [&](int r, int k) { return f(k < 4 ? a01[(r % 8) * 4 + k % 4] : a23[(r % 8) * 4 + k % 4], r >= 8); };
  auto B = [&](int k, int n) { return f(b01[n * 4 + k % 4], k >= 4); };
  emu_mma_accumulate<8>(c, A, B);
}

// ---- atomics ----------------------------------------------------------------------------------
template <class T>
T atomicAdd(T* p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
inline unsigned atomicOr(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).fetch_or(v); }
inline unsigned atomicExch(unsigned* p, unsigned v) { return std::atomic_ref<unsigned>(*p).exchange(v); }
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  std::atomic_ref<unsigned long long> a(*p);
  unsigned long long old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}

// %globaltimer (JLLM_TRACE): nanoseconds of the host's steady clock.
inline unsigned long long emu_now_ns() {
  return static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now().time_since_epoch())
                                             .count());
}

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

// ---- tensor-core fragments (f16) -----------------------------------------------------------
// ldmatrix .x4 (jllm_common.cuh): the lanes' row addresses are gathered, and each lane reads
// its two elements of row lane / 4 of every matrix.
inline void emu_ldmatrix_x4(unsigned (&r)[4], const void* row) {
  emu_check_aligned(row, 16);
  uint64_t rows[32];
  emu_warp_gather(reinterpret_cast<uintptr_t>(row), rows);
  const int lane = threadIdx.x & 31;
  for (int i = 0; i < 4; ++i) {
    std::memcpy(&r[i], reinterpret_cast<const unsigned char*>(rows[8 * i + lane / 4]) + 4 * (lane % 4), 4);
  }
  __syncwarp();  // no lane writes the rows before every lane has read them
}

// mma.sync m16n8k16 f16 (jllm_common.cuh gives the fragment layout): each lane adds its four
// elements of A·B, the products exact in f32 (11 x 11 significant bits), summed over k in order.
inline void emu_mma_f16_16x8x16(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  uint64_t a01[32], a23[32], b01[32];
  emu_gather_mma(a, b, a01, a23, b01);
  auto h = [](uint64_t w, int reg, int k) {  // element k & 1 of register reg (0/1) of a pair
    return emu_half_to_float(static_cast<uint16_t>(w >> (32 * reg + 16 * (k & 1))));
  };
  // A[r][k]: lane (r % 8) * 4 + (k % 8) / 2, register (r >= 8) + 2 (k >= 8).
  auto A = [&](int r, int k) {
    const int lane = (r % 8) * 4 + (k % 8) / 2;
    return h(k < 8 ? a01[lane] : a23[lane], r >= 8, k);
  };
  auto B = [&](int k, int n) { return h(b01[n * 4 + (k % 8) / 2], k >= 8, k); };
  emu_mma_accumulate<16>(c, A, B);
}

// ---- the launch ----------------------------------------------------------------------------

inline void (*emu_entry)(const void*, unsigned long long*) = nullptr;
inline const void* emu_args = nullptr;
inline unsigned long long* emu_trace = nullptr;  // the step's trace buffer (JLLM_TRACE), or null

inline void emu_fiber_main() {
  EmuCta& c = *emu_cta;
  const unsigned t = c.current;
  emu_entry(emu_args, emu_trace);
  c.fibers[t].done = true;
  ++emu_progress;
  emu_drop(c.warps[t / 32]);
  emu_drop(c.block);
  emu_swap(c.fibers[t].context, c.scheduler);  // for good: a done fiber is never resumed
}

// Runs a launch: the CTAs in an order shuffled per launch (reproducibly: a fixed seed, advanced
// per launch), at most `resident` of them at a time (0 or 1: one after another). Resident CTAs
// take turns a scheduler round each, in a shuffled order, each round resuming its live threads
// in a shuffled order; a CTA's static shared memory is swapped in for its turn, and a new CTA's
// starts as garbage, as a GPU's does. A round in which no thread of any resident CTA arrives at a
// barrier, exits or wakes from a wait is a deadlock: a kernel that waits on a CTA that is not
// resident (more than `resident` CTAs that depend on each other) ends there, as it would hang
// on a GPU with too few SMs. With `warps_in_turn`, a CTA's turn runs its warps one at a time in a
// shuffled order, each until no thread of it moves on (all wait at a CTA barrier or on memory, or
// are done), instead of resuming every thread once: a warp that reads another warp's write
// without a barrier between them then reads before it whenever its turn comes first.
extern "C" int emu_launch(void (*entry)(const void*, unsigned long long*), unsigned gx, unsigned gy, unsigned gz,
                          unsigned threads, size_t smem, const void* args, unsigned long long* trace,
                          unsigned resident, unsigned warps_in_turn) {
  if (threads == 0 || threads > 1024 || threads % 32 != 0) return 1;
  resident = std::max(1u, resident);
  constexpr size_t kStack = 256 * 1024;
  static std::vector<std::unique_ptr<char[]>> stacks;  // reused across CTAs and launches
  while (stacks.size() < static_cast<size_t>(threads) * resident) stacks.emplace_back(new char[kStack]);
  gridDim = {gx, gy, gz};
  blockDim = {threads, 1, 1};
  emu_entry = entry;
  emu_args = args;
  emu_trace = trace;
  static uint64_t launches = 0;
  std::vector<dim3> order;
  order.reserve(static_cast<size_t>(gx) * gy * gz);
  for (unsigned z = 0; z < gz; ++z) {
    for (unsigned y = 0; y < gy; ++y) {
      for (unsigned x = 0; x < gx; ++x) order.push_back(dim3{x, y, z});
    }
  }
  uint64_t state = 0x9E3779B97F4A7C15ull * ++launches;
  emu_shuffle(order, state);
  const size_t statics_bytes = static_cast<size_t>(__stop_emu_shared - __start_emu_shared);
  const bool swap_statics = resident > 1 && statics_bytes > 0;
  std::vector<std::unique_ptr<EmuCta>> running;
  std::vector<unsigned> free_slots;
  for (unsigned i = resident; i > 0; --i) free_slots.push_back(i - 1);
  std::vector<unsigned> resume(threads);  // the threads' order in a scheduler round
  std::vector<unsigned> warp_order(threads / 32);
  std::vector<size_t> turn;               // the resident CTAs' order in a round
  size_t next = 0;
  while (next < order.size() || !running.empty()) {
    while (running.size() < resident && next < order.size()) {
      auto cta = std::make_unique<EmuCta>();
      cta->index = order[next++];
      cta->block.expected = threads;
      cta->warps.assign(threads / 32, EmuBarrier{32, 0, 0});
      cta->slots.assign(threads, 0);
      cta->smem.assign(smem + 16, 0xA5);  // garbage, as uninitialised shared memory is
      if (swap_statics) cta->statics.assign(statics_bytes, 0xA5);
      cta->fibers.resize(threads);
      cta->stack_slot = free_slots.back();
      free_slots.pop_back();
      cta->live = threads;
      for (unsigned t = 0; t < threads; ++t) {
        emu_make_context(cta->fibers[t].context, stacks[static_cast<size_t>(cta->stack_slot) * threads + t].get(),
                         kStack, cta->scheduler, emu_fiber_main);
      }
      running.push_back(std::move(cta));
    }
    const uint64_t before = emu_progress;
    turn.resize(running.size());
    for (size_t i = 0; i < turn.size(); ++i) turn[i] = i;
    emu_shuffle(turn, state);
    for (const size_t i : turn) {
      EmuCta& cta = *running[i];
      emu_cta = &cta;
      blockIdx = cta.index;
      if (swap_statics) std::memcpy(__start_emu_shared, cta.statics.data(), statics_bytes);
      auto step = [&](unsigned t) {  // thread t to its next barrier, exchange, wait or exit
        cta.current = t;
        threadIdx = {t, 0, 0};
        emu_swap(cta.scheduler, cta.fibers[t].context);
      };
      if (warps_in_turn) {
        for (unsigned w = 0; w < threads / 32; ++w) warp_order[w] = w;
        emu_shuffle(warp_order, state);
        for (const unsigned w : warp_order) {
          for (uint64_t moved = emu_progress + 1; moved != emu_progress;) {
            moved = emu_progress;
            for (unsigned lane = 0; lane < 32; ++lane) {
              if (!cta.fibers[32 * w + lane].done) step(32 * w + lane);
            }
          }
        }
      } else {
        for (unsigned t = 0; t < threads; ++t) resume[t] = t;
        emu_shuffle(resume, state);
        for (const unsigned t : resume) {
          if (!cta.fibers[t].done) step(t);
        }
      }
      cta.live = 0;
      for (unsigned t = 0; t < threads; ++t) cta.live += !cta.fibers[t].done;
      if (swap_statics) std::memcpy(cta.statics.data(), __start_emu_shared, statics_bytes);
      emu_cta = nullptr;
    }
    if (emu_progress == before) {
      for (const auto& cta : running) {
        std::fprintf(stderr, "emulated kernel: deadlock in CTA (%u,%u,%u): %u threads wait on barriers or memory "
                     "that can never change (%u CTAs resident)\n", cta->index.x, cta->index.y, cta->index.z,
                     cta->live, resident);
      }
      std::abort();
    }
    for (size_t i = running.size(); i > 0; --i) {
      if (running[i - 1]->live == 0) {
        free_slots.push_back(running[i - 1]->stack_slot);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i - 1));
      }
    }
  }
  return 0;
}
