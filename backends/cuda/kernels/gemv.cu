// Decode matrix-vector product: y_m = W_m · x for one token, for a group of up to three weight
// matrices that share x (a plain matmul, the QKV triple with mixed types, gate+up), with the
// fusions of ir's MatMulAttrs written out as steps of the kernel:
//   prologue  NORM:     x is RMS-normed (and scaled by gamma) while it is staged
//   body      every warp streams R rows of one member, unit by unit (weight_types.cuh)
//   epilogue  RESIDUAL: y += residual;  SWIGLU: y = silu(W_gate·x) · (W_up·x)
// Every weight byte is read once, with 16-byte streaming loads into registers (RING 0) or
// copied (bulk copies on sm_90, else 16-byte cp.async) into a per-warp shared-memory ring (RING
// > 0). Meant to be bound by memory; ncu shows instruction issue and the RMSNorm prologue bound
// it today (docs/PERF.md, "shared-memory ring").
//
// Work split (docs/PERF.md, "GEMV v3"). The work is a list of items: R rows of one member (or R
// rows of gate and of up, with SWIGLU) times one of KSPLIT column splits, split-major. CTAs are
// persistent and each takes an equal contiguous range of items — equal bytes per SM whatever
// the grid — and its warps take the range's items round-robin (SPREAD 0) or equal ranges of
// its steps (SPREAD 1). A CTA stages x once, for the splits its range touches, in each member
// type's unit order (conflict-free reads). A warp
// walks its items as one stream of 32-unit steps through a ring of steps in flight (DEPTH in
// registers, or RING - 1 in shared memory), across item boundaries; the first are issued
// before the kernel waits for its predecessor (programmatic dependent launch), so weights
// stream while x is produced. With
// KSPLIT > 1 each item writes partial sums; the row group's last split to finish (a ticket
// counter) adds them in split order and runs the epilogue, so results are deterministic.
//
// Constants (-D): JLLM_K, JLLM_NM (members), JLLM_T<m> / JLLM_N<m> (ggml type id and rows of member
// m), JLLM_R, JLLM_NW, JLLM_KSPLIT, JLLM_DEPTH, JLLM_MINB (CTAs per SM the registers must allow),
// JLLM_XPLANES (0: f32 x; 1: int8 x, 2: int16 x for the types with a quantized-x dot,
// weight_types.cuh), JLLM_NORM, JLLM_RESIDUAL, JLLM_SWIGLU, JLLM_RING (0: the steps ahead in
// registers, DEPTH of them; n >= 2: in a shared-memory ring of n slots per warp), JLLM_BULK (1: the
// ring is filled by bulk copies on sm_90; 0: by 16-byte cp.async everywhere), JLLM_TMA (1, with
// bulk copies: one tensor-map copy a matrix a slot — args.tmap, kernel_args.h TileBox — by lane 0,
// instead of a copy a row), JLLM_CHUNK (RING > 0: a slot holds up to CHUNK consecutive unit steps
// of one item, each row's bytes of them one copy — CHUNK times fewer copies, arms and waits a byte;
// 1: a step a slot), JLLM_SPREAD (0: a CTA's items go to its warps round-robin; 1: each warp takes
// an equal contiguous range of the CTA's unit steps, items cut at a boundary summed across warps),
// JLLM_LATE_NORM (1: with NORM and no K split, x·gamma is staged in the same pass that sums x², and
// the RMS scale — one number per token, and the GEMV linear in x — multiplies the results instead:
// one pass over x and one barrier less before the first dot; 0: the sum of squares first, then x
// scaled as it is staged), JLLM_LAZY_SCALE (1: with LATE_NORM, the RMS scale — the warps' Σx²
// summed, a double division, a square root — is computed by each warp before its first result, with
// its ring's chunks in flight, not before its first dot), JLLM_GAMMA_EARLY (1: with NORM, the
// thread's gamma of the quantized-x pass is loaded before the grid wait — gamma is a weight, and
// after a step's 2.5 GB of weights went through L2 it comes from HBM, a round trip that otherwise
// follows the wait beside x's; 0: with x), JLLM_EARLY_SLOTS (RING > 0: the ring chunks a warp
// issues before the grid wait, at most RING - 1; the rest go out once the warp has issued its loads
// of x, so that x's round trip does not queue behind the whole first burst), JLLM_AHEAD (RING > 0:
// the chunks a warp keeps in flight once its stream runs, at most RING - 1 — fewer leaves the
// ring's other slots to the start, filled through x's staging and the grid wait), JLLM_L2_EARLY
// (with TMA: the chunks after the early ones a warp asks of L2 before the grid wait),
// JLLM_TAIL_PREFETCH (1: the lines of a chunk's d values — q8_0 and q6_K rows keep them in a tail
// the ring does not copy — asked into L1 as the chunk is issued), JLLM_D_AHEAD (1, RING > 0: those
// d values of a warp's next step loaded into registers during this step's dots), JLLM_WEIGHTED (1: CTA
// ranges of equal weight bytes for groups of several member types; 0: of equal item counts),
// JLLM_PAIRS (a mask, 1 q4_K, 2 q6_K: those members read as unit pairs, 8 lanes a row and 4 rows a
// warp step, x quantized per pair; launch_geometry.h), JLLM_HEAD (1: the QKV triple's next node,
// Qwen3's q/k RMSNorm + RoPE + KV append, runs in this kernel's tail — y[0..2] are its raw q, k, v;
// each item's writer adds its rows to its head's ticket, and the warp that completes a head
// transforms it (head_transform.cuh) into yq or the caches: one kernel a layer fewer; with
// JLLM_HEAD_D, JLLM_NROT and JLLM_KV, the cache element type), JLLM_XLANES (1, 2 or 4: lanes that
// quantize one run of 16 columns of x as it is staged, each 16 / XLANES of them), JLLM_ARGMAX (1:
// the decode logits of a greedy step, no K split — the kernel also draws the next token, as
// sample.cu's greedy path would: once its stream is done each CTA takes the best key
// (draw_keys.cuh) of the rows it wrote, and the last CTA the best of all, which advances the step
// state; one launch and one pass over the row fewer a step; docs/PERF.md), JLLM_SLOT_SKIP (1, in
// groups of several types: x staged only in the slots of the types the CTA's items read),
// JLLM_EMBED (1, with
// JLLM_EMBED_TYPE and JLLM_EMBED_V, the table's type and rows: the step's first GEMV, whose x is
// the token's embedding row — every CTA dequantizes it as embed.cu would, 8 columns at a time in
// the quantized-x pass, and CTA 0 writes it on as the residual stream; one launch a step fewer),
// JLLM_X_PROBE (1: a timing probe, not a mode — its results are wrong: staging as it would be if
// the producer wrote x already quantized, int16 runs with their scales, so that the CTA only
// copies them: half x's bytes loaded, contiguously, no norm, no scale search, no quantization, no
// gamma; the lowering sets it only on GEMVs every member of which reads int16 x by 1 or 2 lanes a run).
//
// Lanes and rows: a member's row is read by LPR lanes (32, or 8 for pairs), each RPL rows
// (JLLM_R, or 1 for pairs) per step; lane l reads unit l mod LPR of the step's rows
// row0 + l / LPR + (32 / LPR)·r, r < RPL, and an item is 32 / LPR · RPL rows.
#include "draw_keys.cuh"
#include "kernel_args.h"
#include "launch_geometry.h"
#include "head_transform.cuh"
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
constexpr int kRing = JLLM_RING;
constexpr int kRingSlots = kRing > 0 ? kRing : 1;  // the modulus of a slot index
constexpr int kChunk = JLLM_CHUNK;  // unit steps a ring slot holds
constexpr bool kSpread = JLLM_SPREAD;  // a CTA's steps split evenly among its warps
constexpr bool kLateNorm = kNorm && JLLM_LATE_NORM && JLLM_KSPLIT == 1;  // the RMS scale applied to y
constexpr bool kGammaEarly = kNorm && JLLM_GAMMA_EARLY;
#ifndef JLLM_LAZY_SCALE
#define JLLM_LAZY_SCALE 0
#endif
constexpr bool kLazyScale = kLateNorm && JLLM_LAZY_SCALE;
#ifndef JLLM_ARGMAX
#define JLLM_ARGMAX 0
#endif
constexpr bool kArgmax = JLLM_ARGMAX;
#ifndef JLLM_EMBED
#define JLLM_EMBED 0
#define JLLM_EMBED_TYPE 0
#define JLLM_EMBED_V 1
#endif
constexpr bool kEmbed = JLLM_EMBED;
constexpr int kEmbedType = JLLM_EMBED_TYPE, kEmbedRows = JLLM_EMBED_V;
#ifndef JLLM_X_PROBE
#define JLLM_X_PROBE 0
#endif
constexpr bool kXProbe = JLLM_X_PROBE;
#ifndef JLLM_EARLY_SLOTS
#define JLLM_EARLY_SLOTS (JLLM_RING > 0 ? JLLM_RING - 1 : 0)
#endif
constexpr int kEarlySlots = JLLM_EARLY_SLOTS;
#ifndef JLLM_AHEAD
#define JLLM_AHEAD (JLLM_RING > 0 ? JLLM_RING - 1 : 0)
#endif
constexpr int kAhead = JLLM_AHEAD;
#ifndef JLLM_XLANES
#define JLLM_XLANES 1
#endif
// Lanes that stage one run of 16 columns of quantized x, kXElems columns each (the run's scale
// and sums reduced across them by shuffles): 1 leaves most warps idle at the barrier after
// staging when K is small — 0.6b's K 1,024 is 64 runs, two of 8 warps.
constexpr int kXLanes = JLLM_XLANES;
constexpr int kXElems = 16 / kXLanes;
static_assert(kXLanes == 1 || kXLanes == 2 || kXLanes == 4, "XLANES 1, 2 or 4");
static_assert(kEarlySlots >= 0 && (kRing == 0 || kEarlySlots <= kRing - 1), "early ring chunks: 0..RING - 1");
static_assert(kRing == 0 || (kAhead >= 1 && kAhead <= kRing - 1), "ring chunks ahead: 1..RING - 1");
// The ring is filled by bulk copies where the GPU has them (JLLM_BULK 1, sm_90), else cp.async.
constexpr bool kBulk = kRing > 0 && JLLM_BULK && JLLM_HAS_BULK_COPY;
#ifndef JLLM_TMA
#define JLLM_TMA 0
#endif
// Bulk copies through each matrix's tensor map (args.tmap): lane 0 copies a chunk's box of the
// item's rows in one instruction a matrix, instead of a copy a row issued lane by lane.
constexpr bool kTma = kBulk && JLLM_TMA;
#ifndef JLLM_TAIL_PREFETCH
#define JLLM_TAIL_PREFETCH 0
#endif
// 1: as a ring chunk is issued, the lines of its rows' d values (the scale tail of q8_0 and q6_K
// rows, device_layout.h, which the ring does not copy) are asked into L1, so the dots' loads of
// d hit L1 instead of waiting a round trip each step (q8_0: a d for every 32 weights).
constexpr bool kTailPrefetch = JLLM_TAIL_PREFETCH;
#ifndef JLLM_D_AHEAD
#define JLLM_D_AHEAD 0
#endif
// 1 (RING > 0): the d values of a warp's next unit step (q8_0 and q6_K rows, from the row tail)
// are loaded into registers while this step's dots run, so no dot waits for its d's round trip
// (an L1 hit is still ~30 cycles, in every q8_0 dot's dependency chain).
constexpr bool kDAhead = JLLM_D_AHEAD && kRing > 0;
#ifndef JLLM_L2_EARLY
#define JLLM_L2_EARLY 0
#endif
// With tensor maps: the ring chunks after the first EARLY_SLOTS that a warp asks of L2 before
// its grid wait (one box prefetch a matrix, no bytes to the SM), so that they come from L2 once
// issued — HBM busy through the wait without a burst landing beside x's staging (the lowering
// defines it only with tensor maps; elsewhere nothing is prefetched).
constexpr int kL2Early = kTma ? JLLM_L2_EARLY : 0;
static_assert(JLLM_L2_EARLY >= 0 && JLLM_L2_EARLY <= 15, "L2_EARLY: 0..15 chunks");

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
#ifndef JLLM_HEAD
#define JLLM_HEAD 0
#endif
#if !JLLM_HEAD
#define JLLM_HEAD_D 32
#define JLLM_NROT 0
#define JLLM_KV 0
#endif
constexpr bool kHead = JLLM_HEAD;
constexpr int kHeadD = JLLM_HEAD_D, kHeadRot = JLLM_NROT, kHeadKv = JLLM_KV;
constexpr int kHq = kHead ? kRows[0] / kHeadD : 0;  // q heads; kv heads: kRows[1] / kHeadD
constexpr int kPairs = JLLM_PAIRS;  // launch_geometry.h, GemvPairUnits
// The unit reader of member m (weight_types.cuh): its ggml type, or its pairs.
constexpr int kWt[3] = {geo::GemvUnitReader(JLLM_T0, kPairs), geo::GemvUnitReader(JLLM_T1, kPairs),
                        geo::GemvUnitReader(JLLM_T2, kPairs)};
