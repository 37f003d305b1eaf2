// Per weight type: how a row in the device layout (backends/cuda/device_layout.h) is read.
//
// Two views of the same bytes:
//  - WType<T>::Dequant8(row, e, out): elements e..e+7 (e a multiple of 8) as f32, with the
//    arithmetic of quant/dequantize_blocks.cc, so an embedding row or a prefill weight tile equals
//    cpu_ref's dequantization bit for bit. Used by embed and the prefill GEMM.
//  - the decode GEMV's units: a row is cut into 16-byte units of quant data (kUnits256 per 256
//    elements). One lane owns one unit of R rows at a time: Load() fetches it with 16-byte loads
//    (plus its scales; q6_K and q8_0 rows keep d in a row tail, which TailD() reads and the dots
//    take as an argument), Dot() multiplies it with the unit's activations, which the GEMV stages in
//    shared memory as float4 "parts": element e is part PartOf(e) of unit UnitOf(e), so lanes
//    reading consecutive units read consecutive float4 slots (no bank conflicts). The K-quants
//    (kHalfSums) also take the sums of the unit's two runs of 16 elements (A, B below), staged
//    once instead of added up by every row's dot.
//  - the same units against quantized activations (kXq types: the K-quants and q8_0): x is
//    quantized in aligned runs of 16 elements (d = max|x| / qmax, q = round(x / d)), and a unit's
//    elements are two such runs, A and B (HalfOf(e)), in the order of the unit's quant bytes, so
//    DotXq multiplies them with dp4a; `meta` holds (d_A, Σq_A, d_B, Σq_B). q8_0 units have only A.
//    kPlanes 1: int8 x (qmax 127). kPlanes 2: int16 x (qmax kX16Max) as two int8 planes,
//    q = 256·hi + lo, so each run costs two dp4a passes and the result is exact in int32.
#pragma once

#include "jllm_common.cuh"
#include "backends/cuda/device_layout.h"
#include "launch_geometry.h"

namespace jllm_kernels {

namespace lay = jllm::cuda::layout;
namespace q = jllm::quant;

template <int kType>
struct WType;

// Where Load() reads a unit's bytes: global memory (streaming past L1; 4-byte scale words through
// L1) or a GEMV ring slot in shared memory that holds the same bytes at the same offsets.
struct FromGlobal {
  __device__ static uint4 Load16(const void* p) { return jllm_load_stream16(p); }
  __device__ static jllm_u32 Load4(const void* p) { return jllm_load_ro32(p); }
};
struct FromShared {
  __device__ static uint4 Load16(const void* p) { return jllm_load_shared16(p); }
  __device__ static jllm_u32 Load4(const void* p) { return jllm_load_shared4(p); }
};

// A unit's quantized x: runs A and B, and with two planes their low bytes (x = 256·hi + lo).
struct XRuns {
  uint4 a, b, a_lo, b_lo;
};

// The int16 x of two planes: |q| <= 127·256, so hi = (q + 128) >> 8 is in [-127, 127] and
// lo = q - 256·hi in [-128, 127].
constexpr int kX16Max = 127 * 256;

// Σ code·q over one run of 16 (codes as 4 words of bytes).
template <int kPlanes>
__device__ __forceinline__ int RunDot(const jllm_u32 (&c)[4], uint4 x, uint4 x_lo) {
  if constexpr (kPlanes == 1) {
    return jllm_dp4a4(c, x);
  } else {
    return jllm_dp4a4(c, x) * 256 + jllm_dp4a4(c, x_lo);
  }
}

// Sums of (0.5 + q/256)·x over 4 words of bytes q (each < 128) and 4 float4 of x.
__device__ __forceinline__ float ByteDot16(const jllm_u32 (&w)[4], const float4* xv) {
  float f = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) f = jllm_fma4_bytes(w[i], xv[i], f);
  return f;
}

// 6-bit scale (sc) and min (m) of sub-blocks 2c and 2c+1 of a Q4_K/Q5_K block from the three
// scale words of its header (bytes 4..15 of the block as words y, z, w). Pairs 0, 1 keep both
// in the low 6 bits of bytes of y (scales) and z (mins); pairs 2, 3 take their low 4 bits from
// the nibbles of w and their high 2 bits from bits 6, 7 of y and z. Written without a branch:
// c varies across the lanes of a warp, and a branch would run both sides.
__device__ __forceinline__ void KScalesPair(jllm_u32 s1w, jllm_u32 s2w, jllm_u32 s3w, int c, int& sc_lo,
                                            int& m_lo, int& sc_hi, int& m_hi) {
  const int shift = (c & 1) * 16;  // byte (2c & 3) of a word
  const jllm_u32 s1 = s1w >> shift, s2 = s2w >> shift, s3 = s3w >> shift;
  const bool low = c < 2;
  const jllm_u32 mask_a = low ? 63u : 15u, mask_b = low ? 0u : 0x30u;
  const jllm_u32 a_sc = low ? s1 : s3, a_m = low ? s2 : s3 >> 4;
  sc_lo = static_cast<int>((a_sc & mask_a) | ((s1 >> 2) & mask_b));
  sc_hi = static_cast<int>(((a_sc >> 8) & mask_a) | ((s1 >> 10) & mask_b));
  m_lo = static_cast<int>((a_m & mask_a) | ((s2 >> 2) & mask_b));
  m_hi = static_cast<int>(((a_m >> 8) & mask_a) | ((s2 >> 10) & mask_b));
}

