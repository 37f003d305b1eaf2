// Decode matrix-vector product: y_m = W_m · x for one token, for a group of up to three weight
// matrices that share x (a plain matmul, the QKV triple with mixed types, gate+up), with the
// fusions of ir's MatMulAttrs written out as steps of the kernel:
//   prologue  NORM:     x is RMS-normed (and scaled by gamma) while it is staged
//   body      every warp streams R rows of one member, unit by unit (weight_types.cuh)
//   epilogue  RESIDUAL: y += residual;  SWIGLU: y = silu(W_gate·x) · (W_up·x)
// Memory-bound: every weight byte is read once, with 16-byte streaming loads, into registers.
//
// Work split (docs/PERF.md, "GEMV v3"). The work is a list of items: R rows of one member (or R
// rows of gate and of up, with SWIGLU) times one of KSPLIT column splits, split-major. CTAs are
// persistent and each takes an equal contiguous range of items — equal bytes per SM whatever
// the grid — and its warps take the range's items round-robin. A CTA stages x once, for the
// splits its range touches, in each member type's unit order (conflict-free reads). A warp
// walks its items as one stream of 32-unit steps through a ring of DEPTH steps of loads in
// flight, across item boundaries; the first DEPTH steps are issued before the kernel waits for
// its predecessor (programmatic dependent launch), so weights stream while x is produced. With
// KSPLIT > 1 each item writes partial sums; the row group's last split to finish (a ticket
// counter) adds them in split order and runs the epilogue, so results are deterministic.
//
// Constants (-D): JLLM_K, JLLM_NM (members), JLLM_T<m> / JLLM_N<m> (ggml type id and rows of
// member m), JLLM_R, JLLM_NW, JLLM_KSPLIT, JLLM_DEPTH, JLLM_MINB (CTAs per SM the registers must
// allow), JLLM_XPLANES (0: f32 x; 1: int8 x, 2: int16 x for the types with a quantized-x dot,
// weight_types.cuh), JLLM_NORM, JLLM_RESIDUAL,
// JLLM_SWIGLU.
#include "kernel_args.h"
#include "launch_geometry.h"
#include "weight_types.cuh"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

constexpr int kK = JLLM_K;
constexpr int kNm = JLLM_NM;
constexpr int kR = JLLM_R;
constexpr int kNw = JLLM_NW;
constexpr int kThreads = 32 * kNw;
constexpr int kKsplit = JLLM_KSPLIT;
constexpr int kDepth = JLLM_DEPTH;
constexpr bool kNorm = JLLM_NORM;
constexpr bool kResidual = JLLM_RESIDUAL;
constexpr bool kSwiglu = JLLM_SWIGLU;
constexpr int kXPlanes = JLLM_XPLANES;

#ifndef JLLM_T1
#define JLLM_T1 JLLM_T0
#define JLLM_N1 0
#endif
#ifndef JLLM_T2
#define JLLM_T2 JLLM_T0
#define JLLM_N2 0
#endif
constexpr int kType[3] = {JLLM_T0, JLLM_T1, JLLM_T2};
constexpr int kRows[3] = {JLLM_N0, JLLM_N1, JLLM_N2};

constexpr int kGroups256 = kK / 256;                // 256-element column groups
constexpr int kMembersPerItem = kSwiglu ? 2 : 1;    // matrices an item reads
constexpr int kMemberGroups = kSwiglu ? 1 : kNm;    // item kinds per split
constexpr int RowGroups(int m) { return geo::CeilDiv(kRows[m], kR); }
constexpr int RgBegin(int m) { return m == 0 ? 0 : RgBegin(m - 1) + RowGroups(m - 1); }
constexpr int kRowGroups = RgBegin(kMemberGroups);  // per split; also the ticket counters
constexpr int kItems = kRowGroups * kKsplit;
constexpr int RowBegin(int m) { return m == 0 ? 0 : RowBegin(m - 1) + kRows[m - 1]; }
constexpr int kTotalRows = RowBegin(kNm);
// Staged x: one copy (slot) per distinct member type, in that type's unit order.
constexpr int FirstOf(int m) {
  for (int i = 0; i < m; ++i) {
    if (kType[i] == kType[m]) return i;
  }
  return m;
}
constexpr int SlotOf(int m) {
  int s = 0;
  for (int i = 0; i < FirstOf(m); ++i) s += FirstOf(i) == i ? 1 : 0;
  return s;
}
constexpr int kSlots = SlotOf(kMemberGroups - 1) + (FirstOf(kMemberGroups - 1) == kMemberGroups - 1 ? 1 : 0);
constexpr int kSlotFloat4 = geo::GemvSlotFloat4(kK);  // f32 parts, then float2 run sums
// Member m reads quantized x (weight_types.cuh): a slot of arrays of its units — the A runs,
// the B runs (uint4 each), (d_A, Σq_A, d_B, Σq_B), and with two planes the low bytes of the A
// and B runs — instead of f32 x. q8_0 has no B runs: its low plane takes the B array.
template <int kM>
constexpr bool UsesXq() { return kXPlanes > 0 && WType<kType[kM]>::kXq; }
template <int kM>
constexpr int LoArray() { return kType[kM] == jllm::cuda::layout::kQ8_0 ? 1 : 3; }
template <int kM>
constexpr bool StagesF32() { return kM < kMemberGroups && FirstOf(kM) == kM && !UsesXq<kM>(); }
template <int kM>
constexpr bool StagesXq() { return kM < kMemberGroups && FirstOf(kM) == kM && UsesXq<kM>(); }
template <int kM>
constexpr bool StagesSums() { return StagesF32<kM>() && WType<kType[kM]>::kHalfSums; }
constexpr int SplitGroup(int s) { return s * kGroups256 / kKsplit; }  // first 256-group of split s