constexpr bool PairUnits(int m) { return geo::GemvPairUnits(kType[m], kPairs); }
constexpr int Lpr(int m) { return geo::GemvLanesPerRow(kType[m], kPairs); }
constexpr int RowsPerLane(int m) { return geo::GemvRowsPerLane(kType[m], kPairs, kR); }
constexpr int ItemRows(int m) { return geo::GemvItemRows(kType[m], kPairs, kR); }

constexpr int kGroups256 = kK / 256;                // 256-element column groups
constexpr int kMembersPerItem = kSwiglu ? 2 : 1;    // matrices an item reads
constexpr int kMemberGroups = kSwiglu ? 1 : kNm;    // item kinds per split
constexpr int RowGroups(int m) { return geo::CeilDiv(kRows[m], ItemRows(m)); }
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
// Slots in all: the distinct types among the member groups (the ring lies behind them).
constexpr int SlotsBefore(int m) { return m == 0 ? 0 : SlotsBefore(m - 1) + (FirstOf(m - 1) == m - 1 ? 1 : 0); }
constexpr int kSlots = SlotsBefore(kMemberGroups);
static_assert(kSlots == JLLM_XSLOTS, "the lowering sized shared memory for as many x slots as the kernel stages");
constexpr int kSlotFloat4 = geo::GemvSlotFloat4(kK);  // f32 parts, then float2 run sums
// Member m reads quantized x (weight_types.cuh): a slot of arrays of its units — the A runs,
// the B runs (uint4 each), (d_A, Σq_A, d_B, Σq_B), and with two planes the low bytes of the A
// and B runs — instead of f32 x. q8_0 has no B runs: its low plane takes the B array.
template <int kM>
constexpr bool UsesXq() { return kXPlanes > 0 && WType<kWt[kM]>::kXq; }
template <int kM>
constexpr int LoArray() { return kType[kM] == jllm::cuda::layout::kQ8_0 ? 1 : 3; }
template <int kM>
constexpr bool StagesF32() { return kM < kMemberGroups && FirstOf(kM) == kM && !UsesXq<kM>(); }
template <int kM>
constexpr bool StagesXq() { return kM < kMemberGroups && FirstOf(kM) == kM && UsesXq<kM>(); }
template <int kM>
constexpr bool StagesSums() { return StagesF32<kM>() && WType<kWt[kM]>::kHalfSums; }
template <int kM>
constexpr bool StagesRunXq() { return StagesXq<kM>() && !PairUnits(kM); }  // in runs of 16
template <int kM>
constexpr bool StagesPairXq() { return StagesXq<kM>() && PairUnits(kM); }  // per pair of 64
// A ring slot (RING > 0) holds CHUNK steps of R rows of each matrix an item reads, for the
// widest member group (launch_geometry.h, GemvRingBytes).
constexpr int StageBytes(int m) { return geo::GemvStageBytes(kType[m], kPairs, kR, kMembersPerItem, kChunk); }
constexpr int MaxStageBytes(int m) {
  return m == 0 ? StageBytes(0) : (StageBytes(m) > MaxStageBytes(m - 1) ? StageBytes(m) : MaxStageBytes(m - 1));
}
constexpr int kStageBytes = MaxStageBytes(kMemberGroups - 1);
constexpr int SplitGroup(int s) { return s * kGroups256 / kKsplit; }  // first 256-group of split s
constexpr int MaxItemRows(int m) { return m == 0 ? ItemRows(0) : (ItemRows(m) > MaxItemRows(m - 1) ? ItemRows(m) : MaxItemRows(m - 1)); }
constexpr int kHeadRows = MaxItemRows(kMemberGroups - 1);
// The CTA's static shared memory, one instance for all member groups, as launch_geometry.h
// counts it (GemvStaticSmemBytes; the lowering leaves kStaticSmemReserve for it).
// ARGMAX: the draw's shared memory (nothing otherwise: an empty base takes no bytes).
template <bool kOn>
struct DrawPart {
  jllm_kernels::DrawShared draw;
};
template <>
struct DrawPart<false> {};
struct CtaShared : DrawPart<kArgmax> {
  double scratch[32];  // StageX: a warp's Σx²
  // SPREAD: heads[w][j][o], row o of the item (o = row - row0) of matrix j as warp w left it.
  float heads[kSpread ? kNw : 1][kMembersPerItem][kHeadRows];
};
static_assert(sizeof(CtaShared) == geo::GemvStaticSmemBytes(kNw, kSpread, kMembersPerItem, kHeadRows, kArgmax),
              "launch_geometry.h counts the GEMV's static shared memory");
static_assert(sizeof(CtaShared) <= geo::kStaticSmemReserve, "the lowering's reserve holds the static arrays");

static_assert(kK % 256 == 0, "GEMV columns are whole groups of 256");
static_assert(kNm >= 1 && kNm <= 3, "1..3 members");
static_assert(!kSwiglu || (kNm == 2 && kType[0] == kType[1] && kRows[0] == kRows[1]),
              "SWIGLU needs gate and up of one type and height");
static_assert(!kResidual || kNm == 1, "the residual epilogue is for a single matmul");
static_assert(kKsplit >= 1 && kKsplit <= kGroups256, "KSPLIT in 1..K/256");
static_assert(kDepth >= 1 && kDepth <= 8, "DEPTH in 1..8");
static_assert(kXPlanes >= 0 && kXPlanes <= 2, "XPLANES 0, 1 or 2");
static_assert(kRing == 0 || (kRing >= 2 && kRing <= 16), "RING 0 (registers) or 2..16 slots");
static_assert(kChunk >= 1 && kChunk <= 8 && (kRing > 0 || kChunk == 1), "CHUNK 1..8, above 1 only with a ring");
static_assert(3 * kK / 16 <= kSlotFloat4 && 5 * kK / 32 <= kSlotFloat4 && 10 * kK / 64 <= kSlotFloat4,
              "a quantized slot (3 arrays of 16-element units, 5 of 32-element units or 10 of pairs) fits");
static_assert(!(PairUnits(0) || PairUnits(1) || PairUnits(2)) || kXPlanes > 0, "pairs read quantized x");
static_assert(!kHead || (kNm == 3 && !kSwiglu && !kResidual && kRows[0] % kHeadD == 0 && kRows[1] == kRows[2] &&
                         kRows[1] % kHeadD == 0 && (kHeadRot / 2) % 32 == 0),
              "HEAD: a QKV triple of whole heads, rotated in registers (n_rot / 2 a multiple of 32)");
static_assert(!kArgmax || (kNm == 1 && !kSwiglu && !kResidual && !kHead && kKsplit == 1),
              "ARGMAX: the logits, one matrix as it is, each row written by the CTA whose item it is");