// A Q4_K/Q5_K unit against f32 x: sum_t (d·sc·q_t - dmin·m)·x_t over each half, from the byte
// dots f_lo, f_hi (Σ (0.5 + q/256)·x, so Σ q·x = 256 f - 128 Σx) and the runs' sums of x.
__device__ __forceinline__ float KQuantF32(uint4 hdr, int c, float f_lo, float f_hi, float2 xsum) {
  int sc_lo, m_lo, sc_hi, m_hi;
  KScalesPair(hdr.y, hdr.z, hdr.w, c, sc_lo, m_lo, sc_hi, m_hi);
  const float d = jllm_half_to_float(static_cast<jllm_u16>(hdr.x & 0xFFFFu));
  const float dmin = jllm_half_to_float(static_cast<jllm_u16>(hdr.x >> 16));
  const float d_lo = d * static_cast<float>(sc_lo), d_hi = d * static_cast<float>(sc_hi);
  float a = 256.f * d_lo * f_lo;
  a = fmaf(-fmaf(128.f, d_lo, dmin * static_cast<float>(m_lo)), xsum.x, a);
  a = fmaf(256.f * d_hi, f_hi, a);
  return fmaf(-fmaf(128.f, d_hi, dmin * static_cast<float>(m_hi)), xsum.y, a);
}

// A Q4_K/Q5_K unit against quantized x: sum_t (d·sc·q_t - dmin·m)·dx·xq_t over each half, from
// the dp4a sums pa, pb (Σ q·xq) and meta's Σ xq; `hdr` is the block's first 16 bytes.
__device__ __forceinline__ float KQuantXq(uint4 hdr, int c, int pa, int pb, float4 meta) {
  int sc_lo, m_lo, sc_hi, m_hi;
  KScalesPair(hdr.y, hdr.z, hdr.w, c, sc_lo, m_lo, sc_hi, m_hi);
  const float d = jllm_half_to_float(static_cast<jllm_u16>(hdr.x & 0xFFFFu));
  const float dmin = jllm_half_to_float(static_cast<jllm_u16>(hdr.x >> 16));
  const float a = fmaf(d * static_cast<float>(sc_lo), static_cast<float>(pa), -dmin * static_cast<float>(m_lo) * meta.y);
  const float b = fmaf(d * static_cast<float>(sc_hi), static_cast<float>(pb), -dmin * static_cast<float>(m_hi) * meta.w);
  return fmaf(meta.x, a, meta.z * b);
}

// The dots Q4_K and Q5_K share (their units differ only in how Codes unpacks the quant values):
// W is the type's WType, which supplies Frag (with its 16-byte header `hdr`) and Codes.
template <class W>
struct KQuant45Dots {
  template <class F>
  __device__ static float Dot(const F& f, const float4* xv, float2 xsum, int u, float /*d*/) {
    jllm_u32 lo[4], hi[4];
    W::Codes(f, u, lo, hi);
    return KQuantF32(f.hdr, (u & 7) >> 1, ByteDot16(lo, xv), ByteDot16(hi, xv + 4), xsum);
  }

  static constexpr bool kXq = true;
  static constexpr bool kHalfSums = true;  // the f32 dot takes the sums of its unit's two runs
  __device__ static int HalfOf(int e) { return (e >> 5) & 1; }
  template <int kPlanes, class F>
  __device__ static float DotXq(const F& f, const XRuns& x, float4 meta, int u, float /*d*/) {
    jllm_u32 lo[4], hi[4];
    W::Codes(f, u, lo, hi);
    return KQuantXq(f.hdr, (u & 7) >> 1, RunDot<kPlanes>(lo, x.a, x.a_lo), RunDot<kPlanes>(hi, x.b, x.b_lo), meta);
  }
};

// ---- q4_K ---------------------------------------------------------------------------------
// Unit k (0..7) of a block: qs[16k..16k+16): with c = k/2, h = k%2, low nibbles are elements
// 64c + 16h + [0,16) (sub-block 2c), high nibbles the same + 32 (sub-block 2c+1).
template <>
struct WType<lay::kQ4_K> : KQuant45Dots<WType<lay::kQ4_K>> {
  static constexpr int kUnits256 = 8;
  static constexpr int kParts = 8;
  __device__ static int UnitOf(int e) { return 8 * (e >> 8) + 2 * ((e & 255) >> 6) + ((e >> 4) & 1); }
  __device__ static int PartOf(int e) { return 4 * ((e >> 5) & 1) + ((e >> 2) & 3); }

