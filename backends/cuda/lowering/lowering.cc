#include "backends/cuda/lowering/lowering.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/device_layout.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/verify.h"

namespace jllm::cuda {
namespace {

namespace geo = geometry;
using ir::OpKind;

static_assert(layout::kF32 == static_cast<int>(GgmlType::kF32) &&
              layout::kF16 == static_cast<int>(GgmlType::kF16) &&
              layout::kBF16 == static_cast<int>(GgmlType::kBF16) &&
              layout::kQ8_0 == static_cast<int>(GgmlType::kQ8_0) &&
              layout::kQ4_K == static_cast<int>(GgmlType::kQ4_K) &&
              layout::kQ5_K == static_cast<int>(GgmlType::kQ5_K) &&
              layout::kQ6_K == static_cast<int>(GgmlType::kQ6_K),
              "device_layout.h's type ids are ggml's");
static_assert(static_cast<int>(ir::KvDType::kF16) == 0 && static_cast<int>(ir::KvDType::kInt8) == 1 &&
                  static_cast<int>(ir::KvDType::kF32) == 2,
              "kv_cache.cuh's element type ids are ir's KvDType");

// Tuning heuristics: what a GEMV shape gets where the plan's tuning table (tuning.h, measured by
// jllm-compile --tune) does not name it, and every other kernel's choices. Each can be
// overridden for A/B measurements by an environment variable read wherever the graph is lowered
// (the CUDA backend at load; jllm-compile for --arch CUBINs, which match only the same values):
// JLLM_GEMV_R, JLLM_GEMV_NW, JLLM_GEMV_DEPTH, JLLM_GEMV_MINB, JLLM_GEMV_ITEMS, JLLM_GEMV_KSPLIT,
// JLLM_GEMV_X (lowering.h), JLLM_GEMV_RING (0 = registers), JLLM_GEMV_CHUNK, JLLM_GEMV_EARLY_SLOTS, JLLM_GEMV_AHEAD, JLLM_GEMV_L2_EARLY, JLLM_GEMV_TAIL_PREFETCH, JLLM_GEMV_DEEP_RING_MIN_MIB, JLLM_GEMV_BULK, JLLM_GEMV_TMA, JLLM_GEMV_WEIGHTED,
// JLLM_GEMV_SPREAD, JLLM_GEMV_LATE_NORM, JLLM_GEMV_LAZY_SCALE, JLLM_GEMV_X_LANES, JLLM_GEMV_PAIRS, JLLM_GEMV_PAIRS_MIN_MIB;
// JLLM_GEMM_MMA, JLLM_PREFETCH (lowering.h), JLLM_GEMM_BN, JLLM_GEMM_BM, JLLM_GEMM_XSPLIT,
// JLLM_GEMM_MINB, JLLM_GEMM_PAIR; JLLM_ATTN_SPLITS, JLLM_ATTN_MINCHUNK, JLLM_ATTN_NW, JLLM_ATTN_RING,
// JLLM_ATTN_AHEAD, JLLM_ATTN_DYNAMIC, JLLM_ATTN_SCORE_CHAINS, JLLM_ATTN_DEPENDENTS, JLLM_ATTN_MERGE_FIRST,
// JLLM_ATTN_MERGE_ONE_FENCE (decode attention);
// JLLM_LOGITS_NORM. A value
// that cannot be used is ignored with a warning.
// GEMV (docs/PERF.md, "GEMV v3", "int16 activations", "shared-memory ring"): two rows (or the
// same rows of gate and up) per warp item, their 16-byte steps staged through a ring of RING
// shared-memory slots per warp (bulk copies on sm_90, cp.async before), registers capped for
// MINB CTAs of NW warps per SM, x as int16, each warp an equal range of steps (an item cut at a
// warp boundary summed across warps in a fixed order). Measured on the H200: ncu finds the
// kernel bound by issue and by its RMSNorm prologue, not by bytes in flight; the ring frees the
// registers that x reuse across two rows needs, which then pays (R 2 without it loses). K is
// split only until every warp of the target's SMs (8-warp CTAs, kGemvWarps) has ITEMS/10 items — with int16 x
// a split's ticket costs more than the imbalance it removes, so only matrices with fewer row
// groups than half the warps are split. RING 0 (DEPTH steps ahead in registers) with R 1 and
// MINB 3 was the default through stop 16.
constexpr int kGemvRows = 2;
constexpr int kGemvWarps = 8;
// The feed-forward GEMVs (gate+up with the SwiGLU, and the down projection reading its output)
// take 16 warps in one CTA an SM instead of 8 in two: measured on the H200 (stop 21, tg128) 14b
// +5.0 %, 0.6b +1.3 %, 4b ±0; on every GEMV 4b lost 1.9 % (its attention projections: -3.8 %).
constexpr int kGemvFfnWarps = 16, kGemvFfnMinBlocks = 1;
constexpr int kGemvDepth = 2;  // steps ahead in registers (RING 0)
constexpr int kGemvMinBlocks = 2;
constexpr int kGemvItemsPerWarpX10 = 5;
constexpr int kGemvMaxSplit = 8;
constexpr int kGemvActivationPlanes = 2;  // int16 x (GemvActivationPlanes, lowering.h)
constexpr int kGemvLazyScale = 0;  // the RMS scale before the first dot (JLLM_GEMV_LAZY_SCALE=1: at the first result)
constexpr int kGemvRing = 3;    // slots of a shared-memory ring per warp (0: steps ahead in registers)
// A deeper ring on the GEMVs of at least kGemvDeepRingMinMib of weights (with GemvBySize; stop 39,
// H100 tg128, docs/PERF.md "The size rule for the ring of 4"): 14b's gate+up and downs +1.1 %,
// 4b's and 0.6b's logits alone +1.2 % / ±0, while on every 4b GEMV the ring of 4 lost 3.8 % (H200,
// stop 38): its extra chunk lands beside x's staging, which a long stream amortizes and a short
// one pays. 40 MiB lies between 4b's gate+up (27 MiB) and 14b's q4_K down (48). The logits GEMV
// takes it only up to kGemvDeepLogitsMaxK columns: 4b's (K 2,560) +1.2 %, 0.6b's (1,024) ±0,
// 14b's (5,120) −0.33 % (three pairs in one call, each within 0.05 t/s); why 4b's gains is open.
constexpr int kGemvDeepRing = 4;
constexpr int kGemvDeepRingMinMib = 40;
constexpr int kGemvDeepLogitsMaxK = 4096;
// Ring chunks a warp issues before its grid wait, at most RING - 1 (the rest go out once its loads
// of x are issued): two, measured best with rings of 3 (one: -4.9 %, stop 30) and 4 (three: -4 %,
// stop 28; two: the size rule's gain).
constexpr int kGemvEarlySlots = 2;
// Ring chunks past the early ones that a warp asks of L2 before its grid wait, with tensor maps
// (gemv.cu L2_EARLY): 0 until measured (JLLM_GEMV_L2_EARLY).
constexpr int kGemvL2Early = 0;
// The ring chunks' scale-tail lines asked into L1 as the chunks are issued (gemv.cu TAIL_PREFETCH;
// JLLM_GEMV_TAIL_PREFETCH; stop 39, H100 tg128): on GEMVs with a q8_0 member (4b with every matrix
// q8_0 +4.4 %: its d every 32 weights was a round trip inside every step's dots), not on q6_K's
// alone (4b Q4_K_M −2.0 %: one d every 256 weights stays in L1; the prefetches cost issue).
constexpr int kGemvTailPrefetchQ8 = 1;
constexpr int kGemvTailPrefetch = 0;
// The d values of a warp's next unit step loaded into registers during this step's dots (gemv.cu
// D_AHEAD; JLLM_GEMV_D_AHEAD; rows with a scale tail, ring GEMVs; stop 40, H100 tg128): on GEMVs
// with a q8_0 member (4b with every matrix q8_0 +8.6 %: its d every 32 weights, an L1 hit, was
// still a load inside every dot's chain), not on q6_K's alone (4b Q4_K_M −1.5 %: its pairs' one d
// a pair was no chain to remove; the loads ahead cost registers and issue).
constexpr int kGemvDAheadQ8 = 1;
constexpr int kGemvDAhead = 0;
constexpr int kGemvBulk = 1;    // the ring filled by bulk copies on sm_90 (0: cp.async everywhere)
// The ring's bulk copies through each matrix's tensor map, one copy a matrix a slot from one
// lane (1, the default since stop 28: H100 tg128 4b +3.5 % / +4.0 %, 0.6b +1.9 % / +0.9 % in two
// visits; docs/PERF.md "One copy a matrix a slot"), or a copy a row issued lane by lane (0).
constexpr int kGemvTma = 1;
// Unit steps a ring slot holds, each row's bytes of them one copy (gemv.cu, JLLM_CHUNK): 1 until
// measured (stop 25 built it without a GPU; docs/PERF.md, "Fewer, larger bulk copies").
constexpr int kGemvChunk = 1;
constexpr int kGemvSpread = 1;  // 1: warps take equal step ranges (0: whole items round-robin)
// CTA ranges of equal weight bytes where a group's members differ in type (1: the QKV triple with a
// q6_K V), or of equal item counts (0, the default until measured; JLLM_GEMV_WEIGHTED).
constexpr int kGemvWeighted = 0;
// CTA ranges inside one member each in groups of several members without a K split (1: gemv.cu
// ALIGNED, the CTAs shared among the members by bytes — no CTA straddles two members, whose rings
// restart at the boundary) or across members (0, the default until measured; JLLM_GEMV_ALIGNED).
constexpr int kGemvAligned = 0;
// x staged only in the slots of the member types a CTA's items read, in groups of several types
// (1: gemv.cu SLOT_SKIP — the mixed QKV's q4_K CTAs skip the q6_K V's runs, its V CTAs the pairs)
// or in every slot (0, the default until measured; JLLM_GEMV_SLOT_SKIP).
constexpr int kGemvSlotSkip = 0;
// 1 (the default since stop 18: tg128 +8 % on 0.6b, 4b and 14b, docs/PERF.md): a normed GEMV
// without a K split stages x·gamma while it sums x² and scales its results (one pass over x, one
// barrier less); 0: the sum of squares first, then x scaled as it is staged.
constexpr int kGemvLateNorm = 1;
// 1 (the default since stop 23: H200 tg128 0.6b +1.0 %, 4b +0.3–0.5 %, 14b +0.3–0.4 %;
// docs/PERF.md): a normed GEMV loads the gamma of its quantized-x pass before its grid wait
// (gamma is a weight; after a step's weights went through L2 it comes from HBM, and otherwise
// that round trip follows the wait beside x's); 0: with x.
constexpr int kGemvGammaEarly = 1;
// Lanes a run of 16 columns of quantized x is staged by (gemv.cu, JLLM_XLANES): 2, the default
// since stop 33 — one lane a run left most warps idle at the barrier after staging (0.6b's K 1,024
// is 64 runs, two of 8 warps) —. Measured on the H100 (tg128): lanes by K (4 where K's runs fit
// one pass, else 2, or 1 past two) against 1 lane 0.6b +2.5 %, 4b +2.0 %; then 2 everywhere
// against that 4b +0.9 %, 14b +0.5 %, 0.6b ±0; 4 on every GEMV lost 6 % on 14b: each pass pays
// the runs' shuffles and stores again (docs/PERF.md, "x staged by several lanes a run").
constexpr int kGemvXLanes = 2;
// A mask of the K-quants read as unit pairs, 8 lanes a row (launch_geometry.h; quantized x only):
// 1 q4_K, 2 q6_K, 3 both; one scale decode per 64 elements and exact steps at every Qwen3 width
// (docs/PERF.md, "q4_K sub-block pairs"); 0: 16-byte units, 32 lanes a row. Measured on the
// H200 (stop 18): 4b tg128 +12 %, 14b +7 %, 0.6b -3 % (whose GEMVs but the logits are < 4 MiB).
constexpr int kGemvPairs = 3;
constexpr int kGemvPairsMinMib = 4;
// The size rule (GemvBySize; measured on the H100 at stop 28, tg128, two visits each, with the
// tensor-map ring): 16 warps on every 4b GEMV +1.6…+1.9 % (0.6b −0.7 %), ITEMS 10 on every 0.6b
// GEMV +4.0 % (4b −4 %): so 16 warps from kGemvWideMinMib of weights up, ITEMS 10 below it.
constexpr int kGemvBySize = 1;
constexpr int kGemvWideMinMib = 4;
constexpr int kGemvSmallItemsPerWarpX10 = 10;
// The QKV GEMV runs the next node's q/k norm + RoPE + KV append in its tail (1: gemv.cu HEAD, one
// kernel a layer fewer — a per-head ticket, and the warp that completes a head transforms it) or
// head_ops runs after it (0, the default until measured; JLLM_GEMV_HEAD; docs/PERF.md).
constexpr int kGemvHead = 0;
// The step's first GEMV stages the token's embedding row itself (1: gemv.cu EMBED — dequantized
// from the table as embed.cu does, CTA 0 writing the residual stream's first value — one launch
// and one boundary a step fewer) or embed.cu runs before it (0, the default until measured;
// JLLM_GEMV_EMBED; docs/PERF.md).
constexpr int kGemvEmbed = 0;
// Prefill GEMM tiles: BN 128 tokens per CTA since stop 18 (pp512 on the H200: 4b +30 %, 14b +19 %,
// 0.6b +8 % over 64: each weight tile is dequantized for twice the tokens; 32 loses 40-50 %).
constexpr int kGemmBm = 128, kGemmBn = 128, kGemmTm = 8, kGemmTn = 4;
// Prefill GEMM: 2, the default since stop 19, the K-quants and q8_0 through gemm_f16.cu (raw
// quant tiles by cp.async, f16 mma.sync; pp512 on the H200 4b 3,069 -> 7,271, 14b 851 -> 2,720,
// 0.6b 11,714 -> 28,579; docs/PERF.md), other types as 1; 1 tf32 mma.sync from dequantized tiles
// (gemm.cu; the default through stop 18); 0 f32 FMAs.
constexpr int kGemmMma = 2;
// gemm_f16.cu's weight rows per CTA (16 per warp): 64 or 128 (128: pp512 on the H200 4b +24 %,
// 14b +21 % over 64). x split into hi and lo f16 (1) or f16 only (0: 4b +25 % faster, but 14b's
// --validate 5.2e-3, over the bound; gemm_f16.cu says why); split only for the matrices adding a
// residual (2) or only for the others (3): 4b +15 % / +7 %, 14b's --validate 4.85e-3 / 4.39e-3,
// too close to the bound to be the default. Without JLLM_GEMM_BN its tokens per
// CTA are 128 where a chunk of kGemmFillTokens fills two CTAs an SM of the target with them, else 64 (more
// CTAs for the narrow matrices: 4b +11 %, 14b +5 %, 0.6b +33 % over 128 everywhere).
constexpr int kGemmF16Bm = 128;
constexpr int kGemmXSplit = 1;
// A SwiGLU group's gate and up in one gemm_f16.cu launch with the SwiGLU in its epilogue (1), two
// GEMMs and an elementwise kernel (0), or the pair where its grid at a chunk of kGemmFillTokens
// (tiles of 64 tokens) fills two CTAs an SM (2, the default). Measured on the H200 (stop 20,
// pp512): 4b +6.6 %, 14b +5.0 %, 0.6b -5.9 % (its pair grid: 192 CTAs) — the rule keeps 0.6b apart.
constexpr int kGemmPair = 2;
constexpr int kGemmPairBn = 64;  // tokens per pair tile at most: two accumulators in 128 registers
constexpr int kGemmFillTokens = 512, kGemmFillCtasPerSm = 2;  // CTAs an SM of the target
// JLLM_GEMM_MINB caps gemm_f16.cu's registers for that many CTAs per SM (default 2 of 8 warps,
// 128 registers a thread). 3 for 64-token tiles (80 registers, where shared memory holds 3)
// measured slower on the H200 (stop 19: pp512 4b -13 %, 0.6b -17 %, 14b -4 %; docs/PERF.md).
// Decode head_ops and attention prefetch the next GEMVs' weights into L2 (1) or not (0, the
// default: measured slower on the H200, 4b tg128 -4 %, 14b -6 %, 4b @ d8192 -3 %; docs/PERF.md);
// 2, attention alone its successor's from the end of its stream (H100 4b tg128 -1.2 %, stop 30).
constexpr int kPrefetch = 0;
// Decode attention: attention_mma.cu (3, the default since stop 21: attention_rows.cu's schedule
// with both products on the f16 tensor cores, for f16 caches with G <= 8 and head_dim 64 or 128;
// elsewhere 2; H200 tg128 4b +2.1 %, 0.6b +5.0 %, 4b @ d8192 +11.5 %, docs/PERF.md),
// attention_rows.cu (2, where head_dim / 8 divides 32: every warp on its own tiles, K and V rows
// straight into registers) or attention_decode.cu (1: the CTA's tiles staged in shared memory;
// the kernel through stop 19, and the one with FUSED_HEAD).
constexpr int kAttnKernel = 3;
// attention_mma.cu loads a warp's first K/V tile before its grid dependency (1, the default since
// stop 23: the cache's first round trip overlaps head_ops, the newest position's row, which
// head_ops appends, after it; H200 4b tg128 +2.2 %, @ d8192 ±0; docs/PERF.md) or after it (0).
// JLLM_ATTN_EARLY.
constexpr int kAttnEarly = 1;
// attention_mma.cu streams the cache through a per-warp shared-memory ring of this many tiles
// (JLLM_ATTN_RING; 0: one tile at a time in registers), fewer where the CTA's shared memory
// would pass the GPU's (below 2: registers).
constexpr int kAttnRing = 0;
// attention_mma.cu's register tiles ask L2 for the tile this many steps ahead of a warp's current
// one (JLLM_ATTN_AHEAD; 0: none). Only without a ring.
constexpr int kAttnAhead = 0;
// attention_mma.cu's S = Q · K^T in this many dependent MMA chains a product (JLLM_ATTN_SCORE_CHAINS;
// 2, the default since stop 42: q's hi and lo halves into accumulators of their own, half the
// chain's latency — H100 4b tg128 +0.15 %, @ d8192 +0.3 %, docs/PERF.md; 1: one).
constexpr int kAttnScoreChains = 2;
// Where attention_mma.cu's working CTAs let the next kernel launch (JLLM_ATTN_DEPENDENTS): 0 after
// the grid wait (the default), 1 once q is staged, 2 once the tiles are streamed; 1 and 2 only
// with the first tile early (JLLM_ATTN_EARLY=1) and no ring.
constexpr int kAttnDependents = 0;
// attention_mma.cu's warps take the sequence in grabs of this many tiles from a counter per kv
// head (JLLM_ATTN_DYNAMIC; 0: fixed chunks per split). Only on the register tiles, without AHEAD.
constexpr int kAttnDynamic = 0;
// The last CTA of a kv head loads the first splits' partial accs with their (max, sum)s, in one
// round trip of L2 (1), or after them (0); attention_merge.cuh. JLLM_ATTN_MERGE_FIRST.
constexpr int kAttnMergeFirst = 0;
// The splits' ticket behind one fence of one thread (1) or a fence of every thread (0);
// attention_merge.cuh. JLLM_ATTN_MERGE_ONE_FENCE.
constexpr int kAttnMergeOneFence = 0;
constexpr int kAttnSplits = 32;  // at most; 2 CTAs an SM of the target (attention_decode.cu)
constexpr int kAttnMinChunk = 64;  // positions: fewer, fuller splits at short context
constexpr int kAttnDecodeWarps = 4;
// attention_rows.cu: 8 warps, one CTA an SM (registers), so 16 splits of the 8 kv heads of
// Qwen3 fill ~one wave of the H200; a split is at least one tile per warp. At most 16, and no
// more than one wave of the target takes (the Orin Nano's 8 SMs: one split, no merge).
constexpr int kAttnRowsSplits = 16;
constexpr int kAttnRowsWarps = 8;
constexpr int kAttnPrefillWarps = 8;
constexpr int kAttnPrefillRows = 32;  // query rows (tokens x heads of a group) per CTA
constexpr int kHeadOpsWarps = 1;  // one head per CTA: the heads spread over SMs
// Decode attention runs the layer's q/k norm + RoPE + KV append itself (1, the default since stop
// 32: attention_mma.cu, FUSED_HEAD, one kernel a layer fewer, its RoPE angles before the grid
// wait; H100 tg128 0.6b +4.1 %, 4b +1.4 %, 4b @ d8192 +1.3 %; docs/PERF.md — attention_decode.cu
// too, with JLLM_ATTN_KERNEL=1, where it measured slower at stop 20) or after a head_ops launch
// (0; also where attention_mma.cu cannot: a ring, grabs, int8 caches, n_rot not a multiple of 64).
constexpr int kAttnFuseHead = 1;
// The decode step's logits GEMV runs the final RMSNorm as its prologue (1, the default since stop
// 34: one launch a step fewer, the rms_norm that took ~10 µs of the 4b step's critical path; H100
// tg128 4b +1.4 %, 0.6b +0.7 %; docs/PERF.md) or after an rms_norm launch (0). Prefill keeps the
// rms_norm launch (its GEMM and last-row GEMV read the normed rows). JLLM_LOGITS_NORM.
constexpr int kLogitsNorm = 1;
// A greedy decode step without penalties draws in the logits GEMV's epilogue (1, the default:
// the sampler's launch and its pass over the row gone; docs/PERF.md, stop 35) or in the sampler
// after it (0). The lowering gives the logits node both decode GEMVs; the backend picks by the
// step's sampler settings. JLLM_GREEDY_LOGITS.
constexpr int kGreedyLogits = 1;
constexpr int kEltThreads = 256;

// Says on stderr, once per variable, that a tuning variable's value is not used and why.
void WarnIgnored(const char* name, const char* value, const std::string& wanted, int64_t fallback) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(name).second) return;
  std::fprintf(stderr, "jllm: %s=%s is not %s; using %lld\n", name, value, wanted.c_str(),
               static_cast<long long>(fallback));
}