struct Range {
  int begin, end;  // items [begin, end) of this CTA
};

// CTA ranges of equal bytes (WEIGHTED, for groups of members of several types: the QKV triple
// with a q6_K V, whose items are 1.46× a q4_K one) instead of equal item counts: an item's cost
// is its rows' device bytes, and CTA b takes the items whose first byte lies in its b-th share.
#ifndef JLLM_WEIGHTED
#define JLLM_WEIGHTED 0
#endif
constexpr bool kWeighted = JLLM_WEIGHTED && kMemberGroups > 1;
constexpr jllm_i64 ItemCost(int m) { return ItemRows(m) * jllm::cuda::layout::RowStride(kType[m], kK); }
constexpr geo::GemvItemCosts ItemCosts() {
  return {kKsplit, kMemberGroups, {RowGroups(0), RowGroups(1), RowGroups(2)}, {ItemCost(0), ItemCost(1), ItemCost(2)}};
}
// CTA ranges inside one member group each (ALIGNED; groups of several members without a K split):
// the grid's CTAs shared among the groups by their bytes, each group's items evenly among its
// CTAs. No CTA straddles two groups — on 14b's QKV the straddling CTAs streamed ~3 µs longer
// (their rings restart at the boundary) — and a q6_K V's CTAs take fewer, heavier items.
#ifndef JLLM_ALIGNED
#define JLLM_ALIGNED 0
#endif
constexpr bool kAligned = JLLM_ALIGNED && kMemberGroups > 1 && kKsplit == 1;
constexpr jllm_i64 CostBefore(int m) {
  return m == 0 ? 0 : CostBefore(m - 1) + static_cast<jllm_i64>(RowGroups(m - 1)) * ItemCost(m - 1);
}
// The first CTA of each member group (and G after the last): by bytes, at least one CTA a group.
__device__ __forceinline__ void GroupCtaBegins(int G, int (&begin)[4]) {
  begin[0] = 0;
#pragma unroll
  for (int m = 1; m < kMemberGroups; ++m) {
    const int share = static_cast<int>((static_cast<jllm_i64>(G) * CostBefore(m) + CostBefore(kMemberGroups) / 2) /
                                       CostBefore(kMemberGroups));
    begin[m] = min(max(share, begin[m - 1] + 1), G - (kMemberGroups - m));
  }
  begin[kMemberGroups] = G;
}
__device__ __forceinline__ Range CtaRange(int b, int G) {
  if constexpr (kAligned) {
    if (G >= kMemberGroups) {  // (else equal item counts, below)
      int begin[4];
      GroupCtaBegins(G, begin);
      int m = 0;
#pragma unroll
      for (int i = 1; i < kMemberGroups; ++i) m += b >= begin[i];
      const int n = begin[m + 1] - begin[m], local = b - begin[m];
      const int rgs = m == 0 ? RowGroups(0) : m == 1 ? RowGroups(1) : RowGroups(2);
      const int rg0 = m == 0 ? RgBegin(0) : m == 1 ? RgBegin(1) : RgBegin(2);
      return {rg0 + rgs * local / n, rg0 + rgs * (local + 1) / n};
    }
  }
  if constexpr (kWeighted) {
    constexpr jllm_i64 kTotal = geo::GemvSplitCost(ItemCosts()) * kKsplit;
    return {geo::GemvItemAtCost(kTotal * b / G, ItemCosts()), geo::GemvItemAtCost(kTotal * (b + 1) / G, ItemCosts())};
  }
  return {static_cast<int>(static_cast<long long>(kItems) * b / G),
          static_cast<int>(static_cast<long long>(kItems) * (b + 1) / G)};
}

// x staged only in the slots of the member types the CTA's items read (SLOT_SKIP; groups of
// several types): a CTA inside a mixed QKV's q4_K members skips the q6_K V's runs of 16, one
// inside the V the q4_K pairs — a quantization pass and its shuffles less before its first dot.
#ifndef JLLM_SLOT_SKIP
#define JLLM_SLOT_SKIP 0
#endif
constexpr bool kSlotSkip = JLLM_SLOT_SKIP && kSlots > 1;
// Bit m for each member group m whose slot (FirstOf(m): StageXqOf<m>, StageSlot<m>) the CTA's
// items read in splits s_lo..s_hi; every bit without SLOT_SKIP. CTA-uniform.
__device__ __forceinline__ unsigned SlotsRead(Range cta, int s_lo, int s_hi) {
  if constexpr (!kSlotSkip) {
    return ~0u;
  } else {
    unsigned read = 0;
    for (int s = s_lo; s <= s_hi; ++s) {
#pragma unroll
      for (int m = 0; m < kMemberGroups; ++m) {
        const int a = s * kRowGroups + RgBegin(m), b = a + RowGroups(m);
        if (max(a, cta.begin) < min(b, cta.end)) read |= 1u << FirstOf(m);
      }
    }
    return read;
  }
}

// Stages x (normed if asked) for the columns of splits [s_lo, s_hi] into member kM's slot.
template <int kM>
__device__ __forceinline__ void StageSlot(const float4& v, int e, float4* xs) {
  using W = WType<kWt[kM]>;
  constexpr int kUnitsK = kGroups256 * W::kUnits256;
  xs[SlotOf(kM) * kSlotFloat4 + W::PartOf(e) * kUnitsK + W::UnitOf(e)] = v;
}

// Words j·kXElems / 4 on of the 16-element run at e, quantized (q: words of int8 — the high
// plane with two planes —, q_lo: the low plane), into member kM's slot; the run's d and Σq by
// the run's first lane (j 0).
template <int kM>
__device__ __forceinline__ void StageRunXq(const jllm_u32 (&q)[kXElems / 4], const jllm_u32 (&q_lo)[kXElems / 4],
                                           float d, float sum, int e, int j, float4* xs) {
  using W = WType<kWt[kM]>;
  constexpr int kUnitsK = kGroups256 * W::kUnits256;
  float4* slot = xs + SlotOf(kM) * kSlotFloat4;
  const int u = W::UnitOf(e), half = W::HalfOf(e);
  StoreRunWords(reinterpret_cast<uint4*>(slot) + half * kUnitsK + u, j, q);
  if constexpr (kXPlanes == 2) StoreRunWords(reinterpret_cast<uint4*>(slot) + (LoArray<kM>() + half) * kUnitsK + u, j, q_lo);
  if (j == 0) {
    float* meta = reinterpret_cast<float*>(slot + 2 * kUnitsK + u);
    meta[2 * half] = d;
    meta[2 * half + 1] = sum;
  }
}

// The f32 sum of the 16-element run at e, beside member kM's f32 parts.
template <int kM>
__device__ __forceinline__ void StageRunSum(float sum, int e, float4* xs) {
  using W = WType<kWt[kM]>;
  float* sums = reinterpret_cast<float*>(xs + SlotOf(kM) * kSlotFloat4 + kK / 4);
  sums[2 * W::UnitOf(e) + W::HalfOf(e)] = sum;
}