  struct Frag {
    uint4 qs, hdr;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) {
    const jllm_u8* blk = row + (u >> 3) * static_cast<int>(sizeof(q::BlockQ4_K));
    return {M::Load16(blk + q::kQ4KQsOffset + 16 * (u & 7)), M::Load16(blk)};
  }
  // The unit's quant values as bytes: run A (low nibbles) and run B (high nibbles).
  __device__ static void Codes(const Frag& f, int /*u*/, jllm_u32 (&lo)[4], jllm_u32 (&hi)[4]) {
    const jllm_u32 w[4] = {f.qs.x, f.qs.y, f.qs.z, f.qs.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = w[i] & 0x0F0F0F0Fu;
      hi[i] = (w[i] >> 4) & 0x0F0F0F0Fu;
    }
  }
  __device__ static void Dequant8(const jllm_u8* row, int e, float* out) {
    const q::BlockQ4_K* blk = reinterpret_cast<const q::BlockQ4_K*>(row) + (e >> 8);
    const int r = e & 255, c = r >> 6, hi = (r >> 5) & 1, l0 = r & 31;
    jllm_u8 sc, m;
    q::UnpackScaleMinK4(2 * c + hi, blk->scales, &sc, &m);
    const float d = jllm_half_to_float(blk->d), dmin = jllm_half_to_float(blk->dmin);
    const float d1 = d * sc, m1 = dmin * m;
    const jllm_u8* qs = blk->qs + 32 * c + l0;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = d1 * (hi ? (qs[i] >> 4) : (qs[i] & 0xF)) - m1;
  }
};

// ---- K-quant unit pairs (JLLM_PAIRS; launch_geometry.h) -----------------------------------
// A pair unit is 64 elements of a block read by one lane against x quantized per pair (one
// scale d_x): its four runs of 16 (R0..R3, in the order of the unit's quant bytes) as arrays
// 0..3 of the member's x slot (with two planes the low bytes as arrays 4..7), then the type's
// meta (uint4 array 8, or 4 with one plane) and d_x where the meta has no room (array 9 / 5).
// The four runs of a pair are staged by lane groups l, l ^ 1, l ^ kMateXor, l ^ 1 ^ kMateXor
// (consecutive 16-element runs go to consecutive groups of the lanes that stage one run; gemv.cu
// scales the xors by their count), which share the pair's scale.

// The slot array a (uint4 per pair) of the pair unit u; kP = pairs in K.
template <int kP>
__device__ __forceinline__ uint4 PairX(const uint4* slot, int a, int u) { return slot[a * kP + u]; }

// Words j·kW .. j·kW + kW - 1 of a run's four (kW = 4: all of it, in one store).
template <int kW>
__device__ __forceinline__ void StoreRunWords(uint4* run, int j, const jllm_u32 (&w)[kW]) {
  static_assert(kW == 1 || kW == 2 || kW == 4, "a run is 4 words");
  if constexpr (kW == 4) {
    *run = make_uint4(w[0], w[1], w[2], w[3]);
  } else if constexpr (kW == 2) {
    reinterpret_cast<uint2*>(run)[j] = make_uint2(w[0], w[1]);
  } else {
    reinterpret_cast<jllm_u32*>(run)[j] = w[0];
  }
}

// Words j·kW on of run i (0..3) of pair p, quantized: q (the high plane, or the only one), q_lo
// (the low plane).
template <int kP, int kPlanes, int kW>
__device__ __forceinline__ void StagePairRun(uint4* slot, int p, int i, int j, const jllm_u32 (&q)[kW],
                                             const jllm_u32 (&q_lo)[kW]) {
  StoreRunWords(slot + i * kP + p, j, q);
  if constexpr (kPlanes == 2) StoreRunWords(slot + (4 + i) * kP + p, j, q_lo);
}
// The uint4 array of the pair meta (after the runs).
template <int kPlanes>
constexpr int PairMetaArray() { return kPlanes == 2 ? 8 : 4; }

// Σ code·xq over the four runs of a pair for one plane of x (codes as 16 words of bytes: runs R0
// R1 R2 R3 of four words each); kHiU8: R2 and R3 are unsigned bytes (q4_K's high nibbles in
// place, 16·q).
template <int kP, bool kHiU8>
__device__ __forceinline__ void PairRunDots(const jllm_u32 (&c)[16], const uint4* slot, int plane, int u, int (&p)[4]) {
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const uint4 x = PairX<kP>(slot, 4 * plane + k, u);
    const jllm_u32 xw[4] = {x.x, x.y, x.z, x.w};
    int acc = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc = kHiU8 && k >= 2 ? jllm_dp4a_us(c[4 * k + i], xw[i], acc) : jllm_dp4a(c[4 * k + i], xw[i], acc);
    p[k] = acc;
  }
}
template <int kP, int kPlanes, bool kHiU8>
__device__ __forceinline__ void PairDots(const jllm_u32 (&c)[16], const uint4* slot, int u, int (&p)[4]) {
  PairRunDots<kP, kHiU8>(c, slot, 0, u, p);
  if constexpr (kPlanes == 2) {
    int lo[4];
    PairRunDots<kP, kHiU8>(c, slot, 1, u, lo);
#pragma unroll
    for (int k = 0; k < 4; ++k) p[k] = p[k] * 256 + lo[k];
  }
}

