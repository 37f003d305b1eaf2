// Launch geometry the host (lowering) and the kernels must agree on: grid sizes and shared
// memory as functions of a kernel's constants. Compiled by host C++ and by NVRTC.
#pragma once

#include "backends/cuda/device_layout.h"

namespace jllm::cuda::geometry {

constexpr int CeilDiv(long long a, long long b) { return static_cast<int>((a + b - 1) / b); }

// gemv.cu: x staged once per distinct member type ("slot"): all K columns as f32 plus a float2
// of run sums per 32 columns (or, as int8, less).
constexpr int GemvSlotFloat4(long long k) { return static_cast<int>(k / 4 + k / 64); }
constexpr int GemvSmemBytes(long long k, int slots) { return slots * GemvSlotFloat4(k) * 16; }
// K-quants as unit pairs (JLLM_PAIRS, a mask: 1 q4_K, 2 q6_K; with quantized x): a unit is 64
// elements — a q4_K sub-block pair, or a q6_K (half, quarter) pair of ql runs — read by one lane,
// 8 lanes share a row and a warp step is 4 rows of 8 units, each lane one row. The unit readers
// (weight_types.cuh) have ids that are not ggml types.
inline constexpr int kGemvQ4KPairs = 0x100 | layout::kQ4_K;
inline constexpr int kGemvQ6KPairs = 0x100 | layout::kQ6_K;
constexpr bool GemvPairUnits(int type, int pairs) {
  return ((pairs & 1) != 0 && type == layout::kQ4_K) || ((pairs & 2) != 0 && type == layout::kQ6_K);
}
constexpr int GemvUnitReader(int type, int pairs) { return GemvPairUnits(type, pairs) ? 0x100 | type : type; }
// Units of quant data per 256 elements of a row of ggml type `type` (weight_types.cuh): 16 bytes
// each, or pairs (64 elements).
constexpr int GemvUnits256(int type, int pairs = 0) {
  return GemvPairUnits(type, pairs)                                          ? 4
         : type == layout::kQ8_0                                              ? 16
         : type == layout::kQ4_K || type == layout::kQ5_K || type == layout::kQ6_K ? 8
         : type == layout::kF32                                             ? 64
                                                                            : 32;  // f16, bf16
}
// Lanes that share a row (the rest of the warp reads other rows in the same step) and rows a
// lane reads in a step (`rows`, JLLM_R, for 32 lanes a row; 1 for pairs, whose steps already
// hold 4 rows); an item is LanesPerRow / 32 × RowsPerLane rows.
constexpr int GemvLanesPerRow(int type, int pairs) { return GemvPairUnits(type, pairs) ? 8 : 32; }
constexpr int GemvRowsPerLane(int type, int pairs, int rows) { return GemvPairUnits(type, pairs) ? 1 : rows; }
constexpr int GemvItemRows(int type, int pairs, int rows) {
  return 32 / GemvLanesPerRow(type, pairs) * GemvRowsPerLane(type, pairs, rows);
}

// gemv.cu's shared-memory ring (JLLM_RING > 0): a step is LanesPerRow units of each of an item's
// rows; a row's bytes of a step, copied verbatim (a whole number of blocks, 16-byte aligned), are
// its body bytes of those units.
constexpr int GemvStepBytes(int type, int pairs) {
  return static_cast<int>(GemvLanesPerRow(type, pairs) * static_cast<long long>(layout::BodyBytes(type)) * 256 /
                          layout::BlockElems(type) / GemvUnits256(type, pairs));
}
// Each warp owns `ring` slots; a slot holds `chunk` steps (JLLM_CHUNK) of an item's rows of every
// matrix it reads (`matrices`: 2 for gate+up, else 1), for the widest type: `stage_bytes` is the
// largest GemvStageBytes over the group's item kinds.
constexpr int GemvStageBytes(int type, int pairs, int rows, int matrices, int chunk) {
  return matrices * GemvItemRows(type, pairs, rows) * GemvStepBytes(type, pairs) * chunk;
}
// Behind the slots, one 8-byte mbarrier per slot (used by the bulk copies).
constexpr int GemvRingBytes(int stage_bytes, int ring, int warps) { return (stage_bytes + 8) * ring * warps; }
// Byte-weighted CTA ranges (gemv.cu, JLLM_WEIGHTED). A GEMV's items are listed split-major, then
// by member group, then by row group; an item of group m costs item_cost[m] bytes. The first
// item whose cost prefix is at least c (the item count past the end): CTA b of G takes the items
// from GemvItemAtCost(total · b / G) to GemvItemAtCost(total · (b + 1) / G), total = ksplit ·
// GemvSplitCost.
struct GemvItemCosts {
  int ksplit;
  int groups;  // member groups (1..3)
  int row_groups[3];
  long long item_cost[3];
};
constexpr long long GemvSplitCost(const GemvItemCosts& t) {
  long long c = 0;
  for (int m = 0; m < t.groups; ++m) c += t.row_groups[m] * t.item_cost[m];
  return c;
}
constexpr int GemvItemAtCost(long long c, const GemvItemCosts& t) {
  int per_split = 0;
  for (int m = 0; m < t.groups; ++m) per_split += t.row_groups[m];
  const long long split_cost = GemvSplitCost(t), split = c / split_cost;
  if (split >= t.ksplit) return t.ksplit * per_split;
  long long rem = c - split * split_cost;
  int item = static_cast<int>(split) * per_split;
  for (int m = 0; m < t.groups; ++m) {
    const long long seg = t.row_groups[m] * t.item_cost[m];
    if (rem < seg) return item + static_cast<int>((rem + t.item_cost[m] - 1) / t.item_cost[m]);
    rem -= seg;
    item += t.row_groups[m];
  }
  return item;  // (c below the split's end: not reached)
}
// Tensor-map copies (JLLM_TMA: one copy a matrix a slot, a box of the item's rows × one step)
// land at 128-byte aligned addresses: the ring starts on one (the slack below) and each box
// must, so a slot (`stage_bytes`) and a matrix's box (`box_bytes`: item rows × step) are whole
// multiples of it; a box row is at most 256 eight-byte elements. Chunks of one step only.
inline constexpr int kGemvTileAlign = 128;
constexpr bool GemvTileCopiesFit(int stage_bytes, int box_bytes, int step_bytes, int chunk) {
  return chunk == 1 && stage_bytes % kGemvTileAlign == 0 && box_bytes % kGemvTileAlign == 0 &&
         step_bytes % 16 == 0 && step_bytes / 8 <= 256;
}
// What the lowering leaves of a CTA's shared memory for the static arrays of the kernels it sizes
// the dynamic part of (the GEMV's Σx² and cut-item heads, the GEMMs'): they take less (ptxas,
// Nvrtc.EveryKernelFitsTheSharedMemoryOfItsTarget; gemv.cu static_asserts its own).
inline constexpr int kStaticSmemReserve = 2304;
// gemv.cu's static arrays: a double for each warp's Σx² (32), with SPREAD each warp's sums of the
// item it leaves to the next warp (the item's rows of every matrix it reads), and with ARGMAX the
// draw's. At most 256 + 4 x 32 warps x 2 matrices x 8 rows = 2,304 bytes (ARGMAX has one matrix:
// 256 + 1,024 + 264) within the reserve for every knob value.
// draw_keys.cuh's DrawShared (the greedy draw's shared memory): a key a warp, the last-CTA flag.
inline constexpr int kDrawSharedBytes = 32 * 8 + 8;
constexpr int GemvStaticSmemBytes(int warps, bool spread, int matrices, int item_rows, bool argmax) {
  return (32 * 8 + 4 * (spread ? warps : 1) * matrices * item_rows + 7) / 8 * 8 + (argmax ? kDrawSharedBytes : 0);
}

// gemm.cu: BM weight rows x BN tokens per CTA, K consumed BK = 32 at a time; both tiles f32 in
// shared memory, padded by 4 floats a row (keeps 16-byte alignment, spreads banks), or by 8 for
// the tensor cores (a pitch of 8 mod 32 floats: a fragment's 32 loads hit 32 banks).
inline constexpr int kGemmBk = 32;
constexpr int GemmPad(bool mma) { return mma ? 8 : 4; }
constexpr int GemmSmemBytes(int bm, int bn, bool mma) {
  return kGemmBk * ((bm + GemmPad(mma)) + (bn + GemmPad(mma))) * 4;
}

// gemm_f16.cu (the K-quants and q8_0): per 256 columns a CTA copies its BM rows' raw quant
// bytes into shared memory (the block bodies, plus for the types with a scale tail the 16-byte
// chunk of the tail holding their d values), two such stages in flight; x goes in as f16, 32
// columns at a time (hi and lo tiles with JLLM_XSPLIT), double-buffered. A raw row's pitch is
// an odd number of 16-byte chunks, so the 8 rows a fragment reads (g = lane / 4) start in 8
// different groups of 4 banks.
// Halves per token row of the x tile: 32 + 8, so ldmatrix's 8 rows fall on distinct banks.
inline constexpr int kGemmF16XPitch = 40;
constexpr bool GemmF16Supported(int type) {
  return type == layout::kQ4_K || type == layout::kQ5_K || type == layout::kQ6_K || type == layout::kQ8_0;
}
// Blocks, and bytes of their bodies, per 256 elements of a row.
constexpr int GemmRawBlocks(int type) { return 256 / layout::BlockElems(type); }
constexpr int GemmRawBodyBytes(int type) { return GemmRawBlocks(type) * layout::BodyBytes(type); }
constexpr int GemmRawBodyChunks(int type) { return GemmRawBodyBytes(type) / 16; }
constexpr int GemmRawChunks(int type) {
  return GemmRawBodyChunks(type) + (layout::HasScaleTail(type) ? 1 : 0);
}
constexpr int GemmRawPitch(int type) { return 16 * (GemmRawChunks(type) | 1); }
// x_parts: 1, or 2 with x split into hi and lo f16 tiles; mats: 1, or 2 for a SwiGLU pair.
constexpr int GemmF16SmemBytes(int type, int bm, int bn, int x_parts, int mats) {
  return 2 * mats * bm * GemmRawPitch(type) + 2 * x_parts * bn * kGemmF16XPitch * 2;
}

// attention_decode.cu: one CTA per (kv head, split); partials of [D] acc + max + sum per head.
constexpr int AttentionPartialFloats(int head_dim) { return head_dim + 2; }

// attention_rows.cu: each lane of a warp scores one cache row of a 32-position tile and a row's
// 8-element pieces are spread over D / 8 lanes for V, so D / 8 must divide 32; the CTA's warps
// merge their (max, sum, acc) in shared memory: q [G][D], then [NW][G][D] acc + [NW][G] x 2.
constexpr bool AttentionRowsSupported(int head_dim) {
  return head_dim % 8 == 0 && head_dim / 8 <= 32 && 32 % (head_dim / 8) == 0;
}
constexpr int AttentionRowsSmemBytes(int g, int head_dim, int warps) {
  return (g * head_dim + warps * g * (head_dim + 2)) * 4;
}
inline constexpr int kAttnRowsSmemMax = 40 * 1024;  // static shared memory, under 48 KiB
// attention_mma.cu (f16 caches): the G heads are the rows of an m16n8k16 MMA whose upper 8 rows
// stay zero, and a lane's fragments cover D / 4 contiguous dimensions of a K row (D 64 or 128).
constexpr bool AttentionMmaSupported(int g, int head_dim) { return g <= 8 && (head_dim == 64 || head_dim == 128); }
// Its static shared memory — the warps' [NW][G][D] acc, [NW][G] max and sum, the merge's [G][NSPLIT]
// weights and sums, [G] inverse sums and a ticket, the newest position's f16 k and v rows with
// JLLM_FUSED_HEAD (else 16 bytes each: no zero-size arrays) — and with JLLM_RING a dynamic ring
// of RING tiles (16 positions of K and V) per warp, the whole within what one CTA may take on
// the GPU (lowering_target.h).
constexpr int AttentionMmaStaticSmemBytes(int g, int head_dim, int warps, int splits, bool fused_head) {
  return 4 * (warps * g * head_dim + 2 * warps * g + 2 * g * splits + g + 1) + 2 * (fused_head ? 2 * head_dim : 16);
}
constexpr int AttentionMmaTileBytes(int head_dim) { return 2 * 16 * head_dim * 2; }
constexpr int AttentionMmaRingBytes(int head_dim, int warps, int ring) {
  return warps * ring * AttentionMmaTileBytes(head_dim);
}

// attention_prefill.cu: the CTA's query rows (QT tokens x G heads) plus a K and a V tile of
// 32 positions, all f32, K/V rows padded by one float (conflict-free column reads).
inline constexpr int kAttnKeyTile = 32;
constexpr int AttentionPrefillSmemBytes(int query_rows, int head_dim) {
  return (query_rows * head_dim + 2 * kAttnKeyTile * (head_dim + 1)) * 4;
}

// sample.cu: CTAs of this many threads; greedy sampling without penalties scans the row with
// kSampleCtas of them (each its slice, the last to finish takes the best of their keys), every
// other draw with the first alone. Its scratch: the stamps' buffer holds kSampleStampsExtra
// words past the vocabulary (the CTAs' ticket), the weights' one CTA key per double.
inline constexpr int kSampleThreads = 1024;
inline constexpr int kSampleCtas = 16;
inline constexpr int kSampleStampsExtra = 1;
// The greedy draw's ticket (sample.cu's CTAs, or the logits GEMV's with JLLM_ARGMAX: only one
// of them runs in a step) is the stamps' word past the vocabulary.
constexpr long long SampleTicketWord(long long vocab) { return vocab; }

}  // namespace jllm::cuda::geometry