static_assert(kK % 256 == 0, "GEMV columns are whole groups of 256");
static_assert(kNm >= 1 && kNm <= 3, "1..3 members");
static_assert(!kSwiglu || (kNm == 2 && kType[0] == kType[1] && kRows[0] == kRows[1]),
              "SWIGLU needs gate and up of one type and height");
static_assert(!kResidual || kNm == 1, "the residual epilogue is for a single matmul");
static_assert(kKsplit >= 1 && kKsplit <= kGroups256, "KSPLIT in 1..K/256");
static_assert(kDepth >= 1 && kDepth <= 8, "DEPTH in 1..8");
static_assert(kXPlanes >= 0 && kXPlanes <= 2, "XPLANES 0, 1 or 2");
static_assert(3 * kK / 16 <= kSlotFloat4 && 5 * kK / 32 <= kSlotFloat4,
              "a quantized slot (3 arrays of 16-element units, or 5 of 32-element units) fits");

struct Range {
  int begin, end;  // items [begin, end) of this CTA
};

// Stages x (normed if asked) for the columns of splits [s_lo, s_hi] into every slot.
template <int kM>
__device__ __forceinline__ void StageSlot(const float4& v, int e, float4* xs) {
  using W = WType<kType[kM]>;
  constexpr int kUnitsK = kGroups256 * W::kUnits256;
  xs[SlotOf(kM) * kSlotFloat4 + W::PartOf(e) * kUnitsK + W::UnitOf(e)] = v;
}

// The 16-element run at e, quantized (q: 4 words of int8 — the high plane with two planes —,
// q_lo: the low plane, d, Σq), into member kM's slot.
template <int kM>
__device__ __forceinline__ void StageRunXq(const uint4& q, const uint4& q_lo, float d, float sum, int e, float4* xs) {
  using W = WType<kType[kM]>;
  constexpr int kUnitsK = kGroups256 * W::kUnits256;
  float4* slot = xs + SlotOf(kM) * kSlotFloat4;
  const int u = W::UnitOf(e), half = W::HalfOf(e);
  reinterpret_cast<uint4*>(slot)[half * kUnitsK + u] = q;
  if constexpr (kXPlanes == 2) reinterpret_cast<uint4*>(slot)[(LoArray<kM>() + half) * kUnitsK + u] = q_lo;
  float* meta = reinterpret_cast<float*>(slot + 2 * kUnitsK + u);
  meta[2 * half] = d;
  meta[2 * half + 1] = sum;
}

// The f32 sum of the 16-element run at e, beside member kM's f32 parts.
template <int kM>
__device__ __forceinline__ void StageRunSum(float sum, int e, float4* xs) {
  using W = WType<kType[kM]>;
  float* sums = reinterpret_cast<float*>(xs + SlotOf(kM) * kSlotFloat4 + kK / 4);
  sums[2 * W::UnitOf(e) + W::HalfOf(e)] = sum;
}

__device__ __forceinline__ float4 NormedX(const jllm::cuda::GemvArgs& args, int e, float scale) {
  float4 v = *reinterpret_cast<const float4*>(args.x + e);
  if constexpr (kNorm) {
    const float4 g = *reinterpret_cast<const float4*>(args.gamma + e);
    v = make_float4(v.x * scale * g.x, v.y * scale * g.y, v.z * scale * g.z, v.w * scale * g.w);
  }
  return v;
}

