// The CUDA backend's kernel variants that the tests run besides the defaults: the switches of
// backends/cuda/lowering (docs/PERF.md), each with the op cases it changes. One list for the
// emulated and the GPU op tests (tests/cuda/op_variants.h) and the NVRTC compile test.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace jllm::testing {

// Which op-table cases a variant changes.
enum class VariantCases {
  kGemv,        // the decode GEMV: one-token matmuls and groups, logits
  kGemvGroups,  // the same, the matmul groups only
  kGemvNorm,    // the same, those with an RMSNorm prologue only
  kGemvPairs,   // the same, those that read a q4_K or q6_K matrix only
  kPrefill,     // the prefill GEMM: matmuls of more than one token
  kAttention,   // decode attention: the attention cases
  kAttentionF16,  // the same, f16 caches only: attention_mma.cu's switches (other caches run
                  // attention_rows.cu, whose own variants cover its split and warp knobs)
  kGemvHead,    // the QKV GEMV with the head ops in its tail: the QKV + head ops + attention cases
};

struct OpVariant {
  std::string name;                                       // test-name prefix, e.g. "registers_r1"
  std::vector<std::pair<std::string, std::string>> env;  // the switches, read at lowering
  VariantCases cases;
};

// The defaults (two rows per item through a ring of three shared-memory slots per warp — bulk
// copies on sm_90 and in the emulation —, equal step ranges per warp, the prefill GEMM on the
// tensor cores) are the tests' plain runs. Here: the GEMV with its steps in registers, one row
// per item and whole items dealt round-robin (the default through stop 16, and the kernel
// without shared memory); for the groups, two slots with three rows per item and every matrix
// split in two along K (a slot holds several rows, a warp's stream crosses splits and members),
// the ring filled by 16-byte cp.async (the path before sm_90), and equal step ranges with
// registers; the normed GEMVs with the RMS scale applied to x as it is staged, after a pass
// that sums x² (the default through stop 17), and with gamma loaded after the grid wait (the
// default loads it before, since stop 23; pairs with a K split load each CTA's columns); q4_K and
// q6_K as unit pairs (8 lanes a row, x
// per pair; the default on GEMVs of >= 4 MiB, which no op case reaches, so forced here) on the
// ring, in registers with every matrix split in two along K and int8 x, and on the cp.async ring
// with whole items round-robin; ring slots of several unit steps (JLLM_GEMV_CHUNK: chunks cut at
// item ends and at the ends of a warp's range, a slot holding gate's and up's rows, by bulk
// copies and by cp.async, and for pairs with every matrix split in two); the groups with the
// most warps and rows the knobs allow (the GEMV's largest static arrays); the prefill GEMM on f32 FMAs with 64-token tiles (the tile
// through stop 17), on the tf32 tensor cores for every type (the default through stop 18; the
// default now reads the K-quants and q8_0 as raw quant tiles on the f16 tensor cores, gemm_f16.cu,
// 128 rows a CTA with x as hi and lo), and gemm_f16.cu with 64 x 32 tiles, x as hi only and a
// SwiGLU's gate and up of one type as one pair (two types stay two GEMMs). Decode attention:
// the default runs attention_mma.cu on the f16 cases and attention_rows.cu on the others; the
// variants run attention_decode.cu (tiles staged in shared memory, the kernel through stop 19)
// and attention_rows.cu on every case, each also with chunks of one position (a split per
// position, up to the H200's splits, which the emulated GPU's 4 SMs would not take: the
// cross-split merge, and warps without a tile), and attention_rows.cu and
// attention_mma.cu with one warp for a whole chunk (its online softmax across tiles), and
// attention_mma.cu with its first tile loaded after the grid dependency (the default loads it
// before, the newest row after; the default through stop 22), and attention_mma.cu with its
// tiles through a shared-memory ring (JLLM_ATTN_RING): one or two warps a chunk so that a warp's
// tiles wrap around the ring and the newest position lies in a tile issued before the grid
// wait (its pieces copied after it), the ring after the wait, and a split per position; and
// with L2 prefetches of the tiles ahead (JLLM_ATTN_AHEAD: one warp a chunk, so that they land
// past the chunk's end; and after the grid wait), and with its trace stamps; with the warps'
// tiles grabbed from a counter (JLLM_ATTN_DYNAMIC; the emulation runs a launch's CTAs in turn,
// so the first CTA grabs all that the static grabs leave): one split (the warps stride over the
// grabs), one warp a CTA and three splits (tiles grabbed at 64 positions; after the grid wait),
// grabs of three tiles on two splits (the second static grab ends past the sequence), and two
// warps a CTA with a split per position (splits without a grab: empty partials); with S's hi and
// lo MMAs in one chain (JLLM_ATTN_SCORE_CHAINS=1, the default through stop 41; 2 since), alone and
// with the head ops fused; with the next kernel let launch once the tiles are streamed, and
// (with the head ops) once q is staged (JLLM_ATTN_DEPENDENTS=2, 1). attention_mma.cu's
// variants run on the f16 cases only (the other caches run attention_rows.cu). The splits' merge
// with the first batch of accs loaded with the maxima (JLLM_ATTN_MERGE_FIRST), for each kernel
// with a split per position (up to 32 splits: two batches of 16 on the two-pair kernels), and
// attention_mma.cu's also with the ticket behind one fence (JLLM_ATTN_MERGE_ONE_FENCE). The QKV
// GEMV with the head ops in its tail (JLLM_GEMV_HEAD): with the default knobs (items cut between
// warps), with every matrix split in two along K and 3-row items (items across two heads, the
// last split's warp transforms), as pairs dealt round-robin, and in registers on two warps.
// The RMS scale computed at each warp's first result (JLLM_GEMV_LAZY_SCALE), on the normed cases
// and for pairs on two warps (items cut between warps: the cut item's finisher computes it too).
// The ring's chunks held back until x's loads are out (JLLM_GEMV_EARLY_SLOTS): none before the
// grid wait, on the bulk ring and for pairs and f32 x (no quantized pass: first thing after the
// wait); one before it on a cp.async ring of 4 with every matrix split in two along K.
// The ring filled by a bulk copy a row (JLLM_GEMV_TMA=0, the default before stop 28) on a ring
// of 4, and by tensor-map copies, one a matrix a slot (JLLM_GEMV_TMA, the default since): in the
// traced build (its body reads the arguments in place: the map is where the launch put it),
// with one ring chunk before the grid wait, with every matrix split in two along K (a split's
// short last step: its box reads on into the next split's bytes), as pairs on two warps, and
// with the head ops in the QKV tail and no ring chunk before the grid wait.
// CTA ranges of equal bytes for groups of several types (JLLM_GEMV_WEIGHTED): alone, with every
// matrix split in three along K as pairs (ranges that start inside a later split), and with the
// head ops in the QKV tail.
// CTA ranges inside one member each (JLLM_GEMV_ALIGNED): on the full grid, on 3 CTAs (one a
// member of a triple) as pairs, on 2 (fewer CTAs than members: equal item counts instead), and
// with the head ops in the QKV tail.
// x staged only in the slots of the types a CTA reads (JLLM_GEMV_SLOT_SKIP): on the full grid,
// with every matrix split in three along K as pairs (ranges across splits read a slot in one
// split and not in the next), inside one member each on 3 CTAs with f32 x (f32 and bf16 slots),
// on one CTA (every slot), and with the head ops in the QKV tail.
// Quantized x staged by 1, 2 or 4 lanes a run of 16 (JLLM_GEMV_X_LANES; 2 by default): one lane
// a run; two, as pairs on two warps (several passes, pair mates two lane groups apart); four with
// int8 x (one plane), with every matrix split in two along K
// (a CTA stages some splits' columns), on one warp (K's runs in many passes), and with f32 x
// (the K-quants' run sums reduced across the four lanes).
// Every kernel built for the in-step trace (JLLM_TRACE: the body inside the trace's entry and
// exit stamps, a second argument) computing what it computes without.
inline std::vector<OpVariant> CudaKernelVariants() {
  return {
      {"registers_r1",
       {{"JLLM_GEMV_RING", "0"}, {"JLLM_GEMV_R", "1"}, {"JLLM_GEMV_MINB", "3"}, {"JLLM_GEMV_SPREAD", "0"}},
       VariantCases::kGemv},
      {"ring2_r3_split2", {{"JLLM_GEMV_RING", "2"}, {"JLLM_GEMV_R", "3"}, {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvGroups},
      {"cpasync_ring3", {{"JLLM_GEMV_RING", "3"}, {"JLLM_GEMV_BULK", "0"}}, VariantCases::kGemvGroups},
      {"registers_spread", {{"JLLM_GEMV_RING", "0"}}, VariantCases::kGemvGroups},
      {"chunk2_ring2_r3", {{"JLLM_GEMV_CHUNK", "2"}, {"JLLM_GEMV_RING", "2"}, {"JLLM_GEMV_R", "3"}},
       VariantCases::kGemvGroups},
      {"chunk3_cpasync_roundrobin",
       {{"JLLM_GEMV_CHUNK", "3"}, {"JLLM_GEMV_BULK", "0"}, {"JLLM_GEMV_SPREAD", "0"}},
       VariantCases::kGemv},
      {"chunk4_ring3", {{"JLLM_GEMV_CHUNK", "4"}, {"JLLM_GEMV_NW", "2"}}, VariantCases::kGemv},
      {"nw32_r8", {{"JLLM_GEMV_NW", "32"}, {"JLLM_GEMV_R", "8"}, {"JLLM_GEMV_MINB", "1"}}, VariantCases::kGemvGroups},
      {"early_norm", {{"JLLM_GEMV_LATE_NORM", "0"}}, VariantCases::kGemvNorm},
      {"gamma_late", {{"JLLM_GEMV_GAMMA_EARLY", "0"}}, VariantCases::kGemvNorm},
      {"lazy_scale", {{"JLLM_GEMV_LAZY_SCALE", "1"}}, VariantCases::kGemvNorm},
      {"lazy_scale_pairs_nw2",
       {{"JLLM_GEMV_LAZY_SCALE", "1"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvPairs},
      {"pairs_split2", {{"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvPairs},
      {"pairs", {{"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}}, VariantCases::kGemvPairs},
      {"pairs_chunk2_split2",
       {{"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_CHUNK", "2"}, {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvPairs},
      {"pairs_registers_split2_x8",
       {{"JLLM_GEMV_PAIRS", "3"},
        {"JLLM_GEMV_PAIRS_MIN_MIB", "0"},
        {"JLLM_GEMV_RING", "0"},
        {"JLLM_GEMV_KSPLIT", "2"},
        {"JLLM_GEMV_X", "i8"}},
       VariantCases::kGemvPairs},
      {"pairs_cpasync_roundrobin",
       {{"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_BULK", "0"}, {"JLLM_GEMV_SPREAD", "0"}},
       VariantCases::kGemvPairs},
      {"early_slots0", {{"JLLM_GEMV_EARLY_SLOTS", "0"}}, VariantCases::kGemvGroups},
      {"early_slots1_ring4_cpasync_split2",
       {{"JLLM_GEMV_EARLY_SLOTS", "1"}, {"JLLM_GEMV_RING", "4"}, {"JLLM_GEMV_BULK", "0"}, {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvGroups},
      {"early_slots0_xf32", {{"JLLM_GEMV_EARLY_SLOTS", "0"}, {"JLLM_GEMV_X", "f32"}}, VariantCases::kGemv},
      {"pairs_early_slots0", {{"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_EARLY_SLOTS", "0"}},
       VariantCases::kGemvPairs},
      {"tma0_ring4", {{"JLLM_GEMV_TMA", "0"}, {"JLLM_GEMV_RING", "4"}}, VariantCases::kGemvGroups},
      // Fewer chunks in flight than the ring holds once the stream runs (the start fills more).
      {"ahead1_ring4_cpasync_split2",
       {{"JLLM_GEMV_AHEAD", "1"}, {"JLLM_GEMV_RING", "4"}, {"JLLM_GEMV_BULK", "0"}, {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvGroups},
      {"ahead1_chunk2_ring4_r3",
       {{"JLLM_GEMV_AHEAD", "1"}, {"JLLM_GEMV_CHUNK", "2"}, {"JLLM_GEMV_RING", "4"}, {"JLLM_GEMV_R", "3"}},
       VariantCases::kGemvGroups},
      {"tma_ring5_early2_ahead2",
       {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_RING", "5"}, {"JLLM_GEMV_EARLY_SLOTS", "2"}, {"JLLM_GEMV_AHEAD", "2"}},
       VariantCases::kGemvGroups},
      {"tma_pairs_ring5_ahead2_nw2",
       {{"JLLM_GEMV_TMA", "1"},
        {"JLLM_GEMV_PAIRS", "3"},
        {"JLLM_GEMV_PAIRS_MIN_MIB", "0"},
        {"JLLM_GEMV_RING", "5"},
        {"JLLM_GEMV_EARLY_SLOTS", "2"},
        {"JLLM_GEMV_AHEAD", "2"},
        {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvPairs},
      // Ring chunks past the early ones asked of L2 before the grid wait (tensor maps).
      {"tma_l2early2_early0",
       {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_EARLY_SLOTS", "0"}, {"JLLM_GEMV_L2_EARLY", "2"}},
       VariantCases::kGemvGroups},
      {"tma_pairs_l2early3_ring4_early1_nw2",
       {{"JLLM_GEMV_TMA", "1"},
        {"JLLM_GEMV_PAIRS", "3"},
        {"JLLM_GEMV_PAIRS_MIN_MIB", "0"},
        {"JLLM_GEMV_RING", "4"},
        {"JLLM_GEMV_EARLY_SLOTS", "1"},
        {"JLLM_GEMV_L2_EARLY", "3"},
        {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvPairs},
      // The scale tails' lines (q8_0, q6_K) asked into L1 as each ring chunk is issued.
      {"tail_prefetch", {{"JLLM_GEMV_TAIL_PREFETCH", "1"}}, VariantCases::kGemvGroups},
      {"tail_prefetch_pairs_chunk2_split2",
       {{"JLLM_GEMV_TAIL_PREFETCH", "1"},
        {"JLLM_GEMV_PAIRS", "3"},
        {"JLLM_GEMV_PAIRS_MIN_MIB", "0"},
        {"JLLM_GEMV_CHUNK", "2"},
        {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvPairs},
      // The d values of a warp's next step loaded during this step's dots (q8_0, q6_K); 3 CTAs at
      // most, so that each warp walks many steps (the emulated cases are small).
      {"d_ahead_grid3", {{"JLLM_GEMV_D_AHEAD", "1"}, {"JLLM_GEMV_GRID", "3"}}, VariantCases::kGemv},
      {"d_ahead_pairs_tail_prefetch_chunk2_split2",
       {{"JLLM_GEMV_D_AHEAD", "1"},
        {"JLLM_GEMV_TAIL_PREFETCH", "1"},
        {"JLLM_GEMV_PAIRS", "3"},
        {"JLLM_GEMV_PAIRS_MIN_MIB", "0"},
        {"JLLM_GEMV_CHUNK", "2"},
        {"JLLM_GEMV_KSPLIT", "2"}},
       VariantCases::kGemvPairs},
      {"d_ahead_cpasync_roundrobin_xf32",
       {{"JLLM_GEMV_D_AHEAD", "1"}, {"JLLM_GEMV_BULK", "0"}, {"JLLM_GEMV_SPREAD", "0"}, {"JLLM_GEMV_X", "f32"}},
       VariantCases::kGemv},
      {"tma_traced", {{"JLLM_GEMV_TMA", "1"}, {"JLLM_TRACE", "1"}}, VariantCases::kGemvGroups},
      {"tma_early_slots1", {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_EARLY_SLOTS", "1"}}, VariantCases::kGemvGroups},
      {"tma_split2", {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_KSPLIT", "2"}}, VariantCases::kGemvGroups},
      {"tma_pairs_nw2",
       {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvPairs},
      {"tma_head_early_slots0", {{"JLLM_GEMV_TMA", "1"}, {"JLLM_GEMV_HEAD", "1"}, {"JLLM_GEMV_EARLY_SLOTS", "0"}},
       VariantCases::kGemvHead},
      {"x_lanes1", {{"JLLM_GEMV_X_LANES", "1"}}, VariantCases::kGemvGroups},
      {"x_lanes2_pairs_nw2",
       {{"JLLM_GEMV_X_LANES", "2"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvPairs},
      {"x_lanes4_x8", {{"JLLM_GEMV_X_LANES", "4"}, {"JLLM_GEMV_X", "i8"}}, VariantCases::kGemvGroups},
      {"x_lanes4_split2_pairs",
       {{"JLLM_GEMV_X_LANES", "4"}, {"JLLM_GEMV_KSPLIT", "2"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}},
       VariantCases::kGemvGroups},
      {"x_lanes4_nw1", {{"JLLM_GEMV_X_LANES", "4"}, {"JLLM_GEMV_NW", "1"}}, VariantCases::kGemvNorm},
      {"x_lanes4_xf32", {{"JLLM_GEMV_X_LANES", "4"}, {"JLLM_GEMV_X", "f32"}}, VariantCases::kGemvGroups},
      {"weighted", {{"JLLM_GEMV_WEIGHTED", "1"}}, VariantCases::kGemvGroups},
      {"weighted_split3_pairs",
       {{"JLLM_GEMV_WEIGHTED", "1"}, {"JLLM_GEMV_KSPLIT", "3"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}},
       VariantCases::kGemvGroups},
      {"weighted_head", {{"JLLM_GEMV_WEIGHTED", "1"}, {"JLLM_GEMV_HEAD", "1"}}, VariantCases::kGemvHead},
      {"aligned", {{"JLLM_GEMV_ALIGNED", "1"}}, VariantCases::kGemvGroups},
      {"aligned_grid3_pairs",
       {{"JLLM_GEMV_ALIGNED", "1"}, {"JLLM_GEMV_GRID", "3"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}},
       VariantCases::kGemvGroups},
      {"aligned_grid2", {{"JLLM_GEMV_ALIGNED", "1"}, {"JLLM_GEMV_GRID", "2"}}, VariantCases::kGemvGroups},
      {"aligned_head", {{"JLLM_GEMV_ALIGNED", "1"}, {"JLLM_GEMV_HEAD", "1"}}, VariantCases::kGemvHead},
      {"slot_skip", {{"JLLM_GEMV_SLOT_SKIP", "1"}}, VariantCases::kGemvGroups},
      {"slot_skip_split3_pairs",
       {{"JLLM_GEMV_SLOT_SKIP", "1"}, {"JLLM_GEMV_KSPLIT", "3"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}},
       VariantCases::kGemvGroups},
      {"slot_skip_aligned_grid3_xf32",
       {{"JLLM_GEMV_SLOT_SKIP", "1"}, {"JLLM_GEMV_ALIGNED", "1"}, {"JLLM_GEMV_GRID", "3"}, {"JLLM_GEMV_X", "f32"}},
       VariantCases::kGemvGroups},
      {"slot_skip_grid1", {{"JLLM_GEMV_SLOT_SKIP", "1"}, {"JLLM_GEMV_GRID", "1"}}, VariantCases::kGemvGroups},
      {"slot_skip_head", {{"JLLM_GEMV_SLOT_SKIP", "1"}, {"JLLM_GEMV_HEAD", "1"}}, VariantCases::kGemvHead},
      {"traced", {{"JLLM_TRACE", "1"}}, VariantCases::kGemvGroups},
      {"gemv_head", {{"JLLM_GEMV_HEAD", "1"}}, VariantCases::kGemvHead},
      {"gemv_head_split2_r3_ring2",
       {{"JLLM_GEMV_HEAD", "1"}, {"JLLM_GEMV_KSPLIT", "2"}, {"JLLM_GEMV_R", "3"}, {"JLLM_GEMV_RING", "2"}},
       VariantCases::kGemvHead},
      {"gemv_head_pairs_roundrobin",
       {{"JLLM_GEMV_HEAD", "1"}, {"JLLM_GEMV_PAIRS", "3"}, {"JLLM_GEMV_PAIRS_MIN_MIB", "0"}, {"JLLM_GEMV_SPREAD", "0"}},
       VariantCases::kGemvHead},
      {"gemv_head_registers_nw2", {{"JLLM_GEMV_HEAD", "1"}, {"JLLM_GEMV_RING", "0"}, {"JLLM_GEMV_NW", "2"}},
       VariantCases::kGemvHead},
      {"gemm_fma_bn64", {{"JLLM_GEMM_MMA", "0"}, {"JLLM_GEMM_BN", "64"}}, VariantCases::kPrefill},
      {"gemm_tf32", {{"JLLM_GEMM_MMA", "1"}}, VariantCases::kPrefill},
      {"gemm_f16_bm64_bn32_x1_pair",
       {{"JLLM_GEMM_MMA", "2"},
        {"JLLM_GEMM_BM", "64"},
        {"JLLM_GEMM_BN", "32"},
        {"JLLM_GEMM_XSPLIT", "0"},
        {"JLLM_GEMM_PAIR", "1"}},
       VariantCases::kPrefill},
      {"attention_tiles", {{"JLLM_ATTN_KERNEL", "1"}}, VariantCases::kAttention},
      {"attention_tiles_chunk1",
       {{"JLLM_ATTN_KERNEL", "1"}, {"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "32"}},
       VariantCases::kAttention},
      {"attention_rows", {{"JLLM_ATTN_KERNEL", "2"}}, VariantCases::kAttention},
      {"attention_rows_chunk1",
       {{"JLLM_ATTN_KERNEL", "2"}, {"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "16"}},
       VariantCases::kAttention},
      {"attention_rows_nw1", {{"JLLM_ATTN_KERNEL", "2"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_MINCHUNK", "256"}},
       VariantCases::kAttention},
      {"attention_mma_chunk1", {{"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "16"}}, VariantCases::kAttentionF16},
      {"attention_mma_nw1", {{"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_MINCHUNK", "256"}}, VariantCases::kAttentionF16},
      {"attention_mma_late", {{"JLLM_ATTN_EARLY", "0"}}, VariantCases::kAttentionF16},
      {"attention_mma_head_ops_apart", {{"JLLM_ATTN_FUSE_HEAD", "0"}}, VariantCases::kGemvHead},
      {"attention_mma_head_ops_late_nw1",
       {{"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_EARLY", "0"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_MINCHUNK", "1"},
        {"JLLM_ATTN_SPLITS", "2"}},
       VariantCases::kGemvHead},
      {"attention_mma_score_chains1", {{"JLLM_ATTN_SCORE_CHAINS", "1"}}, VariantCases::kAttentionF16},
      {"attention_mma_head_ops_score_chains1", {{"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_SCORE_CHAINS", "1"}},
       VariantCases::kGemvHead},
      {"attention_mma_dependents2", {{"JLLM_ATTN_DEPENDENTS", "2"}}, VariantCases::kAttentionF16},
      {"attention_mma_head_ops_dependents1", {{"JLLM_ATTN_FUSE_HEAD", "1"}, {"JLLM_ATTN_DEPENDENTS", "1"}},
       VariantCases::kGemvHead},
      {"attention_mma_ring2_nw1", {{"JLLM_ATTN_RING", "2"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_MINCHUNK", "256"}},
       VariantCases::kAttentionF16},
      {"attention_mma_ring3_nw2", {{"JLLM_ATTN_RING", "3"}, {"JLLM_ATTN_NW", "2"}, {"JLLM_ATTN_MINCHUNK", "256"}},
       VariantCases::kAttentionF16},
      {"attention_mma_ring3_late", {{"JLLM_ATTN_RING", "3"}, {"JLLM_ATTN_EARLY", "0"}}, VariantCases::kAttentionF16},
      {"attention_mma_ring2_chunk1",
       {{"JLLM_ATTN_RING", "2"}, {"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "16"}},
       VariantCases::kAttentionF16},
      {"attention_mma_ahead2_nw1", {{"JLLM_ATTN_AHEAD", "2"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_MINCHUNK", "256"}},
       VariantCases::kAttentionF16},
      {"attention_mma_ahead1_late", {{"JLLM_ATTN_AHEAD", "1"}, {"JLLM_ATTN_EARLY", "0"}}, VariantCases::kAttentionF16},
      {"attention_mma_traced", {{"JLLM_TRACE", "1"}}, VariantCases::kAttention},
      {"attention_mma_dynamic1", {{"JLLM_ATTN_DYNAMIC", "1"}}, VariantCases::kAttentionF16},
      {"attention_mma_dynamic1_nw1_split3_late",
       {{"JLLM_ATTN_DYNAMIC", "1"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_SPLITS", "3"}, {"JLLM_ATTN_MINCHUNK", "1"},
        {"JLLM_ATTN_EARLY", "0"}},
       VariantCases::kAttentionF16},
      {"attention_mma_dynamic3_nw1_split2",
       {{"JLLM_ATTN_DYNAMIC", "3"}, {"JLLM_ATTN_NW", "1"}, {"JLLM_ATTN_SPLITS", "2"}, {"JLLM_ATTN_MINCHUNK", "1"}},
       VariantCases::kAttentionF16},
      {"attention_mma_dynamic2_chunk1",
       {{"JLLM_ATTN_DYNAMIC", "2"}, {"JLLM_ATTN_NW", "2"}, {"JLLM_ATTN_SPLITS", "32"}, {"JLLM_ATTN_MINCHUNK", "1"}},
       VariantCases::kAttentionF16},
      {"attention_merge_first",
       {{"JLLM_ATTN_MERGE_FIRST", "1"}, {"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "32"}},
       VariantCases::kAttention},
      {"attention_merge_one_fence",
       {{"JLLM_ATTN_MERGE_ONE_FENCE", "1"}, {"JLLM_ATTN_MINCHUNK", "1"}, {"JLLM_ATTN_SPLITS", "32"}},
       VariantCases::kAttention},
      {"attention_rows_merge_first",
       {{"JLLM_ATTN_KERNEL", "2"},
        {"JLLM_ATTN_MERGE_FIRST", "1"},
        {"JLLM_ATTN_MINCHUNK", "1"},
        {"JLLM_ATTN_SPLITS", "16"}},
       VariantCases::kAttention},
      {"attention_decode_merge_first",
       {{"JLLM_ATTN_KERNEL", "1"},
        {"JLLM_ATTN_MERGE_FIRST", "1"},
        {"JLLM_ATTN_MINCHUNK", "1"},
        {"JLLM_ATTN_SPLITS", "32"}},
       VariantCases::kAttention},
  };
}

// Sets environment variables for its lifetime, then unsets them (the tests' switches are never
// set outside such a scope).
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& env);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::string> names_;
};

}  // namespace jllm::testing
