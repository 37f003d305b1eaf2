// Decode attention (one query token) for GQA on the f16 tensor cores, for an f16 KV cache:
// out_h = softmax(scale · q_h·K^T) · V over the S = pos + 1 cached positions, for the G <= 8 query
// heads that share a kv head. The split of the sequence, the warps' tiles and the merges are
// attention_rows.cu's (warp w takes tiles w, w + NW, ... of its CTA's chunk; the warps merge in
// shared memory, the splits in attention_merge.cuh); a tile is 16 positions, and both products
// are mma.sync m16n8k16 (jllm_common.cuh gives the fragments; g = lane / 4, t = lane % 4):
//
//   S = Q · K^T   rows the G heads (rows G..15 zero), columns 8 positions per MMA, k the head
//                 dimensions. The dot product does not care in which order the dimensions are
//                 summed, so k steps 2i and 2i + 1 take dimensions 8(4i + t) .. + 7 for lane
//                 t's fragment elements: a lane reads D / 32 pieces of 16 bytes of one cache
//                 row per 8 positions, as the B fragments need them, the four lanes of a row
//                 reading 64 contiguous bytes per piece (whole 32-byte sectors), and holds q's
//                 matching dimensions as f16 hi + lo (q = hi + lo to ~22 bits: two MMAs, as
//                 the prefill GEMM).
//   O = P · V     rows the heads again, k the tile's 16 positions (P from S's accumulators,
//                 which already sit as P's A fragment), columns the dimensions: n tile j column
//                 n is dimension 64(j / 8) + 8n + j % 8, so a lane reads D / 64 pieces of 16
//                 bytes of 4 rows (the 8 lanes of a row: 128 contiguous bytes per piece) and
//                 pairs them across rows (two rows' halves in one register) for its B
//                 fragments. P is split hi + lo too; V is exact.
//
// The online softmax runs per head on S's accumulators (a head's 16 scores of a tile lie in the
// 4 lanes of one g). Per 16 positions a warp issues 64 MMAs and ~200 other instructions, against
// attention_rows.cu's 128 x G FMAs per lane.
//
// JLLM_EARLY 1: a warp's first tile of K and V is loaded before the grid dependency — all but
// the row of the newest position, which head_ops (the predecessor) appends, loaded after it with
// q — so the cache's first round trip overlaps head_ops instead of following it (SplitOfStep
// says why the rest of the cache and the position may be read early).
//
// JLLM_RING n >= 2: tiles pass through a ring of n tiles per warp in shared memory, filled by
// cp.async n - 1 tiles ahead of the one computed, so a warp has up to n tiles of the cache in
// flight instead of one (at long context the kernel waited on each tile's round trip: ncu at
// 8k, docs/PERF.md). Each lane copies exactly the 16-byte pieces it reads itself, into its own
// column of the slot (piece-major, lane-minor: conflict-free), so a lane waits for its own
// copies only and no warp barrier is needed. RING 0: each tile is loaded into registers.
//
// JLLM_AHEAD a >= 1 (RING 0 only): at tile k a warp asks L2 for its tile k + a (prefetch, one
// 128-byte line of K and one of V a lane: a tile's 16 rows of a matrix are contiguous), so its
// register loads hit L2 while HBM streams the tiles after them — more of the cache in flight
// without registers, shared memory or a wait.
//
// JLLM_DYNAMIC n >= 1 (RING 0 and AHEAD 0 only): the warps take the sequence in grabs of n tiles
// instead of fixed chunks — warp w of split s its grab s·NW + w first (loaded early as above),
// then, with more than one split active, the grab after the static ones that its kv head's
// counter (counters[HK + hk], reset by the merging CTA) hands out, asked for at the start of
// the grab before so the round trip hides behind it: the CTAs that the memory system serves
// first take more of the cache. A warp's softmax does not care which positions it sees; the
// partials and merges stay per split (the sums' order varies from run to run). With one split
// active its warps stride over the grabs. Measured at stop 30 (docs/PERF.md): the slowest CTA
// still ends 4.3 µs after the median at 8k — that is the end-of-kernel chain, not uneven work
// — and the grabs cost 0.8 % (off).
//
// JLLM_PREFETCH_LATE 1: the weights of a later kernel (JLLM_PREFETCH=2: the attention output
// projection's) are asked of L2 once the CTA's warps have streamed their tiles — at long
// context the end of attention (last tiles, fence, ticket, merge: ~7 µs a layer at 8k,
// docs/PERF.md) leaves HBM idle — instead of at the start, where they compete with the cache.
// Measured slower at stop 30 (the projection's stream did not move; off).
//
// JLLM_FUSED_HEAD 1 (RING 0, DYNAMIC 0): the kernel runs the layer's head ops itself — Qwen3's
// q/k RMSNorm, RoPE and KV append, head_ops.cu's work — so the layer has one kernel and one
// dependency fewer. Every lane group g norms and rotates query head g from the QKV GEMV's raw q
// in the MMA layout it stages q in (a head's dimensions lie in the 4 lanes of g, the pair d,
// d + NROT / 2 in one lane, so the norm is two shuffles and RoPE stays in registers), and the
// warp whose tile holds the newest position (fixed chunks: known from the position) norms,
// rotates and appends that position's k and v — to the cache, for later steps, and to a row of
// shared memory that its own loads of that position read, so no load waits on a store to
// global memory. The angles are head_ops' (θ stepped by the rope step in f32, the same
// products in the same order). Stop 20 fused the head ops into attention_decode.cu and lost
// (the transforms waited in front of the first tile); here the first tile is in flight before
// the grid wait (EARLY), and the transforms overlap it.
//
// JLLM_SCORE_CHAINS 2: S's hi and lo MMAs accumulate apart and are added after the k steps, so
// each of a tile's dependent MMA chains is D / 16 long instead of D / 8 (four chains of 8 for
// D 128 instead of two of 16): at a short context a warp's one tile is a chain of MMA latencies,
// not the tensor cores' rate (the default since stop 42). 1: one accumulator for both.
//
// JLLM_DEPENDENTS (EARLY 1, RING 0): where a working CTA lets the next kernel launch (its
// prologue, and the next GEMV's ring burst before its grid wait, then run beside this kernel's
// chain of round trips): 0 right after the grid wait, 1 once q is staged, 2 once the CTA's tiles
// are streamed (before the warps' merge). Idle splits let it launch at once.
//
// Constants (-D): JLLM_D (64 or 128), JLLM_H, JLLM_HK, JLLM_NSPLIT, JLLM_MINCHUNK, JLLM_NW,
// JLLM_EARLY, JLLM_RING, JLLM_AHEAD, JLLM_DYNAMIC, JLLM_PREFETCH_LATE, JLLM_FUSED_HEAD, JLLM_NROT
// (rotated dimensions, with FUSED_HEAD), JLLM_SCORE_CHAINS, JLLM_DEPENDENTS, JLLM_MERGE_FIRST,
// JLLM_MERGE_ONE_FENCE (attention_merge.cuh).
#include "attention_merge.cuh"
#include "head_transform.cuh"
#include "kernel_args.h"
#include "kv_cache.cuh"
#include "launch_geometry.h"