// q4_K: unit c (0..3) of a block is qs[32c..32c+32): low nibbles are sub-block 2c (elements 64c +
// [0,32), runs R0 R1), high nibbles sub-block 2c+1 (64c + 32 + [0,32), R2 R3). Meta: (d_x, Q_lo,
// Q_hi, 0), the Σxq of the two sub-blocks, so both stay in int32 until the end:
//   Σ (d·sc_j·q - dmin·m_j)·d_x·xq = d_x·(d·Σ_j sc_j·P_j - dmin·Σ_j m_j·Q_j),
// P_j = Σ q·xq over sub-block j: |P_j| <= 32·15·kX16Max, so Σ sc·P < 2^31.
template <>
struct WType<jllm::cuda::geometry::kGemvQ4KPairs> {
  static constexpr bool kXq = true;
  static constexpr bool kHalfSums = false;
  static constexpr int kUnits256 = 4;
  static constexpr int kMateXor = 2;  // runs 64c + 16·[0,4) are four consecutive runs
  __device__ static int PairOf(int e) { return e >> 6; }
  __device__ static int RunOf(int e) { return (e >> 4) & 3; }

  struct Frag {
    uint4 q0, q1, hdr;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) {
    const jllm_u8* blk = row + (u >> 2) * static_cast<int>(sizeof(q::BlockQ4_K));
    const jllm_u8* qs = blk + q::kQ4KQsOffset + 32 * (u & 3);
    return {M::Load16(qs), M::Load16(qs + 16), M::Load16(blk)};
  }
  // Words j·kW on of the run at e, staged by the lanes of run index RunOf(e); sums[k]: Σxq of
  // run k of the pair (the meta is written by run 0's first lane).
  template <int kP, int kPlanes, int kW>
  __device__ static void StageRun(uint4* slot, int e, int j, const jllm_u32 (&q)[kW], const jllm_u32 (&q_lo)[kW], float d,
                                  const int (&sums)[4]) {
    const int p = PairOf(e), i = RunOf(e);
    StagePairRun<kP, kPlanes>(slot, p, i, j, q, q_lo);
    if (i == 0 && j == 0) {
      slot[PairMetaArray<kPlanes>() * kP + p] = make_uint4(
          __float_as_uint(d), static_cast<jllm_u32>(sums[0] + sums[1]), static_cast<jllm_u32>(sums[2] + sums[3]), 0u);
    }
  }
  template <int kK, int kPlanes>
  __device__ static float DotPair(const Frag& f, const uint4* slot, int u, float /*d*/) {
    constexpr int kP = kK / 64;
    const jllm_u32 w[8] = {f.q0.x, f.q0.y, f.q0.z, f.q0.w, f.q1.x, f.q1.y, f.q1.z, f.q1.w};
    jllm_u32 c[16];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      c[i] = w[i] & 0x0F0F0F0Fu;
      c[8 + i] = w[i] & 0xF0F0F0F0u;  // 16·q, dotted as u8
    }
    int p[4];
    PairDots<kP, kPlanes, true>(c, slot, u, p);
    const int p_lo = p[0] + p[1], p_hi = (p[2] + p[3]) >> 4;  // exact: a multiple of 16
    int sc_lo, m_lo, sc_hi, m_hi;
    KScalesPair(f.hdr.y, f.hdr.z, f.hdr.w, u & 3, sc_lo, m_lo, sc_hi, m_hi);
    const uint4 meta = PairX<kP>(slot, PairMetaArray<kPlanes>(), u);
    const int s = sc_lo * p_lo + sc_hi * p_hi;
    const int m = m_lo * static_cast<int>(meta.y) + m_hi * static_cast<int>(meta.z);
    const float d = jllm_half_to_float(static_cast<jllm_u16>(f.hdr.x & 0xFFFFu));
    const float dmin = jllm_half_to_float(static_cast<jllm_u16>(f.hdr.x >> 16));
    return __uint_as_float(meta.x) * fmaf(d, static_cast<float>(s), -dmin * static_cast<float>(m));
  }
};

// q6_K (device layout: bodies, d at the row tail): unit c = 2hh + up (0..3) of a block is
// ql[32c..32c+32): byte i's low nibble is element A_i = 128hh + 32up + i (runs R0 R1), its high
// nibble B_i = A_i + 64 (R2 R3); their high two bits are bits 2up and 4 + 2up of qh[32hh + i],
// their int8 scales (one per run) bytes 2up, 2up + 1 of scale words 2hh (A) and 2hh + 1 (B).
// Meta: the four runs' Σxq, d_x in array 9 (5): Σ_k sc_k·(P_k - 32·Q_k), exactly in int64.
template <>
struct WType<jllm::cuda::geometry::kGemvQ6KPairs> {
  static constexpr bool kXq = true;
  static constexpr bool kHalfSums = false;
  static constexpr int kUnits256 = 4;
  static constexpr int kMateXor = 4;  // runs A, A + 16, A + 64, A + 80
  __device__ static int PairOf(int e) { return 4 * (e >> 8) + 2 * ((e >> 7) & 1) + ((e >> 5) & 1); }
  __device__ static int RunOf(int e) { return 2 * ((e >> 6) & 1) + ((e >> 4) & 1); }