// The value of environment variable `name` if it is an integer that `allowed` takes, else
// `fallback` (with a warning saying what was `wanted` when the variable is set to something else).
template <class Allowed>
int64_t EnvOverride(const char* name, int64_t fallback, Allowed allowed, const std::string& wanted) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  int64_t out = 0;
  if (absl::SimpleAtoi(v, &out) && allowed(out)) return out;
  WarnIgnored(name, v, wanted, fallback);
  return fallback;
}

// An integer in [min, max] (default: any positive) from environment variable `name`.
int64_t TuningOverride(const char* name, int64_t fallback, int64_t min = 1,
                       int64_t max = std::numeric_limits<int64_t>::max()) {
  return EnvOverride(name, fallback, [&](int64_t v) { return v >= min && v <= max; },
                     max == std::numeric_limits<int64_t>::max() ? absl::StrCat("an integer >= ", min)
                                                                : absl::StrCat("an integer in ", min, "..", max));
}

// A GEMV knob's value from its environment variable (the A/B switch).
int64_t KnobOverride(const GemvKnob& knob, int64_t fallback) {
  return EnvOverride(std::string(knob.env).c_str(), fallback, [&](int64_t v) { return knob.Allows(v); },
                     absl::StrCat("an integer ", knob.Range()));
}

}  // namespace

int GemvActivationPlanes() {
  const char* v = std::getenv("JLLM_GEMV_X");
  if (v == nullptr || *v == '\0') return kGemvActivationPlanes;
  const std::string_view s(v);
  if (s == "f32") return 0;
  if (s == "i8") return 1;
  if (s == "i16") return 2;
  WarnIgnored("JLLM_GEMV_X", v, "f32, i8 or i16 (planes 0, 1, 2)", kGemvActivationPlanes);
  return kGemvActivationPlanes;
}