// The sum of v over the kXLanes lanes that stage one run (every one of them gets it).
template <class T>
__device__ __forceinline__ T RunLanesSum(T v) {
#pragma unroll
  for (int offset = 1; offset < kXLanes; offset <<= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
// The f32 sum of a run's 16 values (v: this lane's kXElems of them, j: its place among the run's
// lanes) in column order, as one lane adds them: each lane goes on from its predecessor's sum. The
// f32 dots take Σq·x as 256·f − 128·Σx, which cancels, so Σx's rounding shows in their results.
__device__ __forceinline__ float RunSumInOrder(const float (&v)[kXElems], int j) {
  float s = 0.f;
#pragma unroll
  for (int l = 0; l < kXLanes; ++l) {
    const float before = __shfl_up_sync(0xffffffffu, s, 1);
    if (j == l) {
      s = l == 0 ? 0.f : before;
#pragma unroll
      for (int i = 0; i < kXElems; ++i) s += v[i];
    }
  }
  const int lane = threadIdx.x & 31;
  return __shfl_sync(0xffffffffu, s, lane - j + kXLanes - 1);  // the run's last lane has it all
}
__device__ __forceinline__ float RunLanesMax(float v) {
#pragma unroll
  for (int offset = 1; offset < kXLanes; offset <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// This lane's kXElems values v of a run quantized with the scale of the run's `amax`
// (returned: d = amax / qmax; q = round(v / d)): as bytes, the high plane (or the only one) in
// q, the low plane in q_lo — words lane_of_run·kXElems / 4 on of the run's four; their sum.
__device__ __forceinline__ float QuantizeRunPart(const float (&v)[kXElems], float amax, jllm_u32 (&q)[kXElems / 4],
                                                 jllm_u32 (&q_lo)[kXElems / 4], int& sum) {
  constexpr float kQmax = kXPlanes == 2 ? static_cast<float>(kX16Max) : 127.0f;
  const float d = amax / kQmax, id = amax > 0.f ? kQmax / amax : 0.f;
#pragma unroll
  for (int i = 0; i < kXElems / 4; ++i) q[i] = q_lo[i] = 0;
  sum = 0;
#pragma unroll
  for (int i = 0; i < kXElems; ++i) {
    const int qv = static_cast<int>(roundf(v[i] * id));
    sum += qv;
    const int shift = 8 * (i & 3);
    if constexpr (kXPlanes == 2) {
      const int hi = (qv + 128) >> 8;  // arithmetic shift: floor((q + 128) / 256)
      q[i >> 2] |= (static_cast<jllm_u32>(hi) & 0xFFu) << shift;
      q_lo[i >> 2] |= (static_cast<jllm_u32>(qv - 256 * hi) & 0xFFu) << shift;
    } else {
      q[i >> 2] |= (static_cast<jllm_u32>(qv) & 0xFFu) << shift;
    }
  }
  return d;
}

// Member kM's share of staging this lane's kXElems columns at e of a run of 16 (live: e is
// one of the staged columns; j: the lane's place among the run's kXLanes): in runs of 16 with
// their own scale (amax: the run's), or per pair, whose scale (the max over the pair's four
// runs, staged by lane groups l, l ^ kXLanes, l ^ kXLanes·kMateXor and l ^ kXLanes·(1 ^
// kMateXor): weight_types.cuh) and run sums come from those lanes — every lane of the warp takes
// part. Templated on kM so that a member's other form is never instantiated.
template <int kM>
__device__ __forceinline__ void StageXqOf(const float (&v)[kXElems], float amax, bool live, int e, int j, float4* xs) {
  if constexpr (StagesRunXq<kM>()) {
    jllm_u32 q[kXElems / 4], q_lo[kXElems / 4];
    int sum;
    const float d = QuantizeRunPart(v, amax, q, q_lo, sum);
    sum = RunLanesSum(sum);
    if (live) StageRunXq<kM>(q, q_lo, d, static_cast<float>(sum), e, j, xs);
  } else if constexpr (StagesPairXq<kM>()) {
    using W = WType<kWt[kM]>;
    constexpr int kMate = W::kMateXor * kXLanes, kNext = kXLanes;
    float pmax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, kNext));
    pmax = fmaxf(pmax, __shfl_xor_sync(0xffffffffu, pmax, kMate));
    jllm_u32 q[kXElems / 4], q_lo[kXElems / 4];
    int sum;
    const float d = QuantizeRunPart(v, pmax, q, q_lo, sum);
    sum = RunLanesSum(sum);
    // The pair's run sums in run order, as the lanes of run 0 see them (its first writes the meta).
    const int s1 = __shfl_xor_sync(0xffffffffu, sum, kNext);
    const int sums[4] = {sum, s1, __shfl_xor_sync(0xffffffffu, sum, kMate), __shfl_xor_sync(0xffffffffu, s1, kMate)};
    if (live) {
      W::template StageRun<kK / 64, kXPlanes, kXElems / 4>(reinterpret_cast<uint4*>(xs + SlotOf(kM) * kSlotFloat4), e, j,
                                                           q, q_lo, d, sums);
    }
  }
}

// X_PROBE: member kM's share of staging this lane's words of the run at e, copied as they are
// with a fixed scale (1/4096: int16 values of at most 8) and zero sums — no shuffles, as a copy of
// the producer's runs would need none.
template <int kM>
__device__ __forceinline__ void StageProbeOf(const jllm_u32 (&q)[kXElems / 4], const jllm_u32 (&q_lo)[kXElems / 4],
                                             bool live, int e, int j, float4* xs) {
  constexpr float kD = 1.0f / 4096;
  if (!live) return;
  if constexpr (StagesRunXq<kM>()) {
    StageRunXq<kM>(q, q_lo, kD, 0.f, e, j, xs);
  } else if constexpr (StagesPairXq<kM>()) {
    const int sums[4] = {0, 0, 0, 0};
    WType<kWt[kM]>::template StageRun<kK / 64, kXPlanes, kXElems / 4>(reinterpret_cast<uint4*>(xs + SlotOf(kM) * kSlotFloat4),
                                                                     e, j, q, q_lo, kD, sums);
  }
}

// EMBED: the token's row of the embedding table (null for an out-of-vocabulary id, whose x is
// zeros), after the grid wait. CTA 0 also records the token for the sampler's repetition penalty
// and flags a bad id in the step state, as embed.cu does.
__device__ __forceinline__ const jllm_u8* EmbedRow(const jllm::cuda::GemvArgs& args) {
  if constexpr (!kEmbed) {
    return nullptr;
  } else {
    const int token = args.embed_tokens[0];
    const bool ok = token >= 0 && token < kEmbedRows;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      if (!ok) {
        atomicOr(&args.state->error, jllm::cuda::kStepErrorTokenRange);
      } else if (args.pos != nullptr) {
        args.ctx_tokens[args.pos[0]] = token;
      }
    }
    return ok ? static_cast<const jllm_u8*>(args.embed_table) +
                    static_cast<long long>(token) * jllm::cuda::layout::RowStride(kEmbedType, kK)
              : nullptr;
  }
}

// x[e..e + 4).
__device__ __forceinline__ float4 LoadX4(const jllm::cuda::GemvArgs& args, int e) {
  return *reinterpret_cast<const float4*>(args.x + e);
}
// v = x[e..e + 4) times gamma and `scale` (NORM); kSquares: adds the four x² (each rounded in
// f32, as cpu_ref's RMSNorm) to `squares`. `g`: gamma[e..e + 4) when loaded already (GAMMA_EARLY).
template <bool kSquares = false>
__device__ __forceinline__ float4 NormedX(const jllm::cuda::GemvArgs& args, float4 v, int e, float scale,
                                          double& squares, const float4* g = nullptr) {
  if constexpr (kSquares) {
    squares += static_cast<double>(v.x * v.x) + static_cast<double>(v.y * v.y) + static_cast<double>(v.z * v.z) +
               static_cast<double>(v.w * v.w);
  }
  if constexpr (kNorm) {
    const float4 gv = g != nullptr ? *g : *reinterpret_cast<const float4*>(args.gamma + e);
    v = make_float4(v.x * scale * gv.x, v.y * scale * gv.y, v.z * scale * gv.z, v.w * scale * gv.w);
  }
  return v;
}

// The quantized-x pass of StageX: kXElems columns a thread from e0 + kXElems·thread, kXqTrips
// times at most (every column in one pass when K <= kXElems · threads).
constexpr int kXqTrips = geo::CeilDiv(kK, kXElems * kThreads);
constexpr int kXF4 = kXElems / 4;  // float4 a thread a trip
constexpr bool kXqPass = StagesXq<0>() || StagesXq<1>() || StagesXq<2>() || StagesSums<0>() || StagesSums<1>() ||
                         StagesSums<2>();
constexpr bool kEarlyGamma = kGammaEarly && kXqPass && !kXProbe;  // (an f32-only GEMV stages without that pass)
// Gamma of those columns, loaded before the grid wait (GAMMA_EARLY; zeros past e1).
struct EarlyGamma {
  float4 g[kEarlyGamma ? kXqTrips : 1][kXF4];
};
__device__ __forceinline__ EarlyGamma LoadEarlyGamma(const jllm::cuda::GemvArgs& args, int e0, int e1) {
  EarlyGamma eg;
  if constexpr (kEarlyGamma) {
#pragma unroll
    for (int it = 0; it < kXqTrips; ++it) {
      const int e = e0 + kXElems * static_cast<int>(threadIdx.x) + kXElems * kThreads * it;
#pragma unroll
      for (int i = 0; i < kXF4; ++i) {
        eg.g[it][i] = e < e1 ? *reinterpret_cast<const float4*>(args.gamma + e + 4 * i) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }
  return eg;
}

// The columns [e0, e1) the CTA stages: those of splits s_lo..s_hi.
__device__ __forceinline__ int StagedBegin(int s_lo) { return SplitGroup(s_lo) * 256; }
__device__ __forceinline__ int StagedEnd(int s_hi) { return SplitGroup(s_hi + 1) * 256; }

// LATE_NORM's factor, from the warps' Σx² that StageX left in `scratch` (after its barrier).
__device__ __forceinline__ float RmsScaleOf(const jllm::cuda::GemvArgs& args, const double* scratch) {
  double total = 0;
  for (int w = 0; w < kNw; ++w) total += scratch[w];  // fixed order: deterministic
  return jllm_rms_scale(total, kK, args.eps);
}

// Returns the factor the results take: the RMS scale with LATE_NORM (LAZY_SCALE: -1, computed
// later by RmsScaleOf), else 1. `slots`: SlotsRead's bits, the member groups whose slots it fills.
// Every thread calls after_loads() once, warp-uniformly, when its loads of x are issued (before
// their first use): in the quantized pass after all its trips' loads, else first.
template <class AfterLoads>
__device__ __forceinline__ float StageX(const jllm::cuda::GemvArgs& args, int s_lo, int s_hi, unsigned slots,
                                        float4* xs, const EarlyGamma& eg, double* scratch, AfterLoads&& after_loads) {
  float scale = 1.0f;
  if constexpr (kNorm && !kLateNorm && !kXProbe) {
    scale = jllm_rms_scale(jllm_sum_squares(args.x, kK, scratch), kK, args.eps);
  }
  double squares = 0;  // LATE_NORM: this thread's share of Σx² (every column is staged: no split)
  const int e0 = StagedBegin(s_lo), e1 = StagedEnd(s_hi);
  constexpr bool kAnyF32 = StagesF32<0>() || StagesF32<1>() || StagesF32<2>();
  constexpr bool kAnyXq = StagesXq<0>() || StagesXq<1>() || StagesXq<2>();
  constexpr bool kXqLoop = kAnyXq || StagesSums<0>() || StagesSums<1>() || StagesSums<2>();
  static_assert(!kEmbed || (kLateNorm && kXqLoop && !kAnyF32 && kXElems % 8 == 0),
                "EMBED dequantizes the row in the quantized-x pass, 8 columns at a time, with LATE_NORM");
  static_assert(!kXProbe || (kAnyXq && !kAnyF32 && !kEmbed && kXPlanes == 2 && kXElems % 8 == 0),
                "X_PROBE stands in for int16 runs of x, read by every member, by 1 or 2 lanes a run");
  const jllm_u8* erow = EmbedRow(args);
  if constexpr (!kXqLoop) after_loads();
  if constexpr (kAnyF32) {
    for (int e = e0 + 4 * threadIdx.x; e < e1; e += 4 * kThreads) {
      const float4 v = NormedX<kLateNorm>(args, LoadX4(args, e), e, scale, squares);
      if constexpr (StagesF32<0>()) { if (slots & 1u) StageSlot<0>(v, e, xs); }
      if constexpr (StagesF32<1>()) { if (slots & 2u) StageSlot<1>(v, e, xs); }
      if constexpr (StagesF32<2>()) { if (slots & 4u) StageSlot<2>(v, e, xs); }
    }
  }
  if constexpr (kXqLoop) {
    // A warp-uniform trip count (pair scales are reductions over lanes): a lane past e1 runs
    // with zeros and writes nothing. Every trip's loads first, then after_loads(), then the math.
    const int lane = threadIdx.x & 31;
    const int j = lane % kXLanes;  // this lane's place among its run's
    float4 raw[kXqTrips][kXF4];
    int trips = 0;
#pragma unroll
    for (int it = 0; it < kXqTrips; ++it) {
      const int e = e0 + kXElems * static_cast<int>(threadIdx.x) + kXElems * kThreads * it;
      if (e - kXElems * lane >= e1) break;  // warp-uniform
      trips = it + 1;
      if constexpr (kEmbed) {
        float d[kXElems] = {};
        if (e < e1 && erow != nullptr) {
#pragma unroll
          for (int h = 0; h < kXElems / 8; ++h) Dequant8<kEmbedType, kK>(erow, e + 8 * h, d + 8 * h);
        }
#pragma unroll
        for (int i = 0; i < kXF4; ++i) {
          raw[it][i] = make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]);
          if (blockIdx.x == 0 && e < e1) *reinterpret_cast<float4*>(args.embed_y + e + 4 * i) = raw[it][i];
        }
      } else if constexpr (kXProbe) {
        // The bytes int16 runs of these columns would take (2 a column, half the f32's), read as
        // contiguously as they would lie: from the first half of the staged columns.
#pragma unroll
        for (int i = 0; i < kXF4; ++i) {
          raw[it][i] = e < e1 && i < kXF4 / 2 ? LoadX4(args, e0 + (e - e0) / 2 + 4 * i) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
      } else {
#pragma unroll
        for (int i = 0; i < kXF4; ++i) raw[it][i] = e < e1 ? LoadX4(args, e + 4 * i) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
    after_loads();
#pragma unroll
    for (int it = 0; it < kXqTrips; ++it) {
      if (it >= trips) break;  // warp-uniform
      const int e = e0 + kXElems * static_cast<int>(threadIdx.x) + kXElems * kThreads * it;
      const bool live = e < e1;  // (the same for all lanes of a run: e1 is a multiple of 256)
      if constexpr (kXProbe) {
        // The loaded bits as the run's two planes, a fixed scale, zero sums: a copy, as staging
        // would be with the producer's runs. Σx² as if every x² were 1 (an RMS scale near 1).
        jllm_u32 q[kXElems / 4], q_lo[kXElems / 4];
        const jllm_u32* bits = reinterpret_cast<const jllm_u32*>(&raw[it][0]);
#pragma unroll
        for (int i = 0; i < kXElems / 4; ++i) q[i] = bits[i], q_lo[i] = bits[kXElems / 4 + i];
        if (live) squares += kXElems;
        if (slots & 1u) StageProbeOf<0>(q, q_lo, live, e, j, xs);
        if (slots & 2u) StageProbeOf<1>(q, q_lo, live, e, j, xs);
        if (slots & 4u) StageProbeOf<2>(q, q_lo, live, e, j, xs);
        continue;
      }
      float v[kXElems];
#pragma unroll
      for (int i = 0; i < kXF4; ++i) {
        const float4* g = kEarlyGamma ? &eg.g[kEarlyGamma ? it : 0][i] : nullptr;
        const float4 f = live ? NormedX<kLateNorm && !kAnyF32>(args, raw[it][i], e + 4 * i, scale, squares, g)
                              : make_float4(0.f, 0.f, 0.f, 0.f);
        v[4 * i] = f.x, v[4 * i + 1] = f.y, v[4 * i + 2] = f.z, v[4 * i + 3] = f.w;
      }
      if constexpr (StagesSums<0>() || StagesSums<1>() || StagesSums<2>()) {
        const float fsum = RunSumInOrder(v, j);
        if (live && j == 0) {
          if constexpr (StagesSums<0>()) { if (slots & 1u) StageRunSum<0>(fsum, e, xs); }
          if constexpr (StagesSums<1>()) { if (slots & 2u) StageRunSum<1>(fsum, e, xs); }
          if constexpr (StagesSums<2>()) { if (slots & 4u) StageRunSum<2>(fsum, e, xs); }
        }
      }
      if constexpr (kAnyXq) {
        float amax = 0.f;
#pragma unroll
        for (int i = 0; i < kXElems; ++i) amax = fmaxf(amax, fabsf(v[i]));
        amax = RunLanesMax(amax);
        // (`slots` is CTA-uniform: every lane of a warp takes part in a slot's shuffles or none)
        if (slots & 1u) StageXqOf<0>(v, amax, live, e, j, xs);
        if (slots & 2u) StageXqOf<1>(v, amax, live, e, j, xs);
        if (slots & 4u) StageXqOf<2>(v, amax, live, e, j, xs);
      }
    }
  }
  if constexpr (kLateNorm) {
    squares = jllm_warp_sum_d(squares);
    if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = squares;
  }
  __syncthreads();  // x staged (and the warps' Σx² written) for every warp
  if constexpr (kLateNorm) return kLazyScale ? -1.0f : RmsScaleOf(args, scratch);
  return 1.0f;
}

// The sum of v over the LPR lanes that share a row (every one of them gets it).
template <int kLpr>
__device__ __forceinline__ float RowSum(float v) {
#pragma unroll
  for (int offset = kLpr / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The row this lane writes of an item whose first row is row0 — lane r of each row's group
// writes the group's row r — or -1 (a lane past RPL, or a row past the matrix).
template <int kM>
__device__ __forceinline__ int WriterRow(int row0, int lane) {
  constexpr int kLpr = Lpr(kM);
  const int lu = lane % kLpr, row = row0 + lane / kLpr + (32 / kLpr) * lu;
  return lu < RowsPerLane(kM) && row < kRows[kM] ? row : -1;
}

// HEAD, after an item's rows of member kM (q, k or v) are final: each head the item touches gets
// the item's row count on its ticket (a q head's counts to D; a kv head's to 2·D, its k rows and
// its v rows), and the warp that completes a head transforms it — q: RMSNorm + RoPE into yq; kv:
// k normed and rotated, v as it is, appended to the caches at *pos — and clears the ticket for
// the next launch. The rows were written by other warps and SMs: the writers fence before their
// ticket, the completing warp after it, and reads them through L2.
template <int kM>
__device__ __forceinline__ void HeadTail(const jllm::cuda::GemvArgs& args, int row0) {
  if constexpr (kHead) {
    constexpr int kPer = kHeadD / 32;
    const int lane = threadIdx.x & 31;
    const int end = min(row0 + ItemRows(kM), kRows[kM]);
    unsigned* tickets = args.counters + (kKsplit > 1 ? kRowGroups : 0);
    const jllm::cuda::FusedHeadArgs& a = args.head;
    __threadfence();  // this warp's rows of the item, before its tickets
    __syncwarp();
    for (int h = row0 / kHeadD; h * kHeadD < end; ++h) {
      const unsigned n = static_cast<unsigned>(min(end, (h + 1) * kHeadD) - max(row0, h * kHeadD));
      const int c = kM == 0 ? h : kHq + h;
      const unsigned whole = kM == 0 ? kHeadD : 2 * kHeadD;
      unsigned before = 0;
      if (lane == 0) before = atomicAdd(tickets + c, n);
      before = __shfl_sync(0xffffffffu, before, 0);
      if (before + n != whole) continue;
      __threadfence();  // every writer's rows of head h
      const int pos = args.pos[0];
      const long long at = static_cast<long long>(h) * kHeadD;
      float x[kPer], g[kPer];
      const float* src = kM == 0 ? a.xq : a.xk;
      const float* gamma = kM == 0 ? a.q_gamma : a.k_gamma;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        x[i] = jllm_load_l2_f32(src + at + lane + 32 * i);
        g[i] = gamma[lane + 32 * i];
      }
      HeadTransform<kHeadD, kHeadRot>(x, true, g, true, a.eps, pos, a.rope_step, a.rope_scale, nullptr);
      if (kM == 0) {
#pragma unroll
        for (int i = 0; i < kPer; ++i) args.yq[at + lane + 32 * i] = x[i];
      } else {
        float v[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) v[i] = jllm_load_l2_f32(a.xv + at + lane + 32 * i);
        StoreKvHead<kHeadKv, kHeadD>(x, v, h, pos, a.k_cache, a.v_cache, a.k_scales, a.v_scales, args.max_ctx);
      }
      if (lane == 0) tickets[c] = 0;
    }
  }
}

// ARGMAX: the ticket of the draw's CTAs, where sample.cu keeps its own.
__device__ __forceinline__ unsigned* DrawTicket(const jllm::cuda::GemvArgs& args) {
  return args.draw_stamps + geo::SampleTicketWord(kRows[0]);
}

// ARGMAX: the CTA's best key over the rows of its items (none: 0), then the grid's draw.
template <bool kOn = kArgmax>
__device__ __forceinline__ void DrawFromRows(const jllm::cuda::GemvArgs& args, Range cta, CtaShared& cs) {
  if constexpr (kOn) {
    const int r0 = cta.begin * ItemRows(0), r1 = min(cta.end * ItemRows(0), kRows[0]);
    jllm_u64 best = 0;
    for (int r = r0 + static_cast<int>(threadIdx.x); r < r1; r += kThreads) {
      const jllm_u64 k = jllm_kernels::DrawKeyOf(args.y[0][r], r);
      best = k > best ? k : best;
    }
    jllm_kernels::FinishGreedyDraw(best, args.draw_keys, DrawTicket(args), args.state,
                                   static_cast<DrawPart<kOn>&>(cs).draw);
  }
}

// y (or the partial sums) of the item of member-group kM at row0, split `split`. `residual` is
// residual[WriterRow] (RESIDUAL), loaded when the item began; `x_scale` is StageX's factor (the
// RMS scale with LATE_NORM, which has no K split).

template <int kM>
__device__ __forceinline__ void Finish(const jllm::cuda::GemvArgs& args, int split, int rg, int row0,
                                       const float (&acc)[kMembersPerItem][RowsPerLane(kM)], float residual,
                                       float x_scale) {
  constexpr int kRpl = RowsPerLane(kM), kLpr = Lpr(kM);
  const int lane = threadIdx.x & 31;
  float sums[kMembersPerItem][kRpl];
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
    for (int r = 0; r < kRpl; ++r) sums[j][r] = RowSum<kLpr>(acc[j][r]);
  }
  const int row = WriterRow<kM>(row0, lane), lu = lane % kLpr;
  float v[kMembersPerItem];  // the writer's row
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) {
    v[j] = sums[j][0];
#pragma unroll
    for (int r = 1; r < kRpl; ++r) v[j] = lu == r ? sums[j][r] : v[j];
  }
  auto epilogue = [&](const float (&y)[kMembersPerItem]) {
    if constexpr (kSwiglu) {
      args.y[0][row] = jllm_swiglu(y[0], y[1]);
    } else if constexpr (kResidual) {
      args.y[kM][row] = y[0] + residual;
    } else {
      args.y[kM][row] = y[0];
    }
  };
  if constexpr (kKsplit == 1) {
    if (row >= 0) {
      if constexpr (kLateNorm) {
#pragma unroll
        for (int j = 0; j < kMembersPerItem; ++j) v[j] *= x_scale;
      }
      epilogue(v);
    }
    HeadTail<kM>(args, row0);
  } else {
    // Partial sums of this split (each writer its row's, fenced before the warp's ticket); the
    // row group's last split to finish adds them in order.
    if (row >= 0) {
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) args.partials[split * kTotalRows + RowBegin(kM + j) + row] = v[j];
      __threadfence();
    }
    __syncwarp();
    unsigned ticket = 0;
    if (lane == 0) ticket = atomicAdd(&args.counters[RgBegin(kM) + rg], 1u);
    ticket = __shfl_sync(0xffffffffu, ticket, 0);
    if (ticket != kKsplit - 1) return;
    __threadfence();
    if (row >= 0) {
      float y[kMembersPerItem];
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
        float part[kKsplit];
#pragma unroll
        for (int k = 0; k < kKsplit; ++k) part[k] = jllm_load_l2_f32(args.partials + k * kTotalRows + RowBegin(kM + j) + row);
        float t = 0.f;
#pragma unroll
        for (int k = 0; k < kKsplit; ++k) t += part[k];
        y[j] = t;
      }
      epilogue(y);
    }
    if (lane == 0) args.counters[RgBegin(kM) + rg] = 0;
    HeadTail<kM>(args, row0);
  }
}

// The d values (TailD) of unit u of this lane's rows (row_l, row_l + 32 / LPR, ...) of every
// matrix the item reads: what StepDots reads inside each dot, or takes from D_AHEAD's registers.
template <int kM>
__device__ __forceinline__ void StepTailD(int u, int row_l, const jllm_u8* const (&wbase)[kMembersPerItem],
                                          float (&d)[kMembersPerItem][RowsPerLane(kM)]) {
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(kType[kM], kK);
  constexpr int kRpl = RowsPerLane(kM), kRowLanes = 32 / Lpr(kM);
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
    for (int r = 0; r < kRpl; ++r) {
      const int row = row_l + kRowLanes * r;
      d[j][r] = row < kRows[kM] ? TailD<kWt[kM], kK>(wbase[j] + row * kRowStride, u) : 0.f;
    }
  }
}