  struct Frag {
    uint4 ql0, ql1, qh0, qh1;
    jllm_u32 sc_a, sc_b;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) {
    const jllm_u8* body = row + (u >> 2) * q::kQ6KBodyBytes;
    const int c = u & 3, hh = c >> 1;
    const jllm_u8* ql = body + 32 * c;
    const jllm_u8* qh = body + q::kQ6KQhOffset + 32 * hh;
    const jllm_u8* sc = body + q::kQ6KScalesOffset + 8 * hh;
    return {M::Load16(ql), M::Load16(ql + 16), M::Load16(qh), M::Load16(qh + 16), M::Load4(sc), M::Load4(sc + 4)};
  }
  template <int kP, int kPlanes, int kW>
  __device__ static void StageRun(uint4* slot, int e, int j, const jllm_u32 (&q)[kW], const jllm_u32 (&q_lo)[kW], float d,
                                  const int (&sums)[4]) {
    const int p = PairOf(e), i = RunOf(e);
    StagePairRun<kP, kPlanes>(slot, p, i, j, q, q_lo);
    if (i == 0 && j == 0) {
      slot[PairMetaArray<kPlanes>() * kP + p] = make_uint4(static_cast<jllm_u32>(sums[0]), static_cast<jllm_u32>(sums[1]),
                                                           static_cast<jllm_u32>(sums[2]), static_cast<jllm_u32>(sums[3]));
      reinterpret_cast<float*>(slot + (PairMetaArray<kPlanes>() + 1) * kP)[p] = d;
    }
  }
  // The d of pair u's block, from the row tail (read through L1: 8 lanes share 4 values).
  template <int kK>
  __device__ static float TailD(const jllm_u8* row, int u) {
    return jllm_half_to_float(jllm_load_u16(row + lay::TailOffset(lay::kQ6_K, kK) + 2 * (u >> 2)));
  }
  template <int kK, int kPlanes>
  __device__ static float DotPair(const Frag& f, const uint4* slot, int u, float d) {
    constexpr int kP = kK / 64;
    const int up = u & 1;
    const jllm_u32 l[8] = {f.ql0.x, f.ql0.y, f.ql0.z, f.ql0.w, f.ql1.x, f.ql1.y, f.ql1.z, f.ql1.w};
    const jllm_u32 h[8] = {f.qh0.x, f.qh0.y, f.qh0.z, f.qh0.w, f.qh1.x, f.qh1.y, f.qh1.z, f.qh1.w};
    jllm_u32 c[16];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const jllm_u32 t = h[i] >> (2 * up);
      c[i] = (l[i] & 0x0F0F0F0Fu) | ((t << 4) & 0x30303030u);
      c[8 + i] = ((l[i] >> 4) & 0x0F0F0F0Fu) | (t & 0x30303030u);
    }
    int p[4];
    PairDots<kP, kPlanes, false>(c, slot, u, p);
    const uint4 meta = PairX<kP>(slot, PairMetaArray<kPlanes>(), u);
    const int qs[4] = {static_cast<int>(meta.x), static_cast<int>(meta.y), static_cast<int>(meta.z),
                       static_cast<int>(meta.w)};
    const jllm_u32 sw[2] = {f.sc_a >> (16 * up), f.sc_b >> (16 * up)};
    long long s = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int sc = static_cast<jllm_i8>((sw[k >> 1] >> (8 * (k & 1))) & 0xFF);
      s += static_cast<long long>(sc) * (p[k] - 32 * qs[k]);  // |p - 32·Q| <= 16·32·kX16Max
    }
    const float dx = reinterpret_cast<const float*>(slot + (PairMetaArray<kPlanes>() + 1) * kP)[u];
    return dx * d * static_cast<float>(s);
  }
};

// ---- q5_K ---------------------------------------------------------------------------------
// Units as q4_K over qs; the high bits of unit k's elements are bits 2c (low nibbles) and 2c+1
// (high nibbles) of qh[16h..16h+16).
template <>
struct WType<lay::kQ5_K> : KQuant45Dots<WType<lay::kQ5_K>> {
  static constexpr int kUnits256 = 8;
  static constexpr int kParts = 8;
  __device__ static int UnitOf(int e) { return WType<lay::kQ4_K>::UnitOf(e); }
  __device__ static int PartOf(int e) { return WType<lay::kQ4_K>::PartOf(e); }