int GemmMode() { return static_cast<int>(TuningOverride("JLLM_GEMM_MMA", kGemmMma, /*min=*/0, /*max=*/2)); }
bool GemmTensorCores() { return GemmMode() != 0; }

int AttentionKernel() { return static_cast<int>(TuningOverride("JLLM_ATTN_KERNEL", kAttnKernel, /*min=*/1, /*max=*/3)); }

int PrefetchMode() { return static_cast<int>(TuningOverride("JLLM_PREFETCH", kPrefetch, /*min=*/0, /*max=*/2)); }
bool GreedyLogits() { return TuningOverride("JLLM_GREEDY_LOGITS", kGreedyLogits, /*min=*/0, /*max=*/1) != 0; }

int SampleCtas() {
  return static_cast<int>(TuningOverride("JLLM_SAMPLE_CTAS", geo::kSampleCtas, /*min=*/1, /*max=*/256));
}
int PrefetchForm() {
  const char* v = std::getenv("JLLM_PREFETCH_FORM");
  if (v == nullptr || *v == '\0') return kL2PrefetchBulk;
  const std::string_view s(v);
  if (s == "bulk") return kL2PrefetchBulk;
  if (s == "line") return kL2PrefetchLine;
  if (s == "evict-last") return kL2PrefetchLineEvictLast;
  if (s == "load256") return kL2PrefetchLoad256;
  WarnIgnored("JLLM_PREFETCH_FORM", v, "bulk, line, evict-last or load256", kL2PrefetchBulk);
  return kL2PrefetchBulk;
}
bool Prefetching() { return PrefetchMode() != 0; }
bool Tracing() { return TuningOverride("JLLM_TRACE", 0, /*min=*/0, /*max=*/1) != 0; }
bool GemvBySize() { return TuningOverride("JLLM_GEMV_BY_SIZE", kGemvBySize, /*min=*/0, /*max=*/1) != 0; }

bool UseTuning() { return TuningOverride("JLLM_TUNING", 1, /*min=*/0, /*max=*/1) != 0; }

namespace {

std::string D(std::string_view name, int64_t v) { return absl::StrCat(Sv(name), "=", v); }

int64_t KvElemBytes(ir::KvDType t) { return t == ir::KvDType::kF32 ? 4 : t == ir::KvDType::kF16 ? 2 : 1; }

class Lowerer {
 public:
  Lowerer(const ir::Graph& g, const TuningTable* tuning, const LoweringTarget& target)
      : g_(g), tuning_(tuning), target_(target) {}

  absl::StatusOr<LoweredGraph> Run() {
    out_.nodes.resize(g_.nodes.size());
    producer_ = g_.ProducerIndex();
    users_ = g_.Users();
    for (ir::ValueId v : g_.outputs) {
      if (g_.name_of(v) == ir::kLogitsOutput) out_.logits = v;
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      node_ = static_cast<int>(i);
      absl::Status st = LowerNode(g_.nodes[i], out_.nodes[i]);
      if (!st.ok()) {
        return absl::Status(st.code(), absl::StrCat("cuda: ", ir::DescribeNode(g_, node_), ": ",
                                                    st.message()));
      }
    }
    RETURN_IF_ERROR(CheckTuningShapes());
    if (Prefetching()) AssignPrefetches();
    if (out_.logits >= 0) {
      const int64_t vocab = Width(out_.logits);
      KernelSpec s = Base("sample.cu", "sample", absl::StrCat("sample vocab ", vocab),
                          {D("JLLM_VOCAB", vocab)}, geo::kSampleThreads);
      s.grid_x = SampleCtas();
      s.bytes_per_token = vocab * 4 * 4;  // a few passes over the row (from L2)
      out_.sample.kind = LaunchKind::kSample;
      out_.sample.spec = Add(std::move(s));
      out_.sample.ops = {Operand::Value(out_.logits, /*last=*/true)};
    }
    if (Tracing()) {  // each spec its tag (kernel_trace.h): its index + 1
      for (size_t i = 0; i < out_.specs.size(); ++i) {
        out_.specs[i].defines = absl::StrCat(out_.specs[i].defines, " ", D("JLLM_TRACE", static_cast<int64_t>(i) + 1));
      }
    }
    // What the choices above could not fit (a shape beyond any ring or tile they can shrink):
    // refused here, naming the kernel, rather than by the GPU at load.
    for (const KernelSpec& spec : out_.specs) {
      if (!Fits(spec.smem)) {
        return absl::UnimplementedError(absl::StrCat("cuda: kernel ", spec.label, " needs ", spec.smem,
                                                     " bytes of shared memory per CTA and up to ",
                                                     geo::kStaticSmemReserve, " static ones; this GPU allows ",
                                                     target_.smem_per_block));
      }
    }
    return std::move(out_);
  }

 private:
  // The latency-bound decode launches (head_ops, attention) each take the weights of the first
  // GEMV after them that no earlier one took, in step order: in a Qwen3 layer head_ops warms
  // L2 with the attention output projection and attention with gate and up, so those GEMVs
  // read from L2 what the DRAM fetched while attention ran (docs/PERF.md). Mode 2: attention
  // alone, the attention output projection after it.
  void AssignPrefetches() {
    const bool head_ops_too = PrefetchMode() == 1;
    const int form = PrefetchForm();
    std::vector<Launch*> waiting;
    for (NodeLowering& nl : out_.nodes) {
      for (Launch& l : nl.decode) {
        if ((head_ops_too && l.kind == LaunchKind::kHeadOps) || l.kind == LaunchKind::kAttentionDecode) {
          waiting.push_back(&l);
        } else if (l.kind == LaunchKind::kGemv && !waiting.empty()) {
          Launch& p = *waiting.front();
          waiting.erase(waiting.begin());
          for (int m = 0, k = 0; m < 3 && k < 2; ++m) {
            const Operand& w = l.ops[slot::kGemvW0 + m];
            if (!w.present()) continue;
            p.prefetch[k] = w;
            p.prefetch_bytes[k++] = DeviceBytes(W(w.id));
          }
          // The form is the kernel's (jllm_prefetch_l2_share); bulk, the default, needs no define.
          std::string& defines = out_.specs[p.spec].defines;
          if (form != kL2PrefetchBulk && defines.find("JLLM_PREFETCH_FORM=") == std::string::npos) {
            absl::StrAppend(&defines, " JLLM_PREFETCH_FORM=", form);
          }
        }
      }
    }
  }