// Adds the dots of one unit step — unit u of this lane's rows (row_l, row_l + 32 / LPR, ...)
// of every matrix the item reads, from the fragments f — to acc. kDGiven: the rows' d values
// (StepTailD) are `dg`, loaded earlier; else each is loaded here, in the dot's dependency chain.
template <int kM, bool kDGiven>
__device__ __forceinline__ void StepDots(const typename WType<kWt[kM]>::Frag (&f)[kMembersPerItem][RowsPerLane(kM)],
                                         const float4* xsl, int u, int row_l,
                                         const jllm_u8* const (&wbase)[kMembersPerItem],
                                         const float (&dg)[kMembersPerItem][RowsPerLane(kM)],
                                         float (&acc)[kMembersPerItem][RowsPerLane(kM)]) {
  constexpr int T = kType[kM];
  using W = WType<kWt[kM]>;
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(T, kK);
  constexpr int kN = kRows[kM];
  constexpr int kRpl = RowsPerLane(kM), kRowLanes = 32 / Lpr(kM);
  auto d_of = [&](int j, int r, int row) {
    if constexpr (kDGiven) {
      return dg[j][r];
    } else {
      return TailD<kWt[kM], kK>(wbase[j] + row * kRowStride, u);
    }
  };
  if constexpr (PairUnits(kM)) {
    const uint4* xq = reinterpret_cast<const uint4*>(xsl);
#pragma unroll
    for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
      for (int r = 0; r < kRpl; ++r) {
        const int row = row_l + kRowLanes * r;
        if (row < kN) acc[j][r] += W::template DotPair<kK, kXPlanes>(f[j][r], xq, u, d_of(j, r, row));
      }
    }
  } else if constexpr (UsesXq<kM>()) {
    constexpr int kUnitsK = kGroups256 * W::kUnits256;
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
      for (int r = 0; r < kRpl; ++r) {
        const int row = row_l + kRowLanes * r;
        if (row < kN) acc[j][r] += W::template DotXq<kXPlanes>(f[j][r], x, meta, u, d_of(j, r, row));
      }
    }
  } else {
    constexpr int kUnitsK = kGroups256 * W::kUnits256;
    float4 xv[W::kParts];
#pragma unroll
    for (int p = 0; p < W::kParts; ++p) xv[p] = xsl[p * kUnitsK + u];
    float2 xsum = make_float2(0.f, 0.f);
    if constexpr (W::kHalfSums) xsum = reinterpret_cast<const float2*>(xsl + kK / 4)[u];
#pragma unroll
    for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
      for (int r = 0; r < kRpl; ++r) {
        const int row = row_l + kRowLanes * r;
        if (row < kN) acc[j][r] += W::Dot(f[j][r], xv, xsum, u, d_of(j, r, row));
      }
    }
  }
}