__device__ __forceinline__ void StageX(const jllm::cuda::GemvArgs& args, int s_lo, int s_hi, float4* xs) {
  float scale = 1.0f;
  if constexpr (kNorm) {
    __shared__ double scratch[32];
    scale = jllm_rms_scale(jllm_sum_squares(args.x, kK, scratch), kK, args.eps);
  }
  const int e0 = SplitGroup(s_lo) * 256, e1 = SplitGroup(s_hi + 1) * 256;
  if constexpr (StagesF32<0>() || StagesF32<1>() || StagesF32<2>()) {
    for (int e = e0 + 4 * threadIdx.x; e < e1; e += 4 * kThreads) {
      const float4 v = NormedX(args, e, scale);
      if constexpr (StagesF32<0>()) StageSlot<0>(v, e, xs);
      if constexpr (StagesF32<1>()) StageSlot<1>(v, e, xs);
      if constexpr (StagesF32<2>()) StageSlot<2>(v, e, xs);
    }
  }
  constexpr bool kAnyXq = StagesXq<0>() || StagesXq<1>() || StagesXq<2>();
  if constexpr (kAnyXq || StagesSums<0>() || StagesSums<1>() || StagesSums<2>()) {
    for (int e = e0 + 16 * threadIdx.x; e < e1; e += 16 * kThreads) {
      float v[16];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float4 f = NormedX(args, e + 4 * i, scale);
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
      }
      float fsum = 0.f;
#pragma unroll
      for (int i = 0; i < 16; ++i) fsum += v[i];
      if constexpr (StagesSums<0>()) StageRunSum<0>(fsum, e, xs);
      if constexpr (StagesSums<1>()) StageRunSum<1>(fsum, e, xs);
      if constexpr (StagesSums<2>()) StageRunSum<2>(fsum, e, xs);
      if constexpr (kAnyXq) {
        constexpr float kQmax = kXPlanes == 2 ? static_cast<float>(kX16Max) : 127.0f;
        float amax = 0.f;
#pragma unroll
        for (int i = 0; i < 16; ++i) amax = fmaxf(amax, fabsf(v[i]));
        const float d = amax / kQmax, id = amax > 0.f ? kQmax / amax : 0.f;
        jllm_u32 w[4] = {0, 0, 0, 0}, w_lo[4] = {0, 0, 0, 0};
        int sum = 0;
#pragma unroll
        for (int i = 0; i < 16; ++i) {
          const int qv = static_cast<int>(roundf(v[i] * id));
          sum += qv;
          const int shift = 8 * (i & 3);
          if constexpr (kXPlanes == 2) {
            const int hi = (qv + 128) >> 8;  // arithmetic shift: floor((q + 128) / 256)
            w[i >> 2] |= (static_cast<jllm_u32>(hi) & 0xFFu) << shift;
            w_lo[i >> 2] |= (static_cast<jllm_u32>(qv - 256 * hi) & 0xFFu) << shift;
          } else {
            w[i >> 2] |= (static_cast<jllm_u32>(qv) & 0xFFu) << shift;
          }
        }
        const uint4 q = make_uint4(w[0], w[1], w[2], w[3]);
        const uint4 q_lo = make_uint4(w_lo[0], w_lo[1], w_lo[2], w_lo[3]);
        if constexpr (StagesXq<0>()) StageRunXq<0>(q, q_lo, d, static_cast<float>(sum), e, xs);
        if constexpr (StagesXq<1>()) StageRunXq<1>(q, q_lo, d, static_cast<float>(sum), e, xs);
        if constexpr (StagesXq<2>()) StageRunXq<2>(q, q_lo, d, static_cast<float>(sum), e, xs);
      }
    }
  }
  __syncthreads();
}