  // A table naming a shape this graph has no GEMV of was made for another model (or the key
  // is mistyped): an error listing the graph's shapes, rather than a tuning silently unused.
  absl::Status CheckTuningShapes() const {
    if (tuning_ == nullptr) return absl::OkStatus();
    for (const auto& [key, knobs] : tuning_->gemv) {
      if (used_keys_.count(key) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tuning: GEMV shape '", key, "' is not one of this graph's (", absl::StrJoin(used_keys_, "; "),
            "): the table was made for another model or pass configuration; tune again (jllm-compile --tune)"));
      }
    }
    return absl::OkStatus();
  }

  int64_t Width(ir::ValueId v) const { return g_.type_of(v).shape.dims.back(); }
  const ir::WeightRef& W(ir::WeightId w) const { return g_.weights[w]; }
  int64_t DeviceBytes(const ir::WeightRef& w) const {
    return w.dim(1) * layout::RowStride(static_cast<int>(w.type), w.dim(0));
  }

  static KernelSpec Base(std::string source, std::string kernel, std::string label,
                         const std::vector<std::string>& defines, int64_t threads) {
    KernelSpec s;
    s.label = std::move(label);
    s.source = std::move(source);
    s.kernel = std::move(kernel);
    s.defines = absl::StrJoin(defines, " ");
    s.threads = threads;
    return s;
  }

  int32_t Add(KernelSpec spec) {
    for (size_t i = 0; i < out_.specs.size(); ++i) {
      if (out_.specs[i] == spec) return static_cast<int32_t>(i);
    }
    out_.specs.push_back(std::move(spec));
    return static_cast<int32_t>(out_.specs.size() - 1);
  }

  absl::Status CheckMatrix(const ir::WeightRef& w) const {
    const int type = static_cast<int>(w.type);
    if (!layout::IsSupported(type)) {
      return absl::UnimplementedError(absl::StrCat("weight '", w.name, "' has type ",
                                                   Sv(GgmlTypeName(w.type)),
                                                   ", which the CUDA backend cannot read"));
    }
    if (w.dim(0) % 256 != 0 || w.ne.size() != 2) {
      return absl::UnimplementedError(absl::StrCat(
          "weight '", w.name, "': the CUDA matmul kernels need 2-D weights whose rows are a "
          "multiple of 256 elements (this one has ne[0] = ", w.dim(0), ")"));
    }
    return absl::OkStatus();
  }

  // ---- matmuls ----------------------------------------------------------------------------

  // `head`: the qk_norm_rope_kv_append node to run in the GEMV's tail (FusableHeadIntoGemv), or null.
  Launch Gemv(const std::vector<ir::WeightId>& members, Operand x, Operand gamma, Operand residual,
              const std::vector<Operand>& ys, float eps, bool swiglu, bool ffn = false,
              const ir::Node* head = nullptr, bool argmax = false, bool embed = false) {
    const int64_t k = W(members[0]).dim(0);
    const bool norm = gamma.present();
    // The GEMV knobs: the tuning table's values for this shape (tuning.h) where it has them,
    // else the heuristics below; an environment variable (JLLM_GEMV_*) overrides both, on every
    // GEMV or, with JLLM_GEMV_ONLY=text[,text...], on those whose key ("q4_K+q4_K+q6_K
    // 4096+1024+1024x2560 +norm") contains one of the texts: an A/B of some shapes.
    std::vector<std::string> shape_types;
    std::vector<int64_t> shape_rows;
    for (ir::WeightId id : members) {
      shape_types.emplace_back(GgmlTypeName(W(id).type));
      shape_rows.push_back(W(id).dim(1));
    }
    const std::string key = GemvShapeKey(shape_types, shape_rows, k, norm, residual.present(), swiglu);
    const char* only = std::getenv("JLLM_GEMV_ONLY");
    bool selected = only == nullptr || *only == '\0';
    for (absl::string_view text : absl::StrSplit(only == nullptr ? "" : only, ',', absl::SkipEmpty())) {
      selected = selected || absl::StrContains(key, text);
    }
    const GemvKnobValues* tuned = nullptr;
    if (tuning_ != nullptr) {
      if (auto it = tuning_->gemv.find(key); it != tuning_->gemv.end()) tuned = &it->second;
      used_keys_.insert(key);
    }
    auto knob = [&](std::string_view name, int64_t heuristic) {
      const GemvKnob* kn = FindGemvKnob(name);
      if (kn == nullptr) {  // a name below that tuning.cc's table lacks: a bug here, not bad input
        std::fprintf(stderr, "jllm: lowering asked for an unknown GEMV knob '%.*s'\n", static_cast<int>(name.size()),
                     name.data());
        std::abort();
      }
      int64_t value = heuristic;
      if (tuned != nullptr) {
        if (auto it = tuned->find(std::string(name)); it != tuned->end()) value = it->second;
      }
      return selected ? KnobOverride(*kn, value) : value;
    };
    std::vector<std::string> defs = {D("JLLM_K", k), D("JLLM_NM", static_cast<int64_t>(members.size()))};
    const int r = static_cast<int>(knob("r", kGemvRows));
    int64_t group_bytes = 0;
    for (ir::WeightId id : members) group_bytes += DeviceBytes(W(id));
    const bool by_size = GemvBySize();
    const bool wide = ffn || (by_size && group_bytes >= (int64_t{kGemvWideMinMib} << 20));  // 16 warps, one CTA
    const int nw = static_cast<int>(knob("nw", wide ? kGemvFfnWarps : kGemvWarps));
    const int x_planes = GemvActivationPlanes();
    // Pairs read quantized x only (their dots have no f32 form), and only in GEMVs of at least
    // kGemvPairsMinMib of weights: on smaller ones their longer x staging costs more than the
    // issue slots they save (0.6b's 2–4 MiB matrices, docs/PERF.md).
    const int64_t pairs_min = knob("pairs_min_mib", kGemvPairsMinMib) << 20;
    const int pairs = x_planes > 0 && group_bytes >= pairs_min
                          ? static_cast<int>(knob("pairs", kGemvPairs))
                          : 0;
    int64_t row_groups = 0, total_rows = 0, weight_bytes = 0, slots = 0;
    bool any_pairs = false;  // a member read as pairs (the label says so)
    int stage_bytes = 0;  // one step of R rows of each matrix an item reads (a ring slot holds CHUNK)
    int max_split = kGemvMaxSplit;
    for (size_t m = 0; m < members.size(); ++m) {
      const ir::WeightRef& w = W(members[m]);
      defs.push_back(D(absl::StrCat("JLLM_T", m), static_cast<int>(w.type)));
      defs.push_back(D(absl::StrCat("JLLM_N", m), w.dim(1)));
      const int type = static_cast<int>(w.type);
      any_pairs = any_pairs || geo::GemvPairUnits(type, pairs);
      if (!swiglu || m == 0) row_groups += geo::CeilDiv(w.dim(1), geo::GemvItemRows(type, pairs, r));
      bool new_type = true;
      for (size_t i = 0; i < m; ++i) new_type &= W(members[i]).type != w.type;
      if (new_type && (!swiglu || m == 0)) ++slots;
      if (!swiglu || m == 0) {
        stage_bytes = std::max(stage_bytes, geo::GemvStageBytes(type, pairs, r, swiglu ? 2 : 1, /*chunk=*/1));
      }
      // A split keeps at least one unit for every lane of a row.
      max_split = std::min<int>(
          max_split, std::max<int64_t>(1, k / 256 * geo::GemvUnits256(type, pairs) / geo::GemvLanesPerRow(type, pairs)));
      total_rows += w.dim(1);
      weight_bytes += DeviceBytes(w);
    }
    // The split aims at ITEMS/10 items a warp of kGemvWarps-warp CTAs, whatever this GEMV's CTA
    // shape: counted with the 16-warp CTAs of the feed-forward GEMVs it split 4b's downs in two,
    // which jllm-compile --tune measured 1.4 % slower each on the H200 (stop 23, docs/PERF.md).
    const int64_t items_x10 =
        by_size && group_bytes < (int64_t{kGemvWideMinMib} << 20) ? kGemvSmallItemsPerWarpX10 : kGemvItemsPerWarpX10;
    const int64_t want_items = int64_t{target_.sms} * kGemvWarps * knob("items", items_x10) / 10;
    int ksplit = static_cast<int>(std::clamp<int64_t>((want_items + row_groups - 1) / row_groups, 1, max_split));
    ksplit = static_cast<int>(std::clamp<int64_t>(knob("ksplit", ksplit), 1, k / 256));
    if (argmax) ksplit = 1;  // the draw reads each CTA's rows back in that CTA (gemv.cu, ARGMAX)
    defs.push_back(D("JLLM_R", r));
    defs.push_back(D("JLLM_NW", nw));
    defs.push_back(D("JLLM_KSPLIT", ksplit));
    defs.push_back(D("JLLM_DEPTH", knob("depth", kGemvDepth)));
    defs.push_back(D("JLLM_MINB", knob("minb", wide ? kGemvFfnMinBlocks : kGemvMinBlocks)));
    // The ring as deep as asked while the CTA fits the GPU's shared memory (sm_86/sm_89: 99 KiB;
    // 4b's gate+up ring of 3 takes 119), then its slots as long, else in registers.
    const bool logits = g_.nodes[node_].op == OpKind::kLogits;
    const bool deep = by_size && group_bytes >= knob("deep_ring_min_mib", kGemvDeepRingMinMib) << 20 &&
                      (!logits || k <= kGemvDeepLogitsMaxK);
    int ring = static_cast<int>(knob("ring", deep ? kGemvDeepRing : kGemvRing));
    int chunk = static_cast<int>(knob("chunk", kGemvChunk));
    auto gemv_smem = [&](int r, int c) {
      return geo::GemvSmemBytes(k, static_cast<int>(slots)) + geo::GemvRingBytes(stage_bytes * c, r, nw);
    };
    while (ring > 2 && !Fits(gemv_smem(ring, chunk))) --ring;
    while (ring > 0 && chunk > 1 && !Fits(gemv_smem(ring, chunk))) --chunk;
    if (ring > 0 && !Fits(gemv_smem(ring, chunk))) ring = 0;
    if (ring == 0) chunk = 1;  // (steps in registers)
    defs.push_back(D("JLLM_RING", ring));
    defs.push_back(D("JLLM_CHUNK", chunk));
    // Of the ring's RING - 1 chunks in flight: those issued before the grid wait (kGemvEarlySlots),
    // the rest once x's loads are out (JLLM_GEMV_EARLY_SLOTS; docs/PERF.md, "x's loads first"),
    // and those kept in flight once the stream runs (all of them), fewer leaving the other slots
    // to the start (JLLM_GEMV_AHEAD; "The ring's bytes in flight through x's staging": slower).
    const int ahead = ring > 0 ? static_cast<int>(std::min<int64_t>(knob("ahead", ring - 1), ring - 1)) : 0;
    if (ring > 0) {
      const int64_t early = knob("early_slots", std::min(kGemvEarlySlots, ring - 1));
      defs.push_back(D("JLLM_EARLY_SLOTS", std::min<int64_t>(early, ring - 1)));
      if (ahead < ring - 1) defs.push_back(D("JLLM_AHEAD", ahead));
    }
    const bool bulk = knob("bulk", kGemvBulk) != 0;
    defs.push_back(D("JLLM_BULK", bulk));
    // Tensor-map copies where the target has them and every member's boxes land aligned
    // (launch_geometry.h, GemvTileCopiesFit), with the ring's alignment slack.
    bool tma = knob("tma", kGemvTma) != 0 && ring > 0 && bulk && target_.tensor_copies &&
               Fits(gemv_smem(ring, chunk) + geo::kGemvTileAlign);
    for (size_t m = 0; m < members.size() && tma; ++m) {
      const int type = static_cast<int>(W(members[m]).type), step = geo::GemvStepBytes(type, pairs);
      tma = geo::GemvTileCopiesFit(stage_bytes * chunk, geo::GemvItemRows(type, pairs, r) * step, step, chunk);
    }
    defs.push_back(D("JLLM_TMA", tma));
    // The chunks after the early ones asked of L2 before the grid wait (tensor maps only; 0, the
    // default until measured; JLLM_GEMV_L2_EARLY; docs/PERF.md, "The ring's next chunks in L2").
    const int l2_early = tma ? static_cast<int>(knob("l2_early", kGemvL2Early)) : 0;
    if (l2_early > 0) defs.push_back(D("JLLM_L2_EARLY", l2_early));
    // The ring chunks' d lines asked into L1 as they are issued (rows with a scale tail; by
    // default where a member is q8_0, a d every 32 weights; JLLM_GEMV_TAIL_PREFETCH: 0 nowhere,
    // 1 also on q6_K's; docs/PERF.md, "Q8_0 and BF16 GEMVs inside the step").
    bool has_tail = false, has_q8_0 = false;
    for (ir::WeightId id : members) {
      has_tail |= layout::HasScaleTail(static_cast<int>(W(id).type));
      has_q8_0 |= static_cast<int>(W(id).type) == layout::kQ8_0;
    }
    const bool tail_prefetch =
        has_tail && ring > 0 && knob("tail_prefetch", has_q8_0 ? kGemvTailPrefetchQ8 : kGemvTailPrefetch) != 0;
    if (tail_prefetch) defs.push_back(D("JLLM_TAIL_PREFETCH", 1));
    const bool d_ahead = has_tail && ring > 0 && knob("d_ahead", has_q8_0 ? kGemvDAheadQ8 : kGemvDAhead) != 0;
    if (d_ahead) defs.push_back(D("JLLM_D_AHEAD", 1));
    defs.push_back(D("JLLM_SPREAD", knob("spread", kGemvSpread) != 0));
    bool mixed = false;  // members of several types, each its own item kind (not gate+up)
    for (size_t m = 1; m < members.size() && !swiglu; ++m) mixed |= W(members[m]).type != W(members[0]).type;
    const bool weighted = mixed && knob("weighted", kGemvWeighted) != 0;
    defs.push_back(D("JLLM_WEIGHTED", weighted));
    const bool aligned = members.size() > 1 && !swiglu && ksplit == 1 && knob("aligned", kGemvAligned) != 0;
    if (aligned) defs.push_back(D("JLLM_ALIGNED", 1));
    const bool slot_skip = slots > 1 && knob("slot_skip", kGemvSlotSkip) != 0;
    if (slot_skip) defs.push_back(D("JLLM_SLOT_SKIP", 1));
    const bool late_norm = knob("late_norm", kGemvLateNorm) != 0;
    defs.push_back(D("JLLM_LATE_NORM", late_norm));
    defs.push_back(D("JLLM_GAMMA_EARLY", knob("gamma_early", kGemvGammaEarly) != 0));
    defs.push_back(D("JLLM_LAZY_SCALE", knob("lazy_scale", kGemvLazyScale) != 0));
    defs.push_back(D("JLLM_XPLANES", x_planes));
    const int64_t x_lanes = knob("x_lanes", kGemvXLanes);
    defs.push_back(D("JLLM_XLANES", x_lanes));
    defs.push_back(D("JLLM_PAIRS", pairs));
    defs.push_back(D("JLLM_XSLOTS", slots));  // gemv.cu checks that it counts the same
    defs.push_back(D("JLLM_NORM", norm));
    defs.push_back(D("JLLM_RESIDUAL", residual.present()));
    defs.push_back(D("JLLM_SWIGLU", swiglu));
    if (argmax) defs.push_back(D("JLLM_ARGMAX", 1));
    // EMBED: x is the token's embedding row, which the quantized-x pass dequantizes 8 columns at
    // a time in the pass that also sums x² (LATE_NORM: no K split).
    bool all_quantized = x_planes > 0;  // every member reads quantized x (a block type)
    for (size_t m = 0; m < members.size() && all_quantized; ++m) {
      all_quantized = layout::BlockElems(static_cast<int>(W(members[m]).type)) > 1;
    }
    embed = embed && norm && late_norm && ksplit == 1 && all_quantized && 16 % (8 * x_lanes) == 0;
    if (embed) {
      const ir::WeightRef& table = W(embed_.table);
      defs.push_back(D("JLLM_EMBED", 1));
      defs.push_back(D("JLLM_EMBED_TYPE", static_cast<int>(table.type)));
      defs.push_back(D("JLLM_EMBED_V", table.dim(1)));
    }
    // JLLM_GEMV_X_PROBE=1, a timing probe with wrong results (never a tuning knob): staging as a
    // copy of x's int16 runs written by the producer (gemv.cu X_PROBE), to price that design
    // before it is built (docs/PERF.md, "Producer-side x, priced by a probe").
    const bool x_probe = x_planes == 2 && x_lanes <= 2 && all_quantized && !embed &&
                         TuningOverride("JLLM_GEMV_X_PROBE", 0, 0, 1) != 0;
    if (x_probe) defs.push_back(D("JLLM_X_PROBE", 1));
    const ir::QkNormRopeKvAppendAttrs* ha = head != nullptr ? &head->attrs_as<ir::QkNormRopeKvAppendAttrs>() : nullptr;
    if (ha != nullptr) {
      defs.push_back(D("JLLM_HEAD", 1));
      defs.push_back(D("JLLM_HEAD_D", ha->head_dim));
      defs.push_back(D("JLLM_NROT", ha->n_rot));
      defs.push_back(D("JLLM_KV", static_cast<int>(g_.kv_dtypes[ha->layer])));
    }
    KernelSpec s = Base("gemv.cu", "gemv",
                        absl::StrCat("gemv ", key, ksplit > 1 ? absl::StrCat(" split", ksplit) : "",
                                     x_planes == 1 ? " x:i8" : x_planes == 2 ? " x:i16" : "",
                                     ring > 0 ? absl::StrCat(" ring", ring) : "",
                                     ring > 0 && ahead < ring - 1 ? absl::StrCat(" ahead", ahead) : "",
                                     chunk > 1 ? absl::StrCat(" chunk", chunk) : "", tma ? " tma" : "",
                                     l2_early > 0 ? absl::StrCat(" l2e", l2_early) : "",
                                     tail_prefetch ? " tailpf" : "", d_ahead ? " d-ahead" : "",
                                     weighted ? " weighted" : "", aligned ? " aligned" : "",
                                     slot_skip ? " slot-skip" : "",
                                     any_pairs ? " pairs" : "",
                                     ha != nullptr ? " +head_ops" : "", argmax ? " +argmax" : "",
                                     embed ? " +embed" : "", x_probe ? " x-probe" : ""),
                        defs, 32 * nw);
    s.grid_x = row_groups * ksplit;  // at most one CTA an item
    // JLLM_GEMV_GRID=N: at most N CTAs (0, the default: as many as fit the SMs). Fewer than fit
    // leave each SM room for the next kernel's CTAs, which then fill their rings while this one
    // streams (programmatic dependent launch) instead of after its CTAs leave.
    if (const int64_t cap = knob("grid", 0); cap > 0) {
      s.grid_x = std::min(s.grid_x, cap);
    }
    s.persistent = true;
    s.min_grid_x = 1;  // CTAs never wait for each other
    // JLLM_GEMV_PER_SM=N: at most N CTAs an SM, the same kind of room on every SM (with NW 16 and
    // MINB 2, one CTA of 16 warps in half the registers: the next GEMV's CTA starts beside it).
    s.max_per_sm = knob("per_sm", 0);
    s.smem = gemv_smem(ring, chunk) + (tma ? geo::kGemvTileAlign : 0);
    s.weight_bytes = weight_bytes;
    const int64_t out_rows = swiglu ? W(members[0]).dim(1) : total_rows;
    s.bytes_per_token = (k + out_rows + (residual.present() ? out_rows : 0)) * 4;
    s.flops_per_token = 2 * total_rows * k;
    if (embed) s.bytes_per_token += layout::RowStride(static_cast<int>(W(embed_.table).type), k);  // + the row written
    if (ha != nullptr) {  // the head rows read back, q written, k and v appended
      s.bytes_per_token += (total_rows + ha->n_head * ha->head_dim) * 4 +
                           2 * ha->n_head_kv * ha->head_dim * KvElemBytes(g_.kv_dtypes[ha->layer]);
    }
    Launch l;
    l.kind = LaunchKind::kGemv;
    l.spec = Add(std::move(s));
    l.tune_key = key;
    l.ops.assign(slot::kGemvCount, Operand::None());
    l.ops[slot::kGemvX] = x;
    l.ops[slot::kGemvGamma] = gamma;
    l.ops[slot::kGemvResidual] = residual;
    for (size_t m = 0; m < members.size(); ++m) l.ops[slot::kGemvW0 + m] = Operand::Weight(members[m]);
    for (size_t m = 0; m < ys.size(); ++m) l.ops[slot::kGemvY0 + m] = ys[m];
    for (size_t m = 0; m < members.size() && tma; ++m) {
      const ir::WeightRef& w = W(members[m]);
      const int type = static_cast<int>(w.type), step = geo::GemvStepBytes(type, pairs);
      l.tile[m] = TileBox{nullptr, layout::TailOffset(type, k), w.dim(1), layout::RowStride(type, k), step,
                          geo::GemvItemRows(type, pairs, r)};
    }
    if (embed) {
      l.ops[slot::kGemvEmbedTokens] = embed_.tokens;
      l.ops[slot::kGemvEmbedPos] = embed_.pos;
      l.ops[slot::kGemvEmbedTable] = Operand::Weight(embed_.table);
      l.ops[slot::kGemvEmbedY] = x;
    }
    l.p0 = eps;
    if (ksplit > 1) {
      l.workspace_floats = ksplit * total_rows;
      l.workspace_counters = row_groups;
    }
    if (ha != nullptr) {
      l.ops[slot::kGemvHeadPos] = Operand::Value(head->inputs[3]);
      l.ops[slot::kGemvHeadQGamma] = Operand::Weight(head->weights[0]);
      l.ops[slot::kGemvHeadKGamma] = Operand::Weight(head->weights[1]);
      l.ops[slot::kGemvHeadYq] = Operand::Value(head->outputs[0]);
      l.ops[slot::kGemvHeadCache] = Operand::Cache(static_cast<int32_t>(ha->layer));
      l.p1 = ha->eps;
      l.p2 = ir::RopeThetaStep(ha->freq_base, ha->n_rot);
      l.p3 = ha->freq_scale;
      l.workspace_counters += ha->n_head + ha->n_head_kv;  // the head tickets, after the split ones
    }
    return l;
  }

  // The node after QKV group n if it is the q/k norm + RoPE + KV append of n's three outputs,
  // with every transform on (Qwen3) and a shape the GEMV's tail takes (whole heads, the rotation
  // in registers), and the fusion is on (JLLM_GEMV_HEAD, which takes them before decode attention
  // would: FusableHeadOps); else null. The GEMV still writes the raw q, k and v, so other readers of them see
  // what they would have.
  const ir::Node* FusableHeadIntoGemv(const ir::Node& n, const std::vector<ir::WeightId>& members) const {
    if (TuningOverride("JLLM_GEMV_HEAD", kGemvHead, /*min=*/0, /*max=*/1) == 0) return nullptr;
    if (node_ + 1 >= static_cast<int>(g_.nodes.size()) || members.size() != 3 || n.outputs.size() != 3) return nullptr;
    const ir::Node& h = g_.nodes[node_ + 1];
    if (h.op != OpKind::kQkNormRopeKvAppend || h.inputs.size() != 4) return nullptr;
    for (int i = 0; i < 3; ++i) {
      if (h.inputs[i] != n.outputs[i]) return nullptr;
    }
    const auto& a = h.attrs_as<ir::QkNormRopeKvAppendAttrs>();
    const int64_t d = a.head_dim;
    const bool shape_ok = d % 32 == 0 && d <= 512 && a.n_rot > 0 && a.n_rot <= d && (a.n_rot / 2) % 32 == 0 &&
                          W(members[0]).dim(1) == a.n_head * d && W(members[1]).dim(1) == a.n_head_kv * d &&
                          W(members[2]).dim(1) == a.n_head_kv * d;
    return shape_ok ? &h : nullptr;
  }

  // The prefill GEMM of one matrix: gemm.cu (f32 FMAs or tf32 MMAs, BM 128), or gemm_f16.cu
  // (JLLM_GEMM_MMA 2, K-quants and q8_0; BM from JLLM_GEMM_BM, 16 rows a warp). Tokens per CTA:
  // 32, 64 or 128 (gemm.cu's tiles are whole warps of 32 x 32 outputs, with the W tile's
  // 8-column groups a whole number per thread; gemm_f16.cu's x tile whole float4 per thread).
  // With `up` (GemmPairs), gemm_f16.cu's SwiGLU pair: y = silu(W x) · (W_up x), 64 tokens a tile
  // at most (the two matrices' accumulators in 128 registers).
  Launch Gemm(ir::WeightId wid, Operand x, Operand residual, Operand y,
              std::optional<ir::WeightId> up = std::nullopt) {
    const ir::WeightRef& w = W(wid);
    const int64_t k = w.dim(0), n = w.dim(1);
    const int type = static_cast<int>(w.type);
    const int mode = GemmMode();
    const bool f16 = mode == 2 && geo::GemmF16Supported(type);
    int bm = f16 ? GemmF16Bm() : kGemmBm;
    const int64_t fill_bn =
        f16 && (up || geo::CeilDiv(n, bm) * geo::CeilDiv(kGemmFillTokens, 128) < FillCtas()) ? 64 : kGemmBn;
    int bn = static_cast<int>(TuningOverride("JLLM_GEMM_BN", fill_bn, /*min=*/32, /*max=*/128));
    if (bn != 32 && bn != 64 && bn != 128) {  // 96 would leave gemm.cu's W tile uneven across threads
      WarnIgnored("JLLM_GEMM_BN", std::getenv("JLLM_GEMM_BN"), "32, 64 or 128", fill_bn);
      bn = static_cast<int>(fill_bn);
    }
    if (up && bn > kGemmPairBn) {
      WarnIgnored("JLLM_GEMM_BN", std::getenv("JLLM_GEMM_BN"), "at most 64 for a gate+up pair (JLLM_GEMM_PAIR)",
                  kGemmPairBn);
      bn = kGemmPairBn;
    }
    const std::string type_name(Sv(GgmlTypeName(w.type)));
    const std::string name =
        up ? absl::StrCat("gemm ", type_name, "+", type_name, " ", n, "+", n, "x", k, " +swiglu")
           : absl::StrCat("gemm ", type_name, " ", n, "x", k, residual.present() ? " +residual" : "");
    KernelSpec s;
    if (f16) {
      // 0 none, 1 every matrix, 2 those adding a residual (attention output, down), 3 the others.
      const int64_t xsplit = TuningOverride("JLLM_GEMM_XSPLIT", kGemmXSplit, /*min=*/0, /*max=*/3);
      const bool split = xsplit == 1 || (xsplit == 2 && residual.present()) || (xsplit == 3 && !residual.present());
      // Token tiles, then row tiles, narrowed until the CTA fits the GPU's shared memory (sm_86,
      // sm_89: the logits' q6_K tile of 128 tokens with x as hi + lo takes 100 KiB of their 99).
      auto f16_smem = [&](int b) { return geo::GemmF16SmemBytes(type, bm, b, split ? 2 : 1, up ? 2 : 1); };
      while (!Fits(f16_smem(bn)) && bn > 32) bn /= 2;
      if (!Fits(f16_smem(bn))) bm = 64;
      const int smem = f16_smem(bn);
      // CTAs per SM the registers are capped for: 2 of 8 warps (4 of 4), 128 registers a thread.
      const int auto_minb = 2 * (128 / bm);
      const int minb = static_cast<int>(TuningOverride("JLLM_GEMM_MINB", auto_minb, /*min=*/1, /*max=*/8));
      s = Base("gemm_f16.cu", "gemm_f16",
               absl::StrCat(name, split ? " f16x2" : " f16", bn != fill_bn ? absl::StrCat(" bn", bn) : "",
                            bm != kGemmF16Bm ? absl::StrCat(" bm", bm) : "",
                            minb != auto_minb ? absl::StrCat(" minb", minb) : ""),
               {D("JLLM_TYPE", type), D("JLLM_K", k), D("JLLM_N", n), D("JLLM_BM", bm), D("JLLM_BN", bn),
                D("JLLM_RESIDUAL", residual.present()), D("JLLM_XSPLIT", split), D("JLLM_PAIR", up.has_value()),
                D("JLLM_MINB", minb)},
               bm / 16 * 32);
      s.grid_x = geo::CeilDiv(n, bm);
      s.smem = smem;
    } else {
      const bool mma = mode != 0;
      while (bn > 32 && !Fits(geo::GemmSmemBytes(kGemmBm, bn, mma))) bn /= 2;
      const std::string tile = bn != kGemmBn ? absl::StrCat(" bn", bn) : "";
      s = Base("gemm.cu", "gemm", absl::StrCat(name, mma ? " mma" : "", tile),
               {D("JLLM_TYPE", type), D("JLLM_K", k), D("JLLM_N", n), D("JLLM_BM", kGemmBm), D("JLLM_BN", bn),
                D("JLLM_TM", kGemmTm), D("JLLM_TN", kGemmTn), D("JLLM_RESIDUAL", residual.present()),
                D("JLLM_MMA", mma)},
               (kGemmBm / kGemmTm) * (bn / kGemmTn));
      s.grid_x = geo::CeilDiv(n, kGemmBm);
      s.smem = geo::GemmSmemBytes(kGemmBm, bn, mma);
    }
    s.token_dim = 2;
    s.token_tile = bn;
    const int mats = up ? 2 : 1;
    s.weight_bytes = mats * DeviceBytes(w);
    s.bytes_per_token = (k + n + (residual.present() ? n : 0)) * 4;
    s.flops_per_token = mats * 2 * n * k;
    Launch l;
    l.kind = LaunchKind::kGemm;
    l.spec = Add(std::move(s));
    l.ops.assign(slot::kGemmCount, Operand::None());
    l.ops[slot::kGemmX] = x;
    l.ops[slot::kGemmResidual] = residual;
    l.ops[slot::kGemmW] = Operand::Weight(wid);
    l.ops[slot::kGemmY] = y;
    if (up) l.ops[slot::kGemmW2] = Operand::Weight(*up);
    return l;
  }

  // gemm_f16.cu's weight rows per CTA (JLLM_GEMM_BM).
  static int GemmF16Bm() {
    const int bm = static_cast<int>(TuningOverride("JLLM_GEMM_BM", kGemmF16Bm, /*min=*/64, /*max=*/128));
    if (bm == 64 || bm == 128) return bm;
    WarnIgnored("JLLM_GEMM_BM", std::getenv("JLLM_GEMM_BM"), "64 or 128", kGemmF16Bm);
    return kGemmF16Bm;
  }

  // Decode attention's splits of the sequence: enough for `per_sm` CTAs (one a split and kv head)
  // on every SM of the target, at most `most`.
  int64_t SplitsToFill(int64_t per_sm, int64_t n_head_kv, int64_t most) const {
    return std::clamp<int64_t>(geo::CeilDiv(per_sm * target_.sms, std::max<int64_t>(1, n_head_kv)), 1, most);
  }

  // The CTAs a prefill GEMM's grid should reach at a chunk of kGemmFillTokens to fill the target.
  int64_t FillCtas() const { return int64_t{kGemmFillCtasPerSm} * target_.sms; }

  // Whether a SwiGLU group's gate and up run as one gemm_f16.cu pair (JLLM_GEMM_PAIR).
  bool GemmPairs(ir::WeightId gate, ir::WeightId up) {
    const ir::WeightRef &g = W(gate), &u = W(up);
    const int64_t mode = TuningOverride("JLLM_GEMM_PAIR", kGemmPair, /*min=*/0, /*max=*/2);
    const bool fills = geo::CeilDiv(g.dim(1), GemmF16Bm()) * geo::CeilDiv(kGemmFillTokens, kGemmPairBn) >= FillCtas();
    return (mode == 1 || (mode == 2 && fills)) && GemmMode() == 2 && geo::GemmF16Supported(static_cast<int>(g.type)) &&
           g.type == u.type && g.dim(0) == u.dim(0) && g.dim(1) == u.dim(1);
  }

  Launch RmsNorm(Operand x, ir::WeightId gamma, Operand y, int64_t width, float eps) {
    KernelSpec s = Base("rms_norm.cu", "rms_norm", absl::StrCat("rms_norm ", width),
                        {D("JLLM_E", width)}, 256);
    s.token_dim = 1;
    s.bytes_per_token = 2 * width * 4;
    Launch l;
    l.kind = LaunchKind::kRmsNorm;
    l.spec = Add(std::move(s));
    l.ops = {x, Operand::Weight(gamma), y};
    l.p0 = eps;
    return l;
  }

  Launch Elementwise(int op, Operand a, Operand b, Operand y, int64_t width) {
    KernelSpec s = Base("elementwise.cu", "elementwise", op == 0 ? "add" : "swiglu",
                        {D("JLLM_OP", op)}, kEltThreads);
    s.grid_x = geo::CeilDiv(width, kEltThreads);
    s.token_dim = 1;
    s.bytes_per_token = 3 * width * 4;
    Launch l;
    l.kind = LaunchKind::kElementwise;
    l.spec = Add(std::move(s));
    l.ops = {a, b, y};
    l.width = width;
    return l;
  }

  absl::Status LowerMatMul(const ir::Node& n, NodeLowering& nl) {
    const ir::MatMulAttrs a = n.attrs_as<ir::MatMulAttrs>();
    const auto members_span = ir::MatMulMembers(n);
    const std::vector<ir::WeightId> members(members_span.begin(), members_span.end());
    for (ir::WeightId w : members) RETURN_IF_ERROR(CheckMatrix(W(w)));
    const std::optional<ir::WeightId> gamma_w = ir::MatMulNormWeight(n);
    const Operand x = Operand::Value(n.inputs[0]);
    const Operand gamma = gamma_w ? Operand::Weight(*gamma_w) : Operand::None();
    const Operand residual = a.residual ? Operand::Value(n.inputs[1]) : Operand::None();
    const float eps = a.norm_eps.value_or(0.0f);
    const int64_t k = Width(n.inputs[0]);
    std::vector<Operand> ys;
    for (ir::ValueId v : n.outputs) ys.push_back(Operand::Value(v));

    // Decode: one fused GEMV, unless SwiGLU's members differ in type (then two and a combine).
    // A feed-forward GEMV: the SwiGLU's, or one reading a SwiGLU's output (the down projection).
    const int producer = producer_[n.inputs[0]];
    const ir::Node* from = producer >= 0 ? &g_.nodes[producer] : nullptr;
    const bool ffn = a.swiglu || (from != nullptr && (from->op == OpKind::kMatMul || from->op == OpKind::kMatMulGroup) &&
                                  from->attrs_as<ir::MatMulAttrs>().swiglu);
    if (a.swiglu && W(members[0]).type != W(members[1]).type) {
      const int64_t f = W(members[0]).dim(1);
      nl.temp_widths = {f, f};
      nl.decode.push_back(Gemv({members[0]}, x, gamma, Operand::None(), {Operand::Temp(0)}, eps, false, ffn));
      nl.decode.push_back(Gemv({members[1]}, x, gamma, Operand::None(), {Operand::Temp(1)}, eps, false, ffn));
      nl.decode.push_back(Elementwise(1, Operand::Temp(0), Operand::Temp(1), ys[0], f));
    } else {
      const ir::Node* head = a.swiglu || a.residual ? nullptr : FusableHeadIntoGemv(n, members);
      const bool embed = embed_.node >= 0 && n.inputs[0] == embed_.out &&
                         TuningOverride("JLLM_GEMV_EMBED", kGemvEmbed, /*min=*/0, /*max=*/1) != 0;
      nl.decode.push_back(Gemv(members, x, gamma, residual, ys, eps, a.swiglu, ffn, head, false, embed));
      if (nl.decode.back().ops[slot::kGemvEmbedTable].present()) {  // the embed node's launch is this one
        out_.nodes[embed_.node].decode.clear();
        nl.extra_reads.push_back(embed_.tokens.id);
        if (embed_.pos.present()) nl.extra_reads.push_back(embed_.pos.id);
      }
      if (head != nullptr) {
        fused_head_node_ = node_ + 1;  // its decode launch is this one
        nl.early_outputs = {head->outputs[0]};
      }
    }

    // Prefill: the norm once into a temp, then one GEMM per member.
    const int base = static_cast<int>(nl.temp_widths.size());
    Operand px = x;
    if (gamma_w) {
      nl.temp_widths.push_back(k);
      px = Operand::Temp(base);
      nl.prefill.push_back(RmsNorm(x, *gamma_w, px, k, eps));
    }
    if (a.swiglu && GemmPairs(members[0], members[1])) {
      nl.prefill.push_back(Gemm(members[0], px, Operand::None(), ys[0], members[1]));
    } else if (a.swiglu) {
      const int64_t f = W(members[0]).dim(1);
      const int g = static_cast<int>(nl.temp_widths.size());
      nl.temp_widths.push_back(f);
      nl.temp_widths.push_back(f);
      nl.prefill.push_back(Gemm(members[0], px, Operand::None(), Operand::Temp(g)));
      nl.prefill.push_back(Gemm(members[1], px, Operand::None(), Operand::Temp(g + 1)));
      nl.prefill.push_back(Elementwise(1, Operand::Temp(g), Operand::Temp(g + 1), ys[0], f));
    } else {
      for (size_t m = 0; m < members.size(); ++m) {
        nl.prefill.push_back(Gemm(members[m], px, residual, ys[m]));
      }
    }
    return absl::OkStatus();
  }

  // Whether rms_norm node n is the decode logits GEMV's prologue (JLLM_LOGITS_NORM): its output
  // is read by one logits node alone and is not a graph output, so no decode kernel needs it.
  bool NormFoldedIntoLogits(const ir::Node& n) const {
    if (TuningOverride("JLLM_LOGITS_NORM", kLogitsNorm, /*min=*/0, /*max=*/1) == 0) return false;
    const ir::ValueId h = n.outputs[0];
    if (std::find(g_.outputs.begin(), g_.outputs.end(), h) != g_.outputs.end()) return false;
    const std::vector<int>& readers = users_[h];
    return readers.size() == 1 && g_.nodes[readers[0]].op == OpKind::kLogits && g_.nodes[readers[0]].inputs[0] == h;
  }

  absl::Status LowerLogits(const ir::Node& n, NodeLowering& nl) {
    const ir::WeightId w = n.weights[0];
    RETURN_IF_ERROR(CheckMatrix(W(w)));
    const Operand y = Operand::Value(n.outputs[0]);
    const int norm_node = producer_[n.inputs[0]];
    const bool folded =
        norm_node >= 0 && g_.nodes[norm_node].op == OpKind::kRmsNorm && NormFoldedIntoLogits(g_.nodes[norm_node]);
    auto decode_gemv = [&](bool argmax) {
      if (folded) {
        const ir::Node& norm = g_.nodes[norm_node];
        return Gemv({w}, Operand::Value(norm.inputs[0]), Operand::Weight(norm.weights[0]), Operand::None(), {y},
                    norm.attrs_as<ir::RmsNormAttrs>().eps, false, false, nullptr, argmax);
      }
      return Gemv({w}, Operand::Value(n.inputs[0]), Operand::None(), Operand::None(), {y}, 0, false, false, nullptr,
                  argmax);
    };
    nl.decode.push_back(decode_gemv(false));
    if (folded) nl.extra_reads = {g_.nodes[norm_node].inputs[0]};  // the residual stream, read here, not by the norm
    // The greedy step's: the same GEMV drawing the next token (the %logits output's node only).
    if (GreedyLogits() && n.outputs[0] == out_.logits) {
      out_.greedy_logits = decode_gemv(true);
      out_.greedy_node = node_;
    }
    nl.prefill.push_back(Gemv({w}, Operand::Value(n.inputs[0], /*last=*/true), Operand::None(),
                              Operand::None(), {y}, 0, false));
    nl.prefill_all_rows.push_back(Gemm(w, Operand::Value(n.inputs[0]), Operand::None(), y));
    return absl::OkStatus();
  }

  // ---- the rest ---------------------------------------------------------------------------

  absl::Status LowerEmbed(const ir::Node& n, NodeLowering& nl) {
    const ir::WeightRef& table = W(n.weights[0]);
    if (!layout::IsSupported(static_cast<int>(table.type)) || table.dim(0) % 8 != 0 ||
        (layout::BlockElems(static_cast<int>(table.type)) > 1 && table.dim(0) % 256 != 0)) {
      return absl::UnimplementedError(absl::StrCat("embedding table '", table.name, "' (",
                                                   Sv(GgmlTypeName(table.type)), ", rows of ",
                                                   table.dim(0), ") is not readable here"));
    }
    // Without %pos (a bare op graph) the context record the sampler reads is not kept.
    const std::optional<ir::ValueId> pos = g_.FindValue(ir::kPositionsInput);
    const int64_t e = table.dim(0);
    KernelSpec s = Base("embed.cu", "embed",
                        absl::StrCat("embed ", Sv(GgmlTypeName(table.type)), " ", e, "x", table.dim(1)),
                        {D("JLLM_TYPE", static_cast<int>(table.type)), D("JLLM_E", e),
                         D("JLLM_V", table.dim(1))},
                        256);
    s.token_dim = 1;
    s.bytes_per_token = layout::RowStride(static_cast<int>(table.type), e) + e * 4;
    Launch l;
    l.kind = LaunchKind::kEmbed;
    l.spec = Add(std::move(s));
    l.ops = {Operand::Value(n.inputs[0]), pos ? Operand::Value(*pos) : Operand::None(),
             Operand::Weight(n.weights[0]), Operand::Value(n.outputs[0])};
    // A single-token embedding the next GEMV may stage itself (JLLM_GEMV_EMBED, LowerMatMul).
    if (layout::BlockElems(static_cast<int>(table.type)) > 1) {
      embed_ = {node_, n.outputs[0], l.ops[slot::kEmbedTokens], l.ops[slot::kEmbedPos], n.weights[0]};
    }
    nl.decode.push_back(l);
    nl.prefill.push_back(l);
    return absl::OkStatus();
  }

  struct HeadPart {
    int64_t heads = 0;
    bool norm = false, rope = false;
  };
  Launch HeadOps(HeadPart q, HeadPart kv, int64_t head_dim, int64_t n_rot, ir::KvDType kv_type,
                 float eps, float freq_base, float freq_scale, std::vector<Operand> ops) {
    const std::string what = absl::StrCat(q.heads ? absl::StrCat("q", q.heads, q.norm ? "+norm" : "", q.rope ? "+rope" : "") : "",
                                          q.heads && kv.heads ? " " : "",
                                          kv.heads ? absl::StrCat("kv", kv.heads, kv.norm ? "+norm" : "", kv.rope ? "+rope" : "",
                                                                  " append ", Sv(ir::KvDTypeName(kv_type)))
                                                   : "");
    KernelSpec s = Base("head_ops.cu", "head_ops", absl::StrCat("head_ops ", what, " d", head_dim),
                        {D("JLLM_D", head_dim), D("JLLM_NROT", n_rot), D("JLLM_HQ", q.heads),
                         D("JLLM_HK", kv.heads), D("JLLM_QNORM", q.norm), D("JLLM_QROPE", q.rope),
                         D("JLLM_KNORM", kv.norm), D("JLLM_KROPE", kv.rope),
                         D("JLLM_KV", static_cast<int>(kv_type)), D("JLLM_NW", kHeadOpsWarps)},
                        32 * kHeadOpsWarps);
    s.grid_y = geo::CeilDiv(q.heads + kv.heads, kHeadOpsWarps);
    s.token_dim = 1;
    s.bytes_per_token = (2 * q.heads * head_dim + 2 * kv.heads * head_dim) * 4 +
                        2 * kv.heads * head_dim * KvElemBytes(kv_type);
    Launch l;
    l.kind = LaunchKind::kHeadOps;
    l.spec = Add(std::move(s));
    l.ops = std::move(ops);
    l.p0 = eps;
    l.p1 = ir::RopeThetaStep(freq_base, n_rot > 0 ? n_rot : 2);
    l.p2 = freq_scale;
    return l;
  }

  absl::Status LowerHeadOp(const ir::Node& n, NodeLowering& nl) {
    std::vector<Operand> ops(slot::kHeadCount, Operand::None());
    const std::optional<ir::ValueId> pos = g_.FindValue(ir::kPositionsInput);
    Launch l;
    switch (n.op) {
      case OpKind::kHeadRmsNorm: {
        const auto& a = n.attrs_as<ir::HeadRmsNormAttrs>();
        ops[slot::kHeadPos] = pos ? Operand::Value(*pos) : Operand::None();  // unused: no RoPE
        ops[slot::kHeadXq] = Operand::Value(n.inputs[0]);
        ops[slot::kHeadQGamma] = Operand::Weight(n.weights[0]);
        ops[slot::kHeadYq] = Operand::Value(n.outputs[0]);
        l = HeadOps({a.n_head, true, false}, {}, a.head_dim, 0, ir::KvDType::kF16, a.eps, 1, 1, ops);
        break;
      }
      case OpKind::kRope: {
        const auto& a = n.attrs_as<ir::RopeAttrs>();
        ops[slot::kHeadPos] = Operand::Value(n.inputs[1]);
        ops[slot::kHeadXq] = Operand::Value(n.inputs[0]);
        ops[slot::kHeadYq] = Operand::Value(n.outputs[0]);
        l = HeadOps({a.n_head, false, true}, {}, a.head_dim, a.n_rot, ir::KvDType::kF16, 0,
                    a.freq_base, a.freq_scale, ops);
        break;
      }
      case OpKind::kKvAppend: {
        const auto& a = n.attrs_as<ir::KvAppendAttrs>();
        ops[slot::kHeadPos] = Operand::Value(n.inputs[2]);
        ops[slot::kHeadXk] = Operand::Value(n.inputs[0]);
        ops[slot::kHeadXv] = Operand::Value(n.inputs[1]);
        ops[slot::kHeadCache] = Operand::Cache(static_cast<int32_t>(a.layer));
        l = HeadOps({}, {a.n_head_kv, false, false}, a.head_dim, 0, g_.kv_dtypes[a.layer], 0, 1, 1, ops);
        break;
      }
      case OpKind::kQkNormRopeKvAppend: {
        const auto& a = n.attrs_as<ir::QkNormRopeKvAppendAttrs>();
        ops[slot::kHeadPos] = Operand::Value(n.inputs[3]);
        ops[slot::kHeadXq] = Operand::Value(n.inputs[0]);
        ops[slot::kHeadQGamma] = Operand::Weight(n.weights[0]);
        ops[slot::kHeadYq] = Operand::Value(n.outputs[0]);
        ops[slot::kHeadXk] = Operand::Value(n.inputs[1]);
        ops[slot::kHeadKGamma] = Operand::Weight(n.weights[1]);
        ops[slot::kHeadXv] = Operand::Value(n.inputs[2]);
        ops[slot::kHeadCache] = Operand::Cache(static_cast<int32_t>(a.layer));
        l = HeadOps({a.n_head, true, true}, {a.n_head_kv, true, true}, a.head_dim, a.n_rot,
                    g_.kv_dtypes[a.layer], a.eps, a.freq_base, a.freq_scale, ops);
        break;
      }
      default:
        return absl::InternalError("not a head op");
    }
    const int64_t head_dim = std::get_if<ir::HeadRmsNormAttrs>(&n.attrs)   ? n.attrs_as<ir::HeadRmsNormAttrs>().head_dim
                             : std::get_if<ir::RopeAttrs>(&n.attrs)        ? n.attrs_as<ir::RopeAttrs>().head_dim
                             : std::get_if<ir::KvAppendAttrs>(&n.attrs)    ? n.attrs_as<ir::KvAppendAttrs>().head_dim
                                                                           : n.attrs_as<ir::QkNormRopeKvAppendAttrs>().head_dim;
    if (head_dim % 32 != 0 || head_dim > 512) {
      return absl::UnimplementedError(
          absl::StrCat("head_dim ", head_dim, ": the CUDA head kernels need a multiple of 32 up to 512"));
    }
    if (node_ != fused_head_node_) nl.decode.push_back(l);  // else in the QKV GEMV's tail
    nl.prefill.push_back(l);
    return absl::OkStatus();
  }

  // attention_mma.cu runs decode attention node n: the kernel chosen (JLLM_ATTN_KERNEL=3, the
  // default), an f16 cache and a shape its MMAs take.
  bool MmaAttention(const ir::Node& n) const {
    const auto& a = n.attrs_as<ir::AttentionAttrs>();
    return AttentionKernel() == 3 && g_.kv_dtypes[a.layer] == ir::KvDType::kF16 &&
           geo::AttentionMmaSupported(static_cast<int>(a.n_head / a.n_head_kv), static_cast<int>(a.head_dim));
  }

  // The node just before attention node n if it is the q/k norm + RoPE + KV append feeding n's
  // q (read by n alone) and cache, with every transform on (Qwen3), fusing is on
  // (JLLM_ATTN_FUSE_HEAD) and n's kernel takes it: attention_decode.cu (JLLM_ATTN_KERNEL=1) any
  // rotation, attention_mma.cu one whose pairs lie in a lane (n_rot a multiple of 64); else null.
  const ir::Node* FusableHeadOps(const ir::Node& n) const {
    if (TuningOverride("JLLM_ATTN_FUSE_HEAD", kAttnFuseHead, /*min=*/0, /*max=*/1) == 0 || node_ == 0) return nullptr;
    if (AttentionKernel() == 2) {
      if (std::getenv("JLLM_ATTN_FUSE_HEAD") != nullptr) {
        WarnIgnored("JLLM_ATTN_FUSE_HEAD", std::getenv("JLLM_ATTN_FUSE_HEAD"),
                    "used with attention_rows.cu (it needs JLLM_ATTN_KERNEL=1 or 3)", 0);
      }
      return nullptr;
    }
    if (node_ - 1 == fused_head_node_) return nullptr;  // in the QKV GEMV's tail (JLLM_GEMV_HEAD)
    const ir::Node& h = g_.nodes[node_ - 1];
    if (h.op != OpKind::kQkNormRopeKvAppend || h.outputs[0] != n.inputs[0] || h.outputs.back() != n.inputs[1]) {
      return nullptr;
    }
    const auto& a = h.attrs_as<ir::QkNormRopeKvAppendAttrs>();
    const int64_t d = n.attrs_as<ir::AttentionAttrs>().head_dim;
    if (a.head_dim != d || a.n_rot <= 0 || a.n_rot > d || a.n_rot % 2 != 0) return nullptr;
    if (AttentionKernel() == 3) {
      if (!MmaAttention(n) || a.n_rot % 64 != 0) return nullptr;
      // attention_mma.cu takes them on its register tiles in fixed chunks: a ring or grabs asked
      // for win over the fusion.
      if (TuningOverride("JLLM_ATTN_RING", kAttnRing, /*min=*/0, /*max=*/8) >= 2 ||
          TuningOverride("JLLM_ATTN_DYNAMIC", kAttnDynamic, /*min=*/0, /*max=*/64) > 0) {
        if (std::getenv("JLLM_ATTN_FUSE_HEAD") != nullptr) {
          WarnIgnored("JLLM_ATTN_FUSE_HEAD", std::getenv("JLLM_ATTN_FUSE_HEAD"),
                      "used with JLLM_ATTN_RING or JLLM_ATTN_DYNAMIC (attention_mma.cu fuses on its register tiles "
                      "in fixed chunks)",
                      0);
        }
        return nullptr;
      }
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (static_cast<int>(i) == node_) continue;
      for (ir::ValueId v : g_.nodes[i].inputs) {
        if (v == h.outputs[0]) return nullptr;  // another reader of the rotated q
      }
    }
    for (ir::ValueId v : g_.outputs) {
      if (v == h.outputs[0]) return nullptr;
    }
    return &h;
  }

  absl::Status LowerAttention(const ir::Node& n, NodeLowering& nl) {
    const auto& a = n.attrs_as<ir::AttentionAttrs>();
    if (a.head_dim % 32 != 0 || a.head_dim > 256) {
      return absl::UnimplementedError(absl::StrCat(
          "head_dim ", a.head_dim, ": the CUDA attention kernels need a multiple of 32 up to 256"));
    }
    const ir::KvDType kv = g_.kv_dtypes[a.layer];
    const int64_t g = a.n_head / a.n_head_kv;
    std::vector<Operand> ops(slot::kAttnCount, Operand::None());
    ops[slot::kAttnQ] = Operand::Value(n.inputs[0]);
    ops[slot::kAttnCache] = Operand::Cache(static_cast<int32_t>(a.layer));
    ops[slot::kAttnPos] = Operand::Value(n.inputs[2]);
    ops[slot::kAttnOut] = Operand::Value(n.outputs[0]);
    const ir::Node* head = FusableHeadOps(n);
    const int64_t kv_row = a.head_dim * KvElemBytes(kv) + (kv == ir::KvDType::kInt8 ? 2 : 0);
    const std::string shape = absl::StrCat(a.n_head, "/", a.n_head_kv, "x", a.head_dim, " ",
                                           Sv(ir::KvDTypeName(kv)));
    const bool mma = MmaAttention(n);  // with or without the head ops (FusableHeadOps)
    // The decode kernel, its split of the sequence and its warps.
    std::string kernel = "attention_decode";
    std::vector<std::string> defines = {D("JLLM_D", a.head_dim), D("JLLM_H", a.n_head), D("JLLM_HK", a.n_head_kv)};
    int64_t splits = 0, nw = 0;
    int ring = 0;  // attention_mma.cu's tiles per warp ring
    if ((mma || (head == nullptr && AttentionKernel() >= 2)) &&
        geo::AttentionRowsSupported(static_cast<int>(a.head_dim))) {
      kernel = mma ? "attention_mma" : "attention_rows";
      splits = std::clamp<int64_t>(TuningOverride("JLLM_ATTN_SPLITS", SplitsToFill(1, a.n_head_kv, kAttnRowsSplits)),
                                   1, 256);
      nw = std::clamp<int64_t>(TuningOverride("JLLM_ATTN_NW", kAttnRowsWarps), 1, 32);
      auto smem = [&] {
        return geo::AttentionRowsSmemBytes(static_cast<int>(g), static_cast<int>(a.head_dim), static_cast<int>(nw));
      };
      while (nw > 1 && smem() > geo::kAttnRowsSmemMax) nw /= 2;
      if (smem() > geo::kAttnRowsSmemMax) {
        return absl::UnimplementedError(absl::StrCat("attention with ", g, " query heads per kv head of ", a.head_dim,
                                                     " dimensions: too many for ", kernel, ".cu's shared memory "
                                                     "(JLLM_ATTN_KERNEL=1 runs attention_decode.cu)"));
      }
      // A split is at least a tile per warp: 32 positions (rows), 16 (mma).
      defines.push_back(D("JLLM_MINCHUNK", TuningOverride("JLLM_ATTN_MINCHUNK", (mma ? 16 : 32) * nw)));
      if (!mma) defines.push_back(D("JLLM_KV", static_cast<int>(kv)));
      if (mma) {
        const int64_t early = TuningOverride("JLLM_ATTN_EARLY", kAttnEarly, /*min=*/0, /*max=*/1);
        defines.push_back(D("JLLM_EARLY", early));
        defines.push_back(D("JLLM_PREFETCH_LATE", PrefetchMode() == 2));
        defines.push_back(D("JLLM_FUSED_HEAD", head != nullptr));
        defines.push_back(
            D("JLLM_SCORE_CHAINS", TuningOverride("JLLM_ATTN_SCORE_CHAINS", kAttnScoreChains, /*min=*/1, /*max=*/2)));
        defines.push_back(D("JLLM_NROT", head != nullptr ? head->attrs_as<ir::QkNormRopeKvAppendAttrs>().n_rot : 0));
        const int fixed = geo::AttentionMmaStaticSmemBytes(static_cast<int>(g), static_cast<int>(a.head_dim),
                                                           static_cast<int>(nw), static_cast<int>(splits),
                                                           head != nullptr);
        ring = static_cast<int>(TuningOverride("JLLM_ATTN_RING", kAttnRing, /*min=*/0, /*max=*/8));
        while (ring >= 2 && fixed + geo::AttentionMmaRingBytes(static_cast<int>(a.head_dim), static_cast<int>(nw),
                                                               ring) > target_.smem_per_block) {
          --ring;
        }
        if (ring < 2) ring = 0;
        defines.push_back(D("JLLM_RING", ring));
        defines.push_back(D("JLLM_DEPENDENTS", early == 1 && ring == 0
                                                   ? TuningOverride("JLLM_ATTN_DEPENDENTS", kAttnDependents, 0, 2)
                                                   : 0));
        const int64_t dynamic =
            ring > 0 ? 0 : TuningOverride("JLLM_ATTN_DYNAMIC", kAttnDynamic, /*min=*/0, /*max=*/64);
        defines.push_back(D("JLLM_DYNAMIC", dynamic));
        defines.push_back(D("JLLM_AHEAD", ring > 0 || dynamic > 0
                                              ? 0
                                              : TuningOverride("JLLM_ATTN_AHEAD", kAttnAhead, /*min=*/0, /*max=*/16)));
      }
    } else {
      splits = std::clamp<int64_t>(TuningOverride("JLLM_ATTN_SPLITS", SplitsToFill(2, a.n_head_kv, kAttnSplits)), 1, 256);
      nw = std::clamp<int64_t>(TuningOverride("JLLM_ATTN_NW", kAttnDecodeWarps), 1, 32);
      defines.push_back(D("JLLM_MINCHUNK", TuningOverride("JLLM_ATTN_MINCHUNK", kAttnMinChunk)));
      defines.push_back(D("JLLM_KV", static_cast<int>(kv)));
      defines.push_back(D("JLLM_FUSED_HEAD", head != nullptr));
      if (head != nullptr) defines.push_back(D("JLLM_NROT", head->attrs_as<ir::QkNormRopeKvAppendAttrs>().n_rot));
    }
    defines.push_back(D("JLLM_NSPLIT", splits));
    defines.push_back(
        D("JLLM_MERGE_FIRST", TuningOverride("JLLM_ATTN_MERGE_FIRST", kAttnMergeFirst, /*min=*/0, /*max=*/1)));
    defines.push_back(D("JLLM_MERGE_ONE_FENCE",
                        TuningOverride("JLLM_ATTN_MERGE_ONE_FENCE", kAttnMergeOneFence, /*min=*/0, /*max=*/1)));
    defines.push_back(D("JLLM_NW", nw));
    {
      KernelSpec s = Base(kernel + ".cu", kernel, absl::StrCat(kernel, " ", shape, head != nullptr ? " +head_ops" : ""),
                          defines, 32 * static_cast<int>(nw));
      s.grid_x = a.n_head_kv;
      s.grid_y = static_cast<int>(splits);
      s.smem = geo::AttentionMmaRingBytes(static_cast<int>(a.head_dim), static_cast<int>(nw), ring);
      s.bytes_per_token = 2 * a.n_head * a.head_dim * 4;
      s.kv_bytes_per_position = 2 * a.n_head_kv * kv_row;
      Launch l;
      l.kind = LaunchKind::kAttentionDecode;
      l.ops = ops;
      l.p0 = a.scale;
      if (head != nullptr) {
        // The head op's decode launch goes; its inputs are read here, and live until here.
        const auto& h = head->attrs_as<ir::QkNormRopeKvAppendAttrs>();
        l.ops[slot::kAttnXq] = Operand::Value(head->inputs[0]);
        l.ops[slot::kAttnXk] = Operand::Value(head->inputs[1]);
        l.ops[slot::kAttnXv] = Operand::Value(head->inputs[2]);
        l.ops[slot::kAttnQGamma] = Operand::Weight(head->weights[0]);
        l.ops[slot::kAttnKGamma] = Operand::Weight(head->weights[1]);
        l.p1 = h.eps;
        l.p2 = ir::RopeThetaStep(h.freq_base, h.n_rot > 0 ? h.n_rot : 2);
        l.p3 = h.freq_scale;
        out_.nodes[node_ - 1].decode.clear();
        nl.extra_reads = {head->inputs[0], head->inputs[1], head->inputs[2]};
        s.bytes_per_token += 2 * a.n_head_kv * a.head_dim * (4 + KvElemBytes(kv));
      }
      l.spec = Add(std::move(s));
      l.workspace_floats = a.n_head * splits * geo::AttentionPartialFloats(static_cast<int>(a.head_dim));
      l.workspace_counters = 2 * a.n_head_kv;  // the splits' tickets, attention_mma.cu's grab counters
      nl.decode.push_back(l);
    }
    {
      const int64_t qt = std::max<int64_t>(1, kAttnPrefillRows / g);
      KernelSpec s = Base("attention_prefill.cu", "attention_prefill",
                          absl::StrCat("attention_prefill ", shape),
                          {D("JLLM_D", a.head_dim), D("JLLM_H", a.n_head), D("JLLM_HK", a.n_head_kv),
                           D("JLLM_KV", static_cast<int>(kv)), D("JLLM_QT", qt),
                           D("JLLM_NW", kAttnPrefillWarps)},
                          32 * kAttnPrefillWarps);
      s.grid_x = a.n_head_kv;
      s.token_dim = 2;
      s.token_tile = qt;
      s.smem = geo::AttentionPrefillSmemBytes(static_cast<int>(qt * g), static_cast<int>(a.head_dim));
      s.bytes_per_token = 2 * a.n_head * a.head_dim * 4;
      s.kv_bytes_per_position = 2 * a.n_head_kv * kv_row;
      Launch l;
      l.kind = LaunchKind::kAttentionPrefill;
      l.spec = Add(std::move(s));
      l.ops = ops;
      l.p0 = a.scale;
      nl.prefill.push_back(l);
    }
    return absl::OkStatus();
  }

  absl::Status LowerNode(const ir::Node& n, NodeLowering& nl) {
    switch (n.op) {
      case OpKind::kEmbed:
        return LowerEmbed(n, nl);
      case OpKind::kRmsNorm: {
        const Launch l = RmsNorm(Operand::Value(n.inputs[0]), n.weights[0], Operand::Value(n.outputs[0]),
                                 Width(n.inputs[0]), n.attrs_as<ir::RmsNormAttrs>().eps);
        if (!NormFoldedIntoLogits(n)) nl.decode.push_back(l);
        nl.prefill.push_back(l);
        return absl::OkStatus();
      }
      case OpKind::kMatMul:
      case OpKind::kMatMulGroup:
        return LowerMatMul(n, nl);
      case OpKind::kLogits:
        return LowerLogits(n, nl);
      case OpKind::kHeadRmsNorm:
      case OpKind::kRope:
      case OpKind::kKvAppend:
      case OpKind::kQkNormRopeKvAppend:
        return LowerHeadOp(n, nl);
      case OpKind::kAttention:
        return LowerAttention(n, nl);
      case OpKind::kSwiGlu:
      case OpKind::kAdd: {
        const Launch l = Elementwise(n.op == OpKind::kAdd ? 0 : 1, Operand::Value(n.inputs[0]),
                                     Operand::Value(n.inputs[1]), Operand::Value(n.outputs[0]),
                                     Width(n.outputs[0]));
        nl.decode.push_back(l);
        nl.prefill.push_back(l);
        return absl::OkStatus();
      }
      case OpKind::kSample:
        return absl::OkStatus();  // the backend samples after the logits
    }
    return absl::UnimplementedError("the CUDA backend has no kernel for this op");
  }

  // Whether a kernel whose dynamic shared memory is `dynamic_bytes` fits the target's CTA, with
  // kStaticSmemReserve for its static arrays (decode attention counts its own exactly).
  bool Fits(int64_t dynamic_bytes) const {
    return dynamic_bytes + geo::kStaticSmemReserve <= target_.smem_per_block;
  }

  const ir::Graph& g_;
  const TuningTable* tuning_;          // null: the heuristics only
  const LoweringTarget target_;        // the GPU the kernels must fit
  std::set<std::string> used_keys_;    // the GEMV shapes lowered (with a table)
  std::vector<int> producer_;  // per value: the node producing it, or -1
  std::vector<std::vector<int>> users_;  // per value: the nodes reading it
  LoweredGraph out_;
  int node_ = 0;
  int fused_head_node_ = -1;  // the head op node whose decode launch is a QKV GEMV's tail
  // The last embedding node (LowerEmbed) and its operands: a GEMV reading its output as x may
  // stage the row itself (JLLM_GEMV_EMBED); node -1: none.
  struct EmbedSource {
    int node = -1;
    ir::ValueId out = -1;
    Operand tokens, pos;
    ir::WeightId table = -1;
  };
  EmbedSource embed_;
};

}  // namespace

absl::StatusOr<LoweredGraph> LowerGraph(const ir::Graph& graph, const TuningTable* tuning,
                                        const LoweringTarget& target) {
  if (absl::Status st = ir::Verify(graph); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cuda: the graph fails verification: ", st.message()));
  }
  if (tuning != nullptr && (tuning->empty() || !UseTuning())) tuning = nullptr;
  return Lowerer(graph, tuning, target).Run();
}

}  // namespace jllm::cuda