// The warp's share of member-group kM in split `split` — of the CTA's items [i0, i1), those
// with index ≡ `phase` (mod NW) (SPREAD 0) or an equal range of their unit steps (SPREAD 1) —
// as one stream of unit steps, across item boundaries, with the steps ahead in flight: kDepth
// steps in registers (RING 0), or RING - 1 chunks of up to CHUNK steps copied (bulk copies or
// cp.async) into the warp's ring of RING shared-memory slots (`ring`, with an mbarrier per slot
// in `bars`), so that the bytes in flight are bounded by shared memory instead of registers;
// `ring_base` counts the warp's ring chunks across segments. `first`: this is the CTA's first segment:
// every warp calls it, its opening loads go out before the wait for the predecessor, and it
// stages x.
template <int kM>
__device__ __forceinline__ void Segment(const jllm::cuda::GemvArgs& args, int split, int i0, int i1, int phase,
                                        bool first, int s_lo, int s_hi, unsigned slots, float4* xs, jllm_u8* ring,
                                        jllm_u64* bars, int& ring_base, float& x_scale, CtaShared& cs) {
  constexpr int T = kType[kM];
  using W = WType<kWt[kM]>;
  using Frag = typename W::Frag;
  constexpr jllm_i64 kRowStride = jllm::cuda::layout::RowStride(T, kK);
  constexpr int kLpr = Lpr(kM), kRowLanes = 32 / kLpr, kRpl = RowsPerLane(kM), kItemRows = ItemRows(kM);
  constexpr int kMaxSplitUnits = geo::CeilDiv(kGroups256, kKsplit) * W::kUnits256;
  constexpr int kSteps = geo::CeilDiv(kMaxSplitUnits, kLpr);  // per item
  static_assert(W::kUnits256 == geo::GemvUnits256(T, kPairs), "launch_geometry.h agrees");
  constexpr int kN = kRows[kM];
  constexpr int kStep = geo::GemvStepBytes(T, kPairs);  // bytes of one row's step in a ring slot
  constexpr int kUnitBytes = kStep / kLpr;                // a unit's share of a row's body bytes
  constexpr int kRowArea = kChunk * kStep;  // a row's bytes in a ring slot: CHUNK steps
  static_assert(kStep % 32 == 0 && kMembersPerItem * kItemRows * kRowArea <= kStageBytes, "a chunk fits a ring slot");
  static_assert(kMembersPerItem * kItemRows <= 32, "a lane issues each row's copy of a step");
  static_assert(!kTma || geo::GemvTileCopiesFit(kStageBytes, kItemRows * kStep, kStep, kChunk),
                "tensor-map boxes land 128-byte aligned (the lowering turns JLLM_TMA off where they cannot)");

  const int lane = threadIdx.x & 31;
  const int lu = lane % kLpr, lr = lane / kLpr;  // the lane's unit of a step, its first row
  const int u0 = SplitGroup(split) * W::kUnits256, n_units = (SplitGroup(split + 1) - SplitGroup(split)) * W::kUnits256;
  const int seg0 = split * kRowGroups + RgBegin(kM);  // item index of row group 0
  // The warp's steps. SPREAD 0: whole items, round-robin — items [i0, i1) with index ≡ phase
  // (mod NW), from i0' = the first such index. SPREAD 1: an equal contiguous range
  // [tau0, tau1) of the CTA's steps of this segment (items i0.. times kSteps), so no warp has
  // an item more than another; an item cut by a range boundary is added up across warps below.
  const int warp = threadIdx.x >> 5;
  const int seg_steps = (i1 - i0) * kSteps;
  const int tau0 = kSpread ? static_cast<int>(static_cast<long long>(seg_steps) * warp / kNw) : 0;
  const int j0 = kSpread ? i0 : i0 + ((phase - i0) % kNw + kNw) % kNw;
  const int n_items = j0 < i1 ? (i1 - j0 + kNw - 1) / kNw : 0;
  const int n_steps =
      kSpread ? static_cast<int>(static_cast<long long>(seg_steps) * (warp + 1) / kNw) - tau0 : n_items * kSteps;
  // Step t of the warp: row group and unit step.
  auto rg_of = [&](int t) {
    return kSpread ? i0 - seg0 + (tau0 + t) / kSteps : j0 + kNw * (t / kSteps) - seg0;
  };
  auto s_of = [&](int t) { return kSpread ? (tau0 + t) % kSteps : t % kSteps; };
  const jllm_u8* wbase[kMembersPerItem];
#pragma unroll
  for (int j = 0; j < kMembersPerItem; ++j) wbase[j] = static_cast<const jllm_u8*>(args.w[kM + j]);

  float acc[kMembersPerItem][kRpl];
  auto clear = [&] {
#pragma unroll
    for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
      for (int r = 0; r < kRpl; ++r) acc[j][r] = 0.f;
    }
  };
  clear();
  float residual = 0.f;
  // Step t's dots from its fragments, then (at an item's last step) the item's results.
  // SPREAD 1: the warp's last item, if it goes on in the next warp, leaves its sums in
  // heads[warp] (a middle piece, if the warp's range lies inside one item, too); its first item,
  // if it began in an earlier warp, is finished after the CTA's barrier, from those heads.
  auto& heads = cs.heads;
  float tail[kMembersPerItem][kRpl];
  int tail_rg = -1;
  // LAZY_SCALE: the RMS scale at the warp's first result (StageX returned -1 for it).
  auto scale_now = [&] {
    if constexpr (kLazyScale) {
      if (x_scale < 0.f) x_scale = RmsScaleOf(args, cs.scratch);
    }
  };
  // D_AHEAD on this member's type: the dots take their d values from registers (d_ahead).
  constexpr bool kDGiven = kDAhead && lay::HasScaleTail(T);
  auto consume = [&](int t, const Frag (&f)[kMembersPerItem][kRpl], const float (&d)[kMembersPerItem][kRpl]) {
    const int rg = rg_of(t), s = s_of(t);
    const int row0 = rg * kItemRows;
    const int ul = lu + kLpr * s;
    if constexpr (kResidual) {
      // Loaded with the item's first step, used at its end: no round trip in the epilogue.
      const int row = WriterRow<kM>(row0, lane);
      if (s == 0 && row >= 0) residual = args.residual[row];
    }
    if (ul < n_units) StepDots<kM, kDGiven>(f, xs + SlotOf(kM) * kSlotFloat4, u0 + ul, row0 + lr, wbase, d, acc);
    const bool began_here = !kSpread || t >= s;  // the warp ran the item's first step
    if (s == kSteps - 1 && began_here) {
      scale_now();
      Finish<kM>(args, split, rg, row0, acc, residual, x_scale);
      clear();
    } else if (kSpread && (s == kSteps - 1 || t == n_steps - 1)) {
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
        for (int r = 0; r < kRpl; ++r) {
          const float v = RowSum<kLpr>(acc[j][r]);
          if (s == kSteps - 1) {
            tail[j][r] = v;  // the end of an item an earlier warp began
          } else if (lu == 0) {
            heads[kSpread ? warp : 0][j][lr + kRowLanes * r] = v;
          }
        }
      }
      if (s == kSteps - 1) tail_rg = rg;
      clear();
    }
  };
  // SPREAD 1, after every warp's stream: the item the warp finished as a tail, added up in warp
  // order (the heads of the warps it spans, then the tail), deterministically.
  auto finish_cut_item = [&] {
    if constexpr (kSpread) {
      __syncthreads();
      if (tail_rg >= 0) {
        const int first = (tail_rg - (i0 - seg0)) * kSteps;  // the item's first step in the segment
        auto tau = [&](int w) { return static_cast<int>(static_cast<long long>(seg_steps) * w / kNw); };
        int a = warp - 1;  // the warp whose range holds the item's first step
        while (a > 0 && tau(a) > first) --a;
        float total[kMembersPerItem][kRpl];  // like acc: one lane of each row's group holds the row
#pragma unroll
        for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
          for (int r = 0; r < kRpl; ++r) {
            float v = 0.f;
            for (int w = a; w < warp; ++w) {
              if (tau(w + 1) > tau(w)) v += heads[w][j][lr + kRowLanes * r];  // (a warp may have no steps)
            }
            total[j][r] = lu == 0 ? v + tail[j][r] : 0.f;
          }
        }
        const int row0 = tail_rg * kItemRows;
        if constexpr (kResidual) {
          const int row = WriterRow<kM>(row0, lane);
          if (row >= 0) residual = args.residual[row];
        }
        scale_now();
        Finish<kM>(args, split, tail_rg, row0, total, residual, x_scale);
      }
      __syncthreads();  // heads are free for the next segment
    }
  };
  // after_loads: the warp's ring chunks held back from before the wait (JLLM_EARLY_SLOTS).
  auto stage_x = [&](auto&& after_loads) {
    if (!first) {
      after_loads();
    } else {
      const EarlyGamma eg = LoadEarlyGamma(args, StagedBegin(s_lo), StagedEnd(s_hi));  // a weight: before the wait
      JLLM_GRID_WAIT();  // x, the residual and the partials' readers come before us
      JLLM_LAUNCH_DEPENDENTS();
      x_scale = StageX(args, s_lo, s_hi, slots, xs, eg, cs.scratch, after_loads);
      JLLM_TRACE_MARK();  // x staged: the stream's dots may begin
    }
  };

  if constexpr (kRing == 0) {
    const float no_d[kMembersPerItem][kRpl] = {};  // (the dots load their d: no D_AHEAD here)
    Frag f[kDepth][kMembersPerItem][kRpl];
    auto load = [&](int t, Frag (&buf)[kMembersPerItem][kRpl]) {
      if (t >= n_steps) return;
      const int s = s_of(t), row_l = rg_of(t) * kItemRows + lr;
      const int ul = lu + kLpr * s;
      if (ul >= n_units) return;
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
        for (int r = 0; r < kRpl; ++r) {
          const int row = row_l + kRowLanes * r;
          if (row < kN) buf[j][r] = W::Load(wbase[j] + row * kRowStride, u0 + ul);
        }
      }
    };