// y (or the partial sums) of rows row0.. of member-group kM, split `split`.
template <int kM>
// `residual` is residual[row0 + lane] for lanes < R (RESIDUAL), loaded when the item began.
__device__ __forceinline__ void Finish(const jllm::cuda::GemvArgs& args, int split, int rg, int row0,
                                       const float (&acc)[kMembersPerItem][kR], float residual) {
  constexpr int kN = kRows[kM];
  const int lane = threadIdx.x & 31;
  float sums[kMembersPerItem][kR];
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
    for (int r = 0; r < kR; ++r) sums[j][r] = jllm_warp_sum(acc[j][r]);
  }
  auto epilogue = [&](int row, const float (&v)[kMembersPerItem]) {
    if constexpr (kSwiglu) {
      const float g = v[0];
      args.y[0][row] = g / (1.0f + expf(-g)) * v[1];
    } else if constexpr (kResidual) {
      args.y[kM][row] = v[0] + residual;
    } else {
      args.y[kM][row] = v[0];
    }
  };
  if constexpr (kKsplit == 1) {
    if (lane < kR && row0 + lane < kN) {
      float v[kMembersPerItem];
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
        v[j] = sums[j][0];
#pragma unroll
        for (int r = 1; r < kR; ++r) v[j] = lane == r ? sums[j][r] : v[j];
      }
      epilogue(row0 + lane, v);
    }
  } else {
    // Partial sums of this split; the row group's last split to finish adds them in order.
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          if (row0 + r < kN) args.partials[split * kTotalRows + RowBegin(kM + j) + row0 + r] = sums[j][r];
        }
      }
      __threadfence();
    }
    unsigned ticket = 0;
    if (lane == 0) ticket = atomicAdd(&args.counters[RgBegin(kM) + rg], 1u);
    ticket = __shfl_sync(0xffffffffu, ticket, 0);
    if (ticket != kKsplit - 1) return;
    __threadfence();
    if (lane < kR && row0 + lane < kN) {
      const int row = row0 + lane;
      float v[kMembersPerItem];
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
        float part[kKsplit];
#pragma unroll
        for (int k = 0; k < kKsplit; ++k) part[k] = jllm_load_l2_f32(args.partials + k * kTotalRows + RowBegin(kM + j) + row);
        float t = 0.f;
#pragma unroll
        for (int k = 0; k < kKsplit; ++k) t += part[k];
        v[j] = t;
      }
      epilogue(row, v);
    }
    if (lane == 0) args.counters[RgBegin(kM) + rg] = 0;
  }
}

// The warp's items of member-group kM in split `split` — items [i0, i1) of the CTA's range
// with index ≡ `phase` (mod NW) — as one stream of unit steps through a ring of kDepth steps.
// `first`: this is the CTA's first segment: every warp calls it, its opening loads go out
// before the wait for the predecessor, and it stages x.
template <int kM>
__device__ __forceinline__ void Segment(const jllm::cuda::GemvArgs& args, int split, int i0, int i1, int phase,
                                        bool first, int s_lo, int s_hi, float4* xs) {
  constexpr int T = kType[kM];
  using W = WType<T>;
  using Frag = typename W::Frag;
  constexpr int kUnitsK = kGroups256 * W::kUnits256;
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(T, kK);
  constexpr int kMaxSplitUnits = geo::CeilDiv(kGroups256, kKsplit) * W::kUnits256;
  constexpr int kSteps = geo::CeilDiv(kMaxSplitUnits, 32);  // per item
  static_assert(W::kUnits256 == geo::GemvUnits256(T), "launch_geometry.h agrees");
  constexpr int kN = kRows[kM];

  const int lane = threadIdx.x & 31;
  const int u0 = SplitGroup(split) * W::kUnits256, n_units = (SplitGroup(split + 1) - SplitGroup(split)) * W::kUnits256;
  const int seg0 = split * kRowGroups + RgBegin(kM);  // item index of row group 0
  // The warp's items: i0' = first index >= i0 with index ≡ phase (mod NW).
  const int j0 = i0 + ((phase - i0) % kNw + kNw) % kNw;
  const int n_items = j0 < i1 ? (i1 - j0 + kNw - 1) / kNw : 0;
  const int n_steps = n_items * kSteps;
  const jllm_u8* wbase[kMembersPerItem];
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) wbase[j] = static_cast<const jllm_u8*>(args.w[kM + j]);

  Frag f[kDepth][kMembersPerItem][kR];
  auto load = [&](int t, Frag (&buf)[kMembersPerItem][kR]) {
    if (t >= n_steps) return;
    const int item = t / kSteps, s = t - item * kSteps;
    const int row0 = (j0 + kNw * item - seg0) * kR;
    const int ul = lane + 32 * s;
    if (ul >= n_units) return;
#pragma unroll
    for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        if (row0 + r < kN) buf[j][r] = W::Load(wbase[j] + (row0 + r) * kRowStride, u0 + ul);
      }
    }
  };
#pragma unroll
  for (int b = 0; b < kDepth; ++b) load(b, f[b]);
  if (first) {
    JLLM_GRID_WAIT();  // x, gamma, the residual and the partials' readers come before us
    JLLM_LAUNCH_DEPENDENTS();
    StageX(args, s_lo, s_hi, xs);
  }
  const float4* xsl = xs + SlotOf(kM) * kSlotFloat4;

  float acc[kMembersPerItem][kR];
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
    for (int r = 0; r < kR; ++r) acc[j][r] = 0.f;
  }
  float residual = 0.f;