  struct Frag {
    uint4 qs, qh, hdr;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) {
    const jllm_u8* blk = row + (u >> 3) * static_cast<int>(sizeof(q::BlockQ5_K));
    const int k = u & 7;
    return {M::Load16(blk + q::kQ5KQsOffset + 16 * k), M::Load16(blk + q::kQ5KQhOffset + 16 * (k & 1)),
            M::Load16(blk)};
  }
  // The unit's 5-bit quant values as bytes: run A (low nibbles) and run B (high nibbles).
  __device__ static void Codes(const Frag& f, int u, jllm_u32 (&lo)[4], jllm_u32 (&hi)[4]) {
    const int c = (u & 7) >> 1;
    const jllm_u32 w[4] = {f.qs.x, f.qs.y, f.qs.z, f.qs.w};
    const jllm_u32 h[4] = {f.qh.x, f.qh.y, f.qh.z, f.qh.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      lo[i] = (w[i] & 0x0F0F0F0Fu) | (((h[i] >> (2 * c)) & 0x01010101u) << 4);
      hi[i] = ((w[i] >> 4) & 0x0F0F0F0Fu) | (((h[i] >> (2 * c + 1)) & 0x01010101u) << 4);
    }
  }
  __device__ static void Dequant8(const jllm_u8* row, int e, float* out) {
    const q::BlockQ5_K* blk = reinterpret_cast<const q::BlockQ5_K*>(row) + (e >> 8);
    const int r = e & 255, c = r >> 6, hi = (r >> 5) & 1, l0 = r & 31;
    jllm_u8 sc, m;
    q::UnpackScaleMinK4(2 * c + hi, blk->scales, &sc, &m);
    const float d = jllm_half_to_float(blk->d), dmin = jllm_half_to_float(blk->dmin);
    const float d1 = d * sc, m1 = dmin * m;
    const jllm_u8 bit = static_cast<jllm_u8>(1u << (2 * c + hi));
    const jllm_u8* qs = blk->qs + 32 * c + l0;
    const jllm_u8* qh = blk->qh + l0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int nib = hi ? (qs[i] >> 4) : (qs[i] & 0xF);
      out[i] = d1 * (nib + ((qh[i] & bit) ? 16 : 0)) - m1;
    }
  }
};

// ---- q6_K ---------------------------------------------------------------------------------
// Device layout: 208-byte bodies (ql, qh, scales), d values at the row tail. Unit k = 4hh + 2up
// + jj of a block is ql[16k..16k+16): low nibbles are elements A = 128hh + 32up + 16jj + [0,16)
// (high 2 bits at bit 2up of qh[32hh + 16jj + ·]), high nibbles B = A + 64 (bits 4 + 2up).
template <>
struct WType<lay::kQ6_K> {
  static constexpr int kUnits256 = 8;
  static constexpr int kParts = 8;
  __device__ static int UnitOf(int e) {
    const int r = e & 127, quad = r >> 5;
    return 8 * (e >> 8) + 4 * ((e >> 7) & 1) + 2 * (quad & 1) + ((r >> 4) & 1);
  }
  __device__ static int PartOf(int e) { return 4 * (((e & 127) >> 6) & 1) + ((e >> 2) & 3); }