#pragma unroll
    for (int b = 0; b < kDepth; ++b) load(b, f[b]);
    stage_x([] {});
#pragma unroll 1
    for (int t0 = 0; t0 < n_steps; t0 += kDepth) {
#pragma unroll
      for (int b = 0; b < kDepth; ++b) {
        const int t = t0 + b;
        if (t < n_steps) {
          consume(t, f[b], no_d);
          load(t + kDepth, f[b]);  // the ring slot is free: refill it
        }
      }
    }
  } else {
    // The warp's steps pass through the ring in chunks: up to CHUNK consecutive steps of one item
    // (a chunk ends at its item's last step or the warp's), numbered across the warp's segments
    // (g = ring_base + q for the segment's chunk q); slot g mod RING holds chunk g: for each
    // matrix j and row o of the item (o = row - row0), the chunk's bytes of the row at
    // (j·ItemRows + o)·kRowArea, copied verbatim (a row's consecutive steps are consecutive
    // bytes), so W::Load reads unit lu of the chunk's step c as unit lu + LPR·c of the row's area.
    // Bulk copies (sm_90): lane j·ItemRows + o copies row o of matrix j, lane 0 arms the slot's
    // mbarrier with all of their bytes (a copy may land before the arming: the transaction count
    // goes negative meanwhile); chunk g is use g / RING of its slot. cp.async: every lane copies
    // 16-byte pieces of every row and commits one group per chunk (empty past the end); at least
    // AHEAD - 1 chunks past q are issued when q opens, so "chunk q has landed" is "at most AHEAD - 1
    // groups pending". The issuing and the consuming side walk the same chunks: both cut them
    // with chunk_len from step 0.
    auto chunk_len = [&](int t) {
      if constexpr (kChunk == 1) return 1;
      return min(kChunk, min(kSteps - s_of(t), n_steps - t));
    };
    // The chunk that begins at step t: its unit step, first row, steps, a row's units in it (a
    // split's last step may be short; 0: past the split's end) and its first byte in a row.
    struct Chunk {
      int s, row0, len, units;
      jllm_i64 col;
    };
    auto chunk_at = [&](int t) {
      Chunk c;
      c.s = s_of(t);
      c.row0 = rg_of(t) * kItemRows;
      c.len = chunk_len(t);
      c.units = min(kLpr * c.len, n_units - kLpr * c.s);
      c.col = static_cast<jllm_i64>(u0 + kLpr * c.s) * kUnitBytes;
      return c;
    };
    int t_issue = 0, q_issue = 0;  // the first step of the next chunk to issue, its number
    auto issue_next = [&] {
      if (t_issue < n_steps) {
        const Chunk c = chunk_at(t_issue);
        const int s = c.s, row0 = c.row0, len = c.len, units = c.units;
        const jllm_i64 col = c.col;
        const int rows = units > 0 ? min(kItemRows, kN - row0) : 0;  // the item's rows in the matrix
        const int g = ring_base + q_issue;
        jllm_u8* slot = ring + (g % kRingSlots) * kStageBytes;
        if constexpr (kTma) {
#if JLLM_HAS_BULK_COPY
          // The box is the whole step of every row (zeros past the matrix; a split's short last
          // step reads on into the next split's bytes, which no lane uses): all of it counts.
          if (lane == 0) {
            jllm_u64* bar = bars + g % kRingSlots;
            jllm_mbar_arrive_expect(bar, units > 0 ? static_cast<jllm_u32>(kMembersPerItem * kItemRows * kStep) : 0u);
            if (units > 0) {
#pragma unroll
              for (int j = 0; j < kMembersPerItem; ++j) {
                jllm_tile_copy(slot + j * kItemRows * kRowArea, &args.tmap[kM + j], static_cast<int>(col / 8), row0, bar);
              }
            }
          }
#endif
        } else if constexpr (kBulk) {
#if JLLM_HAS_BULK_COPY
          jllm_u64* bar = bars + g % kRingSlots;
          if (lane == 0) {
            jllm_mbar_arrive_expect(bar, static_cast<jllm_u32>(kMembersPerItem * rows * units * kUnitBytes));
          }
          const int j = lane / kItemRows, o = lane % kItemRows;
          const jllm_u8* base = wbase[0];  // wbase[j], without indexing a register array
#pragma unroll
          for (int m = 1; m < kMembersPerItem; ++m) base = j == m ? wbase[m] : base;
          if (j < kMembersPerItem && o < rows) {
            jllm_bulk_copy(slot + (j * kItemRows + o) * kRowArea, base + (row0 + o) * kRowStride + col,
                           static_cast<jllm_u32>(units * kUnitBytes), bar);
          }
#endif
        } else {
          const int pieces = units * kUnitBytes / 16;
#pragma unroll
          for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
            for (int o = 0; o < kItemRows; ++o) {
              if (o < rows) {
                const jllm_u8* src = wbase[j] + (row0 + o) * kRowStride + col;
                jllm_u8* dst = slot + (j * kItemRows + o) * kRowArea;
#pragma unroll
                for (int c = lane; c < kRowArea / 16; c += 32) {
                  if (c < pieces) jllm_cp_async16(dst + 16 * c, src + 16 * c);
                }
              }
            }
          }
        }
        if constexpr (kTailPrefetch && lay::HasScaleTail(T)) {
          // Lane j·ItemRows + o: row o of matrix j, the lines of d of the chunk's first and last unit.
          const int j = lane / kItemRows, o = lane % kItemRows;
          if (units > 0 && j < kMembersPerItem && o < rows) {
            const jllm_u8* base = wbase[0];
#pragma unroll
            for (int m = 1; m < kMembersPerItem; ++m) base = j == m ? wbase[m] : base;
            constexpr int kUnitElems = 256 / W::kUnits256, kBlock = lay::BlockElems(T);
            const jllm_u8* tail = base + (row0 + o) * kRowStride + lay::TailOffset(T, kK);
            const int e0 = (u0 + kLpr * s) * kUnitElems, e1 = e0 + units * kUnitElems - 1;
            jllm_prefetch_l1(tail + 2 * (e0 / kBlock));
            jllm_prefetch_l1(tail + 2 * (e1 / kBlock));
          }
        }
        t_issue += len;
      }
      ++q_issue;
      if constexpr (!kBulk) jllm_cp_async_commit();
    };
    // L2_EARLY: the box of the chunk that begins at step t asked of L2 (lane 0); its length.
    auto prefetch_chunk = [&](int t) {
      const Chunk c = chunk_at(t);
#if JLLM_HAS_BULK_COPY
      if constexpr (kTma) {
        if (lane == 0 && c.units > 0) {
#pragma unroll
          for (int j = 0; j < kMembersPerItem; ++j) {
            jllm_tile_prefetch_l2(&args.tmap[kM + j], static_cast<int>(c.col / 8), c.row0);
          }
        }
      }
#endif
      return c.len;
    };
    // D_AHEAD: step t's d values into d_ahead (a weight's bytes: before the grid wait too).
    float d_ahead[kMembersPerItem][kRpl] = {};
    auto load_d = [&](int t) {
      if constexpr (kDGiven) {
        const int ul = lu + kLpr * s_of(t);
        if (t < n_steps && ul < n_units) StepTailD<kM>(u0 + ul, rg_of(t) * kItemRows + lr, wbase, d_ahead);
      }
    };
    __syncwarp();  // the warp's previous segment has read every slot
    const int early = first ? kEarlySlots : kRing - 1;  // chunks issued before the grid wait
    for (int b = 0; b < early; ++b) issue_next();
    load_d(0);
    if constexpr (kL2Early > 0) {
      if (first) {
        for (int b = 0, t = t_issue; b < kL2Early && t < n_steps; ++b) t += prefetch_chunk(t);
      }
    }
    __syncwarp();  // (the emulation runs lanes one at a time: lane 0 has issued before any waits)
    stage_x([&] {
      for (int b = early; b < kRing - 1; ++b) issue_next();
      __syncwarp();
    });
    int q = 0, c0 = 0, c_end = 0;  // chunks opened, the open chunk's first step, the step after it
    const jllm_u8* slot = ring;