#pragma unroll 1
  for (int t0 = 0; t0 < n_steps; t0 += kDepth) {
#pragma unroll
    for (int b = 0; b < kDepth; ++b) {
      const int t = t0 + b;
      if (t < n_steps) {
        const int item = t / kSteps, s = t - item * kSteps;
        const int rg = j0 + kNw * item - seg0;
        const int row0 = rg * kR;
        const int ul = lane + 32 * s;
        if constexpr (kResidual) {
          // Loaded with the item's first step, used at its end: no round trip in the epilogue.
          if (s == 0 && lane < kR && row0 + lane < kN) residual = args.residual[row0 + lane];
        }
        if (ul < n_units) {
          const int u = u0 + ul;
          if constexpr (UsesXq<kM>()) {
            constexpr bool kOneRun = T == jllm::cuda::layout::kQ8_0;
            const uint4* xq = reinterpret_cast<const uint4*>(xsl);
            const uint4 zero = make_uint4(0, 0, 0, 0);
            XRuns x{xq[u], kOneRun ? zero : xq[kUnitsK + u], zero, zero};
            if constexpr (kXPlanes == 2) {
              x.a_lo = xq[LoArray<kM>() * kUnitsK + u];
              if constexpr (!kOneRun) x.b_lo = xq[(LoArray<kM>() + 1) * kUnitsK + u];
            }
            const float4 meta = xsl[2 * kUnitsK + u];
#pragma unroll
            for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
              for (int r = 0; r < kR; ++r) {
                if (row0 + r < kN) {
                  acc[j][r] += UnitDotXq<T, kK, kXPlanes>(f[b][j][r], x, meta, u, wbase[j] + (row0 + r) * kRowStride);
                }
              }
            }
          } else {
            float4 xv[W::kParts];
#pragma unroll
            for (int p = 0; p < W::kParts; ++p) xv[p] = xsl[p * kUnitsK + u];
            float2 xsum = make_float2(0.f, 0.f);
            if constexpr (W::kHalfSums) xsum = reinterpret_cast<const float2*>(xsl + kK / 4)[u];
#pragma unroll
            for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
              for (int r = 0; r < kR; ++r) {
                if (row0 + r < kN) {
                  acc[j][r] += UnitDot<T, kK>(f[b][j][r], xv, xsum, u, wbase[j] + (row0 + r) * kRowStride);
                }
              }
            }
          }
        }
        load(t + kDepth, f[b]);  // the ring slot is free: refill it
        if (s == kSteps - 1) {
          Finish<kM>(args, split, rg, row0, acc, residual);
#pragma unroll
          for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
            for (int r = 0; r < kR; ++r) acc[j][r] = 0.f;
          }
        }
      }
    }
  }
}

// The CTA's items of member-group kM in split `split` (none: nothing, CTA-uniformly).
template <int kM>
__device__ __forceinline__ void SegmentOf(const jllm::cuda::GemvArgs& args, Range cta, int split, int warp,
                                          bool& first, int s_lo, int s_hi, float4* xs) {
  const int seg0 = split * kRowGroups + RgBegin(kM), seg1 = seg0 + RowGroups(kM);
  const int i0 = max(seg0, cta.begin), i1 = min(seg1, cta.end);
  if (i0 >= i1) return;
  Segment<kM>(args, split, i0, i1, (cta.begin + warp) % kNw, first, s_lo, s_hi, xs);
  first = false;
}

}  // namespace

JLLM_KERNEL(gemv, jllm::cuda::GemvArgs, kThreads, JLLM_MINB) {
  JLLM_DYNAMIC_SMEM(float4, xs);
  const int G = gridDim.x, b = blockIdx.x;
  const Range cta = {static_cast<int>(static_cast<long long>(kItems) * b / G),
                     static_cast<int>(static_cast<long long>(kItems) * (b + 1) / G)};
  if (cta.begin >= cta.end) return;
  const int warp = threadIdx.x >> 5;
  const int s_lo = cta.begin / kRowGroups, s_hi = (cta.end - 1) / kRowGroups;
  bool first = true;
  // Item order: split-major, then member groups.
  for (int split = s_lo; split <= s_hi; ++split) {
    SegmentOf<0>(args, cta, split, warp, first, s_lo, s_hi, xs);
    if constexpr (kMemberGroups >= 2) SegmentOf<1>(args, cta, split, warp, first, s_lo, s_hi, xs);
    if constexpr (kMemberGroups >= 3) SegmentOf<2>(args, cta, split, warp, first, s_lo, s_hi, xs);
  }
}