  // The unit's two scale bytes (groups ga and ga + 4) sit in two consecutive words of the 16
  // scales; eight lanes read the same words, so they come through L1.
  struct Frag {
    uint4 ql, qh;
    jllm_u32 sc_a, sc_b;
  };
  __device__ static int GroupA(int k) { return 8 * (k >> 2) + 2 * ((k >> 1) & 1) + (k & 1); }
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) {
    const jllm_u8* body = row + (u >> 3) * q::kQ6KBodyBytes;
    const int k = u & 7;
    const int hh = k >> 2, jj = k & 1;
    const int ga = GroupA(k);
    return {M::Load16(body + 16 * k), M::Load16(body + q::kQ6KQhOffset + 32 * hh + 16 * jj),
            M::Load4(body + q::kQ6KScalesOffset + 4 * (ga >> 2)),
            M::Load4(body + q::kQ6KScalesOffset + 4 * ((ga + 4) >> 2))};
  }
  // The unit's 6-bit quant values (before the -32 offset) as bytes: runs A and B.
  __device__ static void Codes(const Frag& f, int u, jllm_u32 (&a)[4], jllm_u32 (&b)[4]) {
    const int up = ((u & 7) >> 1) & 1;
    const jllm_u32 w[4] = {f.ql.x, f.ql.y, f.ql.z, f.ql.w};
    const jllm_u32 h[4] = {f.qh.x, f.qh.y, f.qh.z, f.qh.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      a[i] = (w[i] & 0x0F0F0F0Fu) | (((h[i] >> (2 * up)) & 0x03030303u) << 4);
      b[i] = ((w[i] >> 4) & 0x0F0F0F0Fu) | (((h[i] >> (4 + 2 * up)) & 0x03030303u) << 4);
    }
  }
  // The d of unit u's block, from the row tail (read through L1: 32 lanes share 4 values).
  template <int kK>
  __device__ static float TailD(const jllm_u8* row, int u) {
    return jllm_half_to_float(jllm_load_u16(row + lay::TailOffset(lay::kQ6_K, kK) + 2 * (u >> 3)));
  }
  // The scales of runs A and B.
  __device__ static void Scales(const Frag& f, int u, float& sc_a, float& sc_b) {
    const int k = u & 7, hh = k >> 2, up = (k >> 1) & 1, jj = k & 1;
    // Scale groups of 16: A is group 8hh + 2up + jj, B the same + 4 (same byte, next word).
    const int ga = 8 * hh + 2 * up + jj;
    sc_a = static_cast<float>(static_cast<jllm_i8>((f.sc_a >> (8 * (ga & 3))) & 0xFF));
    sc_b = static_cast<float>(static_cast<jllm_i8>((f.sc_b >> (8 * (ga & 3))) & 0xFF));
  }
  __device__ static float Dot(const Frag& f, const float4* xv, float2 xsum, int u, float d) {
    jllm_u32 a[4], b[4];
    Codes(f, u, a, b);
    const float f_a = ByteDot16(a, xv), f_b = ByteDot16(b, xv + 4);
    float sc_a, sc_b;
    Scales(f, u, sc_a, sc_b);
    // sum_t (q_t - 32) x_t = 256 f - 160 sum.
    const float dot = fmaf(sc_a, fmaf(256.f, f_a, -160.f * xsum.x), sc_b * fmaf(256.f, f_b, -160.f * xsum.y));
    return d * dot;
  }

  static constexpr bool kXq = true;
  static constexpr bool kHalfSums = true;
  __device__ static int HalfOf(int e) { return (e >> 6) & 1; }
  template <int kPlanes>
  __device__ static float DotXq(const Frag& f, const XRuns& x, float4 meta, int u, float d) {
    jllm_u32 a[4], b[4];
    Codes(f, u, a, b);
    float sc_a, sc_b;
    Scales(f, u, sc_a, sc_b);
    // sum_t (q_t - 32)·xq_t = Σ q·xq - 32 Σ xq.
    const float pa = static_cast<float>(RunDot<kPlanes>(a, x.a, x.a_lo)) - 32.f * meta.y;
    const float pb = static_cast<float>(RunDot<kPlanes>(b, x.b, x.b_lo)) - 32.f * meta.w;
    return d * fmaf(sc_a * meta.x, pa, sc_b * meta.z * pb);
  }

  template <int kK>
  __device__ static void Dequant8K(const jllm_u8* row, int e, float* out) {
    const jllm_u8* body = row + (e >> 8) * q::kQ6KBodyBytes;
    const int r = e & 255, hh = r >> 7, quad = (r >> 5) & 3, l0 = r & 31;
    const jllm_u8* ql = body + 64 * hh + 32 * (quad & 1) + l0;
    const jllm_u8* qh = body + q::kQ6KQhOffset + 32 * hh + l0;
    const jllm_i8 sc = reinterpret_cast<const jllm_i8*>(body + q::kQ6KScalesOffset)[r >> 4];
    const float d = jllm_half_to_float(jllm_load_u16(row + lay::TailOffset(lay::kQ6_K, kK) + 2 * (e >> 8)));
    const int shift = 2 * quad;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int nib = (quad >> 1) ? (ql[i] >> 4) : (ql[i] & 0xF);
      const int qv = (nib | (((qh[i] >> shift) & 3) << 4)) - 32;
      out[i] = d * sc * qv;
    }
  }
};

// ---- q8_0 ---------------------------------------------------------------------------------
// Device layout: 32-byte bodies (qs), d values at the row tail. Unit u is qs bytes [16u, 16u+16)
// of the row: elements 16u + [0,16), block u/2.
template <>
struct WType<lay::kQ8_0> {
  static constexpr int kUnits256 = 16;
  static constexpr int kParts = 4;
  __device__ static int UnitOf(int e) { return e >> 4; }
  __device__ static int PartOf(int e) { return (e >> 2) & 3; }

  struct Frag {
    uint4 qs;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) { return {M::Load16(row + 16 * u)}; }
  // The d of unit u's block (a d every 32 weights), from the row tail.
  template <int kK>
  __device__ static float TailD(const jllm_u8* row, int u) {
    return jllm_half_to_float(jllm_load_u16(row + lay::TailOffset(lay::kQ8_0, kK) + 2 * (u >> 1)));
  }
  __device__ static float Dot(const Frag& f, const float4* xv, float2 /*xsum*/, int /*u*/, float d) {
    const jllm_u32 w[4] = {f.qs.x, f.qs.y, f.qs.z, f.qs.w};
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float4 x = xv[i];
      acc = fmaf(static_cast<float>(static_cast<jllm_i8>(w[i] & 0xFF)), x.x, acc);
      acc = fmaf(static_cast<float>(static_cast<jllm_i8>((w[i] >> 8) & 0xFF)), x.y, acc);
      acc = fmaf(static_cast<float>(static_cast<jllm_i8>((w[i] >> 16) & 0xFF)), x.z, acc);
      acc = fmaf(static_cast<float>(static_cast<jllm_i8>(w[i] >> 24)), x.w, acc);
    }
    return d * acc;
  }

  static constexpr bool kXq = true;
  static constexpr bool kHalfSums = false;
  __device__ static int HalfOf(int) { return 0; }
  template <int kPlanes>
  __device__ static float DotXq(const Frag& f, const XRuns& x, float4 meta, int /*u*/, float d) {
    const jllm_u32 w[4] = {f.qs.x, f.qs.y, f.qs.z, f.qs.w};
    return d * meta.x * static_cast<float>(RunDot<kPlanes>(w, x.a, x.a_lo));
  }

  template <int kK>
  __device__ static void Dequant8K(const jllm_u8* row, int e, float* out) {
    const jllm_i8* qs = reinterpret_cast<const jllm_i8*>(row) + e;
    const float d = jllm_half_to_float(jllm_load_u16(row + lay::TailOffset(lay::kQ8_0, kK) + 2 * (e >> 5)));
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = qs[i] * d;
  }
};