namespace {

using namespace jllm_kernels;
namespace geo = jllm::cuda::geometry;

constexpr int kD = JLLM_D;
constexpr int kH = JLLM_H;
constexpr int kHk = JLLM_HK;
constexpr int kG = kH / kHk;
constexpr int kSplits = JLLM_NSPLIT;
constexpr int kMinChunk = JLLM_MINCHUNK;
constexpr int kNw = JLLM_NW;
constexpr bool kEarly = JLLM_EARLY;
constexpr int kRing = JLLM_RING;
constexpr int kAhead = JLLM_AHEAD;
constexpr int kDynamic = JLLM_DYNAMIC;  // tiles a grab; 0: fixed chunks
constexpr bool kPrefetchLate = JLLM_PREFETCH_LATE;
constexpr bool kFusedHead = JLLM_FUSED_HEAD;
constexpr int kRot = JLLM_NROT;
constexpr int kScoreChains = JLLM_SCORE_CHAINS;
constexpr int kDependents = JLLM_DEPENDENTS;
constexpr int kThreads = 32 * kNw;
constexpr int kTile = 16;            // positions per warp step: one MMA k step of P · V
constexpr int kKSteps = kD / 16;     // of S = Q · K^T
constexpr int kQWords = kD / 8;      // f16 pairs of q per lane (D / 4 dimensions)
constexpr int kKLoads = kD / 32;     // 16-byte pieces of a K row's lane share (D / 4 halves)
constexpr int kNTiles = kD / 8;      // of O = P · V
constexpr int kVLoads = kD / 64;     // 16-byte pieces of a V row's lane share (D / 8 halves)
// A lane's pieces of a tile: K's (n tile c, piece i) at c·kKLoads + i, then V's (row r of the
// four, piece i) at 2·kKLoads + r·kVLoads + i.
constexpr int kPieces = 2 * kKLoads + 4 * kVLoads;
using Merge = AttentionMerge<kG, kD, kSplits, kThreads, JLLM_MERGE_FIRST, JLLM_MERGE_ONE_FENCE>;

static_assert(kH % kHk == 0, "GQA: H a multiple of Hkv");
static_assert(geo::AttentionMmaSupported(kG, kD), "G <= 8 heads (MMA rows), D 64 or 128");
static_assert(kMinChunk >= 1, "MINCHUNK >= 1");
static_assert(geo::AttentionRowsSmemBytes(kG, kD, kNw) <= geo::kAttnRowsSmemMax, "the warps' merge fits");
static_assert(kRing == 0 || (kRing >= 2 && kRing <= 8), "RING 0 (registers) or 2..8 tiles");
static_assert(kAhead >= 0 && (kAhead == 0 || kRing == 0), "AHEAD with the register tiles only");
static_assert(kDynamic >= 0 && (kDynamic == 0 || (kRing == 0 && kAhead == 0)), "DYNAMIC: register tiles, no AHEAD");
static_assert(kPieces * 32 * 16 == geo::AttentionMmaTileBytes(kD), "launch_geometry.h sizes a ring slot as this");
static_assert(!kFusedHead || (kRing == 0 && kDynamic == 0),
              "FUSED_HEAD: register tiles in fixed chunks (the newest position's warp known from the position)");
static_assert(kDependents >= 0 && kDependents <= 2 && (kDependents == 0 || (kEarly && kRing == 0)),
              "DEPENDENTS 1 or 2: the register tiles loaded early");
static_assert(kScoreChains == 1 || kScoreChains == 2, "SCORE_CHAINS: 1 (hi and lo into one accumulator) or 2");
static_assert(!kFusedHead || (kRot > 0 && kRot % 64 == 0 && kRot <= kD),
              "FUSED_HEAD: n_rot a multiple of 64 (q's RoPE pairs in one lane of the MMA layout)");

__device__ __forceinline__ jllm_u32 PackHalves(jllm_u16 lo, jllm_u16 hi) { return jllm_u32{lo} | (jllm_u32{hi} << 16); }

// x = hi + lo, both f16 (round to nearest), as two registers of pairs for (a, b).
__device__ __forceinline__ void SplitPair(float a, float b, jllm_u32& hi, jllm_u32& lo) {
  const jllm_u16 ha = jllm_float_to_half(a), hb = jllm_float_to_half(b);
  hi = PackHalves(ha, hb);
  lo = PackHalves(jllm_float_to_half(a - jllm_half_to_float(ha)), jllm_float_to_half(b - jllm_half_to_float(hb)));
}

// FUSED_HEAD: the sines and cosines of this lane's RoPE pairs lane + 32i at position pos (as
// head_ops' lanes take them), θ of pair d being pos · step^d stepped one multiply a pair as
// head_transform.cuh does — the same products in the same order. They depend on the position
// alone, which is known before the grid wait: computed there, off attention's chain.
constexpr int kOwnPairs = kRot / 64 > 0 ? kRot / 64 : 1;  // a lane's (1 where unused: no zero-size arrays)
__device__ __forceinline__ void LaneRopeAngles(const jllm::cuda::FusedHeadArgs& h, int pos, float (&cs)[kOwnPairs],
                                               float (&sn)[kOwnPairs]) {
  const int lane = threadIdx.x & 31;
  float theta = static_cast<float>(pos);
#pragma unroll
  for (int j = 0; j < 31; ++j) {
    if (j < lane) theta *= h.rope_step;
  }
#pragma unroll
  for (int i = 0; i < kOwnPairs; ++i) {
    const float angle = h.rope_scale * theta;
    cs[i] = cosf(angle);
    sn[i] = sinf(angle);
    if (i + 1 < kOwnPairs) {
#pragma unroll
      for (int j = 0; j < 32; ++j) theta *= h.rope_step;
    }
  }
}

// FUSED_HEAD: query head g's RMSNorm and NEOX RoPE, on the lane's dimensions 8(4i + t) + 4h + e
// of each 32 (qv[2i + h].e, as staged): the head's sum of squares over the 4 lanes of g, and the
// pair d, d + NROT / 2 — k step 2i + h and 2(i + NROT / 64) + h — in one lane, its angle from
// lane 8t + 4h + e (LaneRopeAngles). head_transform.cuh's arithmetic otherwise.
__device__ __forceinline__ void NormRotateQ(float4 (&qv)[kKSteps], const float4 (&gamma)[kKSteps], float eps,
                                            const float (&cs)[kOwnPairs], const float (&sn)[kOwnPairs], int t) {
  auto at = [](float4& v, int e) -> float& { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; };
  auto at_c = [](const float4& v, int e) { return e == 0 ? v.x : e == 1 ? v.y : e == 2 ? v.z : v.w; };
  double s = 0;
#pragma unroll
  for (int k = 0; k < kKSteps; ++k) {
#pragma unroll
    for (int e = 0; e < 4; ++e) s += static_cast<double>(at(qv[k], e) * at(qv[k], e));
  }
  s += __shfl_xor_sync(0xffffffffu, s, 1);
  s += __shfl_xor_sync(0xffffffffu, s, 2);
  const float scale = jllm_rms_scale(s, kD, eps);
#pragma unroll
  for (int k = 0; k < kKSteps; ++k) {
#pragma unroll
    for (int e = 0; e < 4; ++e) at(qv[k], e) = at(qv[k], e) * scale * at_c(gamma[k], e);
  }
#pragma unroll
  for (int i = 0; i < kRot / 64; ++i) {
#pragma unroll
    for (int c = 0; c < 8; ++c) {
      const int k = 2 * i + (c >> 2), e = c & 3, kp = k + 2 * (kRot / 64);
      const float cos_p = __shfl_sync(0xffffffffu, cs[i], 8 * t + c);
      const float sin_p = __shfl_sync(0xffffffffu, sn[i], 8 * t + c);
      const float a = at(qv[k], e), b = at(qv[kp], e);
      at(qv[k], e) = a * cos_p - b * sin_p;
      at(qv[kp], e) = a * sin_p + b * cos_p;
    }
  }
}

}  // namespace