#pragma unroll 1
    for (int t = 0; t < n_steps; ++t) {
      const bool opens = kChunk == 1 || t == c_end;  // step t begins chunk q
      if (opens) {
        const int g = ring_base + q;
        if constexpr (kBulk) {
#if JLLM_HAS_BULK_COPY
          jllm_mbar_wait(bars + g % kRingSlots, static_cast<jllm_u32>(g / kRingSlots));
#endif
        } else {
          jllm_cp_async_wait<kAhead - 1>();
        }
        __syncwarp();  // every lane's copies of chunk q are visible; every lane has read chunk q - 1
        slot = ring + (g % kRingSlots) * kStageBytes;
        c0 = t;
        c_end = t + chunk_len(t);
        ++q;
      }
      const int s = s_of(t);
      Frag f[kMembersPerItem][kRpl];
      if (lu + kLpr * s < n_units) {
#pragma unroll
        for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
          for (int r = 0; r < kRpl; ++r) {
            f[j][r] = W::template Load<FromShared>(slot + (j * kItemRows + lr + kRowLanes * r) * kRowArea,
                                                   lu + kLpr * (t - c0));
          }
        }
      }
      // AHEAD chunks past this one, into a slot no unread chunk holds (at most RING - 1 ahead; the
      // start may have issued more): every lane has read the chunks before this one.
      if (opens && q_issue < q + kAhead) issue_next();
      float d[kMembersPerItem][kRpl];
#pragma unroll
      for (int j = 0; j < kMembersPerItem; ++j) {
#pragma unroll
        for (int r = 0; r < kRpl; ++r) d[j][r] = d_ahead[j][r];
      }
      load_d(t + 1);  // in flight through this step's dots
      consume(t, f, d);
    }
    ring_base += q;
  }
  JLLM_TRACE_STREAMED();  // the warp's last unit step of the segment
  finish_cut_item();
}

// The CTA's items of member-group kM in split `split` (none: nothing, CTA-uniformly).
template <int kM>
__device__ __forceinline__ void SegmentOf(const jllm::cuda::GemvArgs& args, Range cta, int split, int warp,
                                          bool& first, int s_lo, int s_hi, unsigned slots, float4* xs, jllm_u8* ring,
                                          jllm_u64* bars, int& ring_base, float& x_scale, CtaShared& cs) {
  const int seg0 = split * kRowGroups + RgBegin(kM), seg1 = seg0 + RowGroups(kM);
  const int i0 = max(seg0, cta.begin), i1 = min(seg1, cta.end);
  if (i0 >= i1) return;
  Segment<kM>(args, split, i0, i1, (cta.begin + warp) % kNw, first, s_lo, s_hi, slots, xs, ring, bars, ring_base,
              x_scale, cs);
  first = false;
}

}  // namespace

JLLM_KERNEL(gemv, jllm::cuda::GemvArgs, kThreads, JLLM_MINB) {
  JLLM_DYNAMIC_SMEM(float4, xs);
  __shared__ CtaShared cs;
  const int G = gridDim.x, b = blockIdx.x;
  const Range cta = CtaRange(b, G);
  if (cta.begin >= cta.end) {
    if constexpr (kArgmax) DrawFromRows(args, cta, cs);  // no rows, but a ticket: the last CTA counts every one
    return;
  }
  const int warp = threadIdx.x >> 5;
  const int s_lo = cta.begin / kRowGroups, s_hi = (cta.end - 1) / kRowGroups;
  const unsigned slots = SlotsRead(cta, s_lo, s_hi);
  jllm_u8* ring_area = reinterpret_cast<jllm_u8*>(xs + kSlots * kSlotFloat4);
#if JLLM_HAS_BULK_COPY
  if constexpr (kTma) ring_area = jllm_smem_align_up(ring_area, geo::kGemvTileAlign);  // (the lowering's slack)
#endif
  jllm_u8* ring = ring_area + warp * kRing * kStageBytes;
  jllm_u64* bars = reinterpret_cast<jllm_u64*>(ring_area + kNw * kRing * kStageBytes) + warp * kRing;
  int ring_base = 0;  // the warp's ring chunks so far
  float x_scale = 1.0f;  // what the first segment's StageX returns
  if constexpr (kBulk) {
#if JLLM_HAS_BULK_COPY
    if ((threadIdx.x & 31) == 0) {
      for (int i = 0; i < kRing; ++i) jllm_mbar_init(bars + i);
      jllm_mbar_init_fence();
    }
    __syncwarp();
#endif
  }
  bool first = true;
  // Item order: split-major, then member groups.
  for (int split = s_lo; split <= s_hi; ++split) {
    SegmentOf<0>(args, cta, split, warp, first, s_lo, s_hi, slots, xs, ring, bars, ring_base, x_scale, cs);
    if constexpr (kMemberGroups >= 2) {
      SegmentOf<1>(args, cta, split, warp, first, s_lo, s_hi, slots, xs, ring, bars, ring_base, x_scale, cs);
    }
    if constexpr (kMemberGroups >= 3) {
      SegmentOf<2>(args, cta, split, warp, first, s_lo, s_hi, slots, xs, ring, bars, ring_base, x_scale, cs);
    }
  }
  if constexpr (kArgmax) {
    __syncthreads();  // the CTA's rows are written, and visible to its threads
    DrawFromRows(args, cta, cs);
  }
}