// ---- f16, bf16, f32 ------------------------------------------------------------------------
template <int kType>
struct WTypeHalf {
  static constexpr bool kXq = false;
  static constexpr bool kHalfSums = false;
  static constexpr int kUnits256 = 32;  // 8 elements per unit
  static constexpr int kParts = 2;
  __device__ static int UnitOf(int e) { return e >> 3; }
  __device__ static int PartOf(int e) { return (e >> 2) & 1; }
  __device__ static float ToFloat(jllm_u16 h) {
    return kType == lay::kF16 ? jllm_half_to_float(h) : jllm_bf16_to_float(h);
  }
  struct Frag {
    uint4 v;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) { return {M::Load16(row + 16 * u)}; }
  __device__ static float Dot(const Frag& f, const float4* xv, float2 /*xsum*/, int /*u*/, float /*d*/) {
    const jllm_u32 w[4] = {f.v.x, f.v.y, f.v.z, f.v.w};
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float4 x = xv[i];
      acc = fmaf(ToFloat(static_cast<jllm_u16>(w[2 * i] & 0xFFFF)), x.x, acc);
      acc = fmaf(ToFloat(static_cast<jllm_u16>(w[2 * i] >> 16)), x.y, acc);
      acc = fmaf(ToFloat(static_cast<jllm_u16>(w[2 * i + 1] & 0xFFFF)), x.z, acc);
      acc = fmaf(ToFloat(static_cast<jllm_u16>(w[2 * i + 1] >> 16)), x.w, acc);
    }
    return acc;
  }
  __device__ static void Dequant8(const jllm_u8* row, int e, float* out) {
    const jllm_u16* p = reinterpret_cast<const jllm_u16*>(row) + e;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = ToFloat(p[i]);
  }
};
template <>
struct WType<lay::kF16> : WTypeHalf<lay::kF16> {};
template <>
struct WType<lay::kBF16> : WTypeHalf<lay::kBF16> {};

template <>
struct WType<lay::kF32> {
  static constexpr bool kXq = false;
  static constexpr bool kHalfSums = false;
  static constexpr int kUnits256 = 64;  // 4 elements per unit
  static constexpr int kParts = 1;
  __device__ static int UnitOf(int e) { return e >> 2; }
  __device__ static int PartOf(int) { return 0; }
  struct Frag {
    uint4 v;
  };
  template <class M = FromGlobal>
  __device__ static Frag Load(const jllm_u8* row, int u) { return {M::Load16(row + 16 * u)}; }
  __device__ static float Dot(const Frag& f, const float4* xv, float2 /*xsum*/, int /*u*/, float /*d*/) {
    const float4 x = xv[0];
    float acc = __uint_as_float(f.v.x) * x.x;
    acc = fmaf(__uint_as_float(f.v.y), x.y, acc);
    acc = fmaf(__uint_as_float(f.v.z), x.z, acc);
    return fmaf(__uint_as_float(f.v.w), x.w, acc);
  }
  __device__ static void Dequant8(const jllm_u8* row, int e, float* out) {
    const float* p = reinterpret_cast<const float*>(row) + e;
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = p[i];
  }
};

// The d of unit u of a row for the dots (kWt a unit reader, launch_geometry.h GemvUnitReader): the
// readers of q6_K and q8_0 rows keep d in the row tail, which only they know how to index (and they
// need the row length for it); every other reader takes 0 and ignores it.
template <int kWt, int kK>
__device__ __forceinline__ float TailD(const jllm_u8* row, int u) {
  if constexpr (lay::HasScaleTail(kWt & 0xFF)) {
    return WType<kWt>::template TailD<kK>(row, u);
  } else {
    return 0.f;
  }
}
// Uniform entry point: the q6_K and q8_0 readers need the row length for the d tail.
template <int kType, int kK>
__device__ __forceinline__ void Dequant8(const jllm_u8* row, int e, float* out) {
  if constexpr (kType == lay::kQ6_K || kType == lay::kQ8_0) {
    WType<kType>::template Dequant8K<kK>(row, e, out);
  } else {
    WType<kType>::Dequant8(row, e, out);
  }
}

}  // namespace jllm_kernels