JLLM_KERNEL(attention_mma, jllm::cuda::AttentionArgs, kThreads, 1) {
  __shared__ float accs[kNw][kG][kD];
  __shared__ float maxs[kNw][kG], sums[kNw][kG];
  __shared__ Merge::Smem merge;
  __shared__ uint4 new_row[2][kFusedHead ? kD / 8 : 1];  // FUSED_HEAD: the newest position's f16 k and v
  static_assert(sizeof(accs) + sizeof(maxs) + sizeof(sums) + sizeof(merge) + sizeof(new_row) ==
                    geo::AttentionMmaStaticSmemBytes(kG, kD, kNw, kSplits, kFusedHead),
                "launch_geometry.h counts the static shared memory the lowering adds the ring to");
  JLLM_DYNAMIC_SMEM(uint4, ring_area);  // RING > 0: kNw rings of kRing slots of kPieces x 32 pieces
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int hk = blockIdx.x, split = blockIdx.y;

  const AttentionSplit sp = SplitOfStep<kSplits, kMinChunk, !kEarly, !kPrefetchLate>(args, split);
  const int active = sp.active;
  if (split >= active && active == 1) {  // nothing to merge with
    if constexpr (kPrefetchLate) PrefetchNextWeights(args);
    return;
  }
  const int p_begin = sp.p_begin, p_end = kDynamic > 0 ? sp.n_pos : sp.p_end;  // DYNAMIC: any warp, any tile

  if (split < active) {
    const jllm_u16* kc = static_cast<const jllm_u16*>(args.k_cache) + static_cast<long long>(hk) * args.max_ctx * kD;
    const jllm_u16* vc = static_cast<const jllm_u16*>(args.v_cache) + static_cast<long long>(hk) * args.max_ctx * kD;
    // Piece n of this lane for the tile at base: its cache position and address — K: n tile c's
    // position base + 8c + g, dimensions 8(4i + t)..; V: rows 2t, 2t + 1, 2t + 8, 2t + 9 of the
    // tile, dimensions 64i + 8g...
    auto piece_pos = [&](int base, int n) {
      if (n < 2 * kKLoads) return base + 8 * (n / kKLoads) + g;
      const int r = (n - 2 * kKLoads) / kVLoads;
      return base + 2 * t + (r & 1) + 8 * (r >> 1);
    };
    auto piece_src = [&](int p, int n) {
      const long long row = static_cast<long long>(p) * kD;
      if (n < 2 * kKLoads) return reinterpret_cast<const uint4*>(kc + row + 8 * (4 * (n % kKLoads) + t));
      return reinterpret_cast<const uint4*>(vc + row + 64 * ((n - 2 * kKLoads) % kVLoads) + 8 * g);
    };
    const int p_new = sp.n_pos - 1;
    // FUSED_HEAD: piece n of the newest position, from the row this CTA appended.
    auto new_piece = [&](int n) {
      if (n < 2 * kKLoads) return jllm_load_shared16(&new_row[0][4 * (n % kKLoads) + t]);
      return jllm_load_shared16(&new_row[1][8 * ((n - 2 * kKLoads) % kVLoads) + g]);
    };
    // Which positions a load takes: kAll every one in the chunk; kOld all but the newest
    // (before the grid dependency); kNew only the newest, over what kOld left (after it).
    // Positions past the chunk read as zeros (the cache beyond it may hold anything, and 0 · NaN
    // is NaN).
    enum Rows { kAll, kOld, kNew };
    auto take = [&](int p, Rows rows) {
      if (p >= p_end) return false;
      return rows == kAll || (rows == kOld ? p != p_new : p == p_new);
    };
    uint4 tile[kPieces];  // the tile being computed
    // The warp's tiles: first + kTile·kNw·k, or (DYNAMIC) its grabs' from its static one on.
    const int first = kDynamic > 0 ? kTile * kDynamic * (split * kNw + warp) : p_begin + kTile * warp;
    const int n_tiles = first < p_end ? (p_end - first + kTile * kNw - 1) / (kTile * kNw) : 0;
    auto base_of = [&](int k) { return first + kTile * kNw * k; };
    auto has_new = [&](int base) { return base <= p_new && p_new < base + kTile; };
    // AHEAD: tile k's K and V rows in the chunk asked of L2, line i of each by lane i (mod 32).
    constexpr int kLines = kTile * kD * 2 / 128;
    auto prefetch_tile = [&](int k) {
      if (k >= n_tiles) return;
      const int base = base_of(k);
      const int halves = min(kTile, p_end - base) * kD;
      const long long row0 = static_cast<long long>(base) * kD;
#pragma unroll
      for (int i = lane; i < kLines; i += 32) {
        if (64 * i < halves) {
          jllm_prefetch_l2(kc + row0 + 64 * i);
          jllm_prefetch_l2(vc + row0 + 64 * i);
        }
      }
    };

    // RING 0: a tile's pieces loaded into registers.
    auto load_tile = [&](int base, Rows rows) {
#pragma unroll
      for (int n = 0; n < kPieces; ++n) {
        const int p = piece_pos(base, n);
        if (rows == kNew && !take(p, kNew)) continue;
        if (kFusedHead && p == p_new && take(p, rows)) {
          tile[n] = new_piece(n);
          continue;
        }
        tile[n] = take(p, rows) ? *piece_src(p, n) : make_uint4(0, 0, 0, 0);
      }
    };
    // RING > 0: tile k into slot k mod RING, as one commit group (committed empty past the warp's
    // tiles, so every lane counts the same groups; the loop below says which group holds which
    // tile). `ring` is this lane's column of the warp's ring.
    uint4* ring = ring_area + static_cast<long long>(warp) * kRing * kPieces * 32 + lane;
    auto slot_piece = [&](int k, int n) { return ring + ((k % (kRing > 0 ? kRing : 1)) * kPieces + n) * 32; };
    auto issue = [&](int k, Rows rows) {
      if (k < n_tiles) {
        const int base = base_of(k);
#pragma unroll
        for (int n = 0; n < kPieces; ++n) {
          const int p = piece_pos(base, n);
          if (take(p, rows)) jllm_cp_async16(slot_piece(k, n), piece_src(p, n));
        }
      }
      jllm_cp_async_commit();
    };
    auto read_tile = [&](int k) {
      const int base = base_of(k);
#pragma unroll
      for (int n = 0; n < kPieces; ++n) {
        tile[n] = piece_pos(base, n) < p_end ? jllm_load_shared16(slot_piece(k, n)) : make_uint4(0, 0, 0, 0);
      }
    };

#pragma unroll
    for (int k = 1; k < kAhead; ++k) prefetch_tile(k);  // the loop asks for tile AHEAD on
    float rope_cos[kOwnPairs], rope_sin[kOwnPairs];  // FUSED_HEAD: LaneRopeAngles
    if constexpr (kRing > 0) {
      // Groups: tiles 0 .. RING - 2 (before the grid dependency with EARLY: all but the newest
      // position), then one for the newest position's pieces of those tiles, then tile k +
      // RING - 1 in loop step k.
#pragma unroll
      for (int k = 0; k < kRing - 1; ++k) issue(k, kEarly ? kOld : kAll);
      if constexpr (kEarly) {
        JLLM_GRID_WAIT();  // q and the newest cache row come from head_ops
        JLLM_LAUNCH_DEPENDENTS();
#pragma unroll
        for (int k = 0; k < kRing - 1; ++k) {
          if (k < n_tiles && has_new(base_of(k))) {
#pragma unroll
            for (int n = 0; n < kPieces; ++n) {
              const int p = piece_pos(base_of(k), n);
              if (take(p, kNew)) jllm_cp_async16(slot_piece(k, n), piece_src(p, n));
            }
          }
        }
      }
      jllm_cp_async_commit();
    } else if constexpr (kEarly) {
      if (first < p_end) load_tile(first, kOld);
      if constexpr (kFusedHead) LaneRopeAngles(args.head, p_new, rope_cos, rope_sin);  // before the wait
      JLLM_GRID_WAIT();  // q and the newest cache row come from head_ops (FUSED_HEAD: the raw ones
      if constexpr (kDependents == 0) JLLM_LAUNCH_DEPENDENTS();  // from the QKV GEMV)
    }
    // q of head g (zero past G), lane t's dimensions 8(4i + t) .. + 7 of each 32, as float4s:
    // k steps 2i, 2i + 1 take 8(4i + t) .. + 3 and + 4 .. + 7, as the K pieces hold them.
    // FUSED_HEAD: the raw q and its gamma, loaded before the append so both round trips overlap.
    float4 qv[kKSteps], qgamma[kKSteps];
    {
      const float* q = (kFusedHead ? args.head.xq : args.q) + (hk * kG + g) * kD;
#pragma unroll
      for (int k = 0; k < kKSteps; ++k) {
        const int d = 8 * (4 * (k >> 1) + t) + 4 * (k & 1);
        qv[k] = g < kG ? *reinterpret_cast<const float4*>(q + d) : make_float4(0.f, 0.f, 0.f, 0.f);
        if constexpr (kFusedHead) qgamma[k] = *reinterpret_cast<const float4*>(args.head.q_gamma + d);
      }
    }
    if constexpr (kFusedHead) {
      if constexpr (!kEarly) LaneRopeAngles(args.head, p_new, rope_cos, rope_sin);
      // The warp whose tile holds the newest position appends its k and v (head_ops' kv part):
      // k normed (head_transform.cuh), then rotated with the lane's angles — its pairs lane +
      // 32i are the lane's x[i], x[i + NROT / 64], as in HeadTransform.
      if (p_begin <= p_new && p_new < p_end && warp == (p_new - p_begin) / kTile % kNw) {
        const auto& h = args.head;
        float kx[kD / 32], vx[kD / 32];
#pragma unroll
        for (int i = 0; i < kD / 32; ++i) vx[i] = h.xv[hk * kD + lane + 32 * i];
        LoadHead<kD, kRot>(h.xk, hk * kD, h.k_gamma, true, false, h.eps, p_new, h.rope_step, h.rope_scale, nullptr, kx);
#pragma unroll
        for (int i = 0; i < kRot / 64; ++i) {
          const float a = kx[i], b = kx[i + kRot / 64];
          kx[i] = a * rope_cos[i] - b * rope_sin[i];
          kx[i + kRot / 64] = a * rope_sin[i] + b * rope_cos[i];
        }
        StoreKvHead<kKvF16, kD>(kx, vx, hk, p_new, h.k_cache, h.v_cache, nullptr, nullptr, args.max_ctx);
        KvStoreRow<kKvF16, kD>(kx, static_cast<void*>(new_row[0]), nullptr);
        KvStoreRow<kKvF16, kD>(vx, static_cast<void*>(new_row[1]), nullptr);
        __syncwarp();  // the row is in shared memory for the warp's loads of that position
      }
      NormRotateQ(qv, qgamma, args.head.eps, rope_cos, rope_sin, t);
    }
    if (kEarly && kRing == 0 && first < p_end) load_tile(first, kNew);
    jllm_u32 q_hi[kQWords], q_lo[kQWords];  // as A fragments hi + lo
#pragma unroll
    for (int k = 0; k < kKSteps; ++k) {
      SplitPair(qv[k].x, qv[k].y, q_hi[2 * k], q_lo[2 * k]);
      SplitPair(qv[k].z, qv[k].w, q_hi[2 * k + 1], q_lo[2 * k + 1]);
    }
    JLLM_TRACE_MARK();  // q staged (the trace's "staging": the grid wait to here)
    if constexpr (kDependents == 1) JLLM_LAUNCH_DEPENDENTS();
    float m = JLLM_NEG_INF, l = 0.f;  // head g's, identical in the 4 lanes of g
    float o[kNTiles][4];              // O's accumulators; [j][0..1]: head g, n tile j columns 2t, 2t + 1
#pragma unroll
    for (int j = 0; j < kNTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    // One tile of the warp's at base (its k-th): loaded unless the early load has it, then both
    // products and the online softmax.
    auto step = [&](int k, int base) {
      if constexpr (kAhead > 0) prefetch_tile(k + kAhead);
      if constexpr (kRing > 0) {
        // Group accounting (this lane's): before the issue below, RING + k groups are
        // committed; tile k's is the k-th (k < RING - 1) or the (k + 1)-th, the newest
        // position's the (RING - 1)-th.
        issue(k + kRing - 1, kAll);  // into the slot of tile k - 1, which this lane has read
        if (kEarly && k < kRing - 1 && has_new(base)) {
          jllm_cp_async_wait<1>();  // up to the newest position's group
        } else if (k < kRing - 1) {
          jllm_cp_async_wait<kRing>();
        } else {
          jllm_cp_async_wait<kRing - 1>();
        }
        read_tile(k);
      } else if (!kEarly || k > 0) {
        load_tile(base, kAll);
      }
      // S = Q · K^T for the tile's two n tiles of 8 positions.
      float s[2][4], s_lo[2][4];  // SCORE_CHAINS 2: the lo MMAs' chain apart, added after
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        s[c][0] = s[c][1] = s[c][2] = s[c][3] = 0.f;
        s_lo[c][0] = s_lo[c][1] = s_lo[c][2] = s_lo[c][3] = 0.f;
        const jllm_u32* kw = reinterpret_cast<const jllm_u32*>(tile + c * kKLoads);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          const jllm_u32 b[2] = {kw[2 * ks], kw[2 * ks + 1]};
          const jllm_u32 a_hi[4] = {q_hi[2 * ks], 0u, q_hi[2 * ks + 1], 0u};
          const jllm_u32 a_lo[4] = {q_lo[2 * ks], 0u, q_lo[2 * ks + 1], 0u};
          jllm_mma_f16_16x8x16(s[c], a_hi, b);
          jllm_mma_f16_16x8x16(kScoreChains == 2 ? s_lo[c] : s[c], a_lo, b);
        }
        if constexpr (kScoreChains == 2) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[c][e] += s_lo[c][e];
        }
      }
      // Head g's online softmax over the tile: its scores are s[c][0..1] (positions 8c + 2t,
      // + 1) in the 4 lanes of g.
      float x[4];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int p = base + 8 * c + 2 * t + e;
          x[2 * c + e] = p < p_end ? s[c][e] * args.scale : JLLM_NEG_INF;
        }
      }
      float mt = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
      mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
      mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 2));
      const float m_new = fmaxf(m, mt);  // finite: a tile's first position is in the chunk
      const float corr = m == JLLM_NEG_INF ? 0.f : expf(m - m_new);
      float pr[4], ps = 0.f;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        pr[e] = x[e] == JLLM_NEG_INF ? 0.f : expf(x[e] - m_new);
        ps += pr[e];
      }
      ps += __shfl_xor_sync(0xffffffffu, ps, 1);
      ps += __shfl_xor_sync(0xffffffffu, ps, 2);
      l = l * corr + ps;
      m = m_new;
      // P as the A fragment of O = P · V (k: the tile's positions 2t, 2t + 1, 2t + 8, 2t + 9).
      jllm_u32 p_hi[4] = {0u, 0u, 0u, 0u}, p_lo[4] = {0u, 0u, 0u, 0u};
      SplitPair(pr[0], pr[1], p_hi[0], p_lo[0]);
      SplitPair(pr[2], pr[3], p_hi[2], p_lo[2]);
      const jllm_u32* vw[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) vw[r] = reinterpret_cast<const jllm_u32*>(tile + 2 * kKLoads + r * kVLoads);
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        // Column g of n tile j is dimension 64(j / 8) + 8g + j % 8: half j of this lane's pieces.
        const int w = j >> 1;
        const bool odd = j & 1;
        auto pair = [&](const jllm_u32* r0, const jllm_u32* r1) {
          return odd ? (r0[w] >> 16) | (r1[w] & 0xFFFF0000u) : (r0[w] & 0xFFFFu) | (r1[w] << 16);
        };
        const jllm_u32 b[2] = {pair(vw[0], vw[1]), pair(vw[2], vw[3])};
        o[j][0] *= corr;
        o[j][1] *= corr;
        jllm_mma_f16_16x8x16(o[j], p_hi, b);
        jllm_mma_f16_16x8x16(o[j], p_lo, b);
      }
    };
    if constexpr (kDynamic == 0) {
      for (int k = 0; k < n_tiles; ++k) step(k, base_of(k));
    } else {
      constexpr int kGrab = kTile * kDynamic;  // positions
      const bool counted = active > 1;         // else one CTA: no ticket resets a counter
      unsigned* const counter = args.counters + kHk + hk;
      int k = 0;
      for (int at = first; at < p_end;) {
        unsigned next = 0;  // lane 0's; read after the grab, so the round trip overlaps it
        if (counted && lane == 0) next = atomicAdd(counter, 1u);
#pragma unroll 1
        for (int base = at; base < min(at + kGrab, p_end); base += kTile) step(k++, base);
        at = counted ? kGrab * (active * kNw + static_cast<int>(__shfl_sync(0xffffffffu, next, 0))) : at + kGrab * kNw;
      }
    }
    JLLM_TRACE_STREAMED();  // the trace's "stream" ends at the last warp's last tile, its "tail" is the merges
    if constexpr (kDependents == 2) JLLM_LAUNCH_DEPENDENTS();
    // The warp's (max, sum, acc) to shared memory: lane (g, t) holds head g's columns 2t and
    // 2t + 1 of every n tile j, dimensions 64(j / 8) + 16t + j % 8 and that + 8.
    if (g < kG) {
#pragma unroll
      for (int j = 0; j < kNTiles; ++j) {
        const int d = 64 * (j >> 3) + 16 * t + (j & 7);
        accs[warp][g][d] = o[j][0];
        accs[warp][g][d + 8] = o[j][1];
      }
      if (t == 0) maxs[warp][g] = m, sums[warp][g] = l;
    }
    __syncthreads();
    if constexpr (kPrefetchLate) PrefetchNextWeights(args);  // the CTA's tiles are in
    Merge::MergeWarps<kNw>(args, hk, split, active, accs, maxs, sums);
    if (active == 1) return;
  } else {
    if constexpr (kEarly) {
      JLLM_GRID_WAIT();  // the other splits' partials come after it
      JLLM_LAUNCH_DEPENDENTS();
    }
    if constexpr (kPrefetchLate) PrefetchNextWeights(args);  // a split without positions: at once
  }
  Merge::IfLast(args, hk, active, merge, kDynamic > 0 ? args.counters + kHk + hk : nullptr);
}
