// Lowering: every node of a lowered ir::Graph becomes the kernel launches that compute it, for
// a decode step (T = 1) and for a prefill chunk (T > 1), each launch a KernelSpec with the node's
// exact shapes, member types and fusion flags, plus how its arguments bind to graph values.
// Plain data and deterministic: jllm-compile lowers ahead of time (to compile the specs for
// --arch), the backend lowers again at load and finds the plan's CUBINs by spec.
//
//   ASSIGN_OR_RETURN(LoweredGraph lg, LowerGraph(graph));
//   for (const KernelSpec& s : lg.specs) ... compile ...
//
// Which kernel an op gets (the registry, as passes/registry.cc is for passes):
//   op                      decode (T = 1)                 prefill (T > 1)
//   embed                   embed                          embed
//   rms_norm                rms_norm                       rms_norm
//   matmul, matmul_group    gemv (group, norm, residual,   [rms_norm] + gemm per member
//                           swiglu fused)                  [+ elementwise swiglu]; gemm_f16 for
//                                                          the K-quants and q8_0 (JLLM_GEMM_MMA
//                                                          2), its gate+up pair (JLLM_GEMM_PAIR)
//   logits                  gemv                           gemv on the last row; gemm for all
//   head_rms_norm, rope,    head_ops (or none: inside      head_ops
//   kv_append,              attention_mma or _decode,
//   qk_norm_rope_kv_append  JLLM_ATTN_FUSE_HEAD, the
//                           default; or the QKV gemv's
//                           tail, JLLM_GEMV_HEAD)
//   attention               attention_rows (JLLM_ATTN_     attention_prefill
//                           KERNEL 2), attention_mma (3),
//                           attention_decode (1)
//   swiglu, add             elementwise                    elementwise
//   sample                  — (the backend runs the sampler after the logits, or for a greedy
//                           draw the logits GEMV draws itself: LoweredGraph::greedy_logits)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/kernel_spec.h"
#include "backends/cuda/lowering/lowering_target.h"
#include "backends/cuda/lowering/tuning.h"
#include "ir/graph.h"

namespace jllm::cuda {

// Where a kernel argument comes from.
struct Operand {
  enum class Kind : uint8_t { kNone, kValue, kTemp, kWeight, kKvCache };
  Kind kind = Kind::kNone;
  int32_t id = -1;        // value id, temp index (of the node), weight id or layer
  bool last_row = false;  // the last token's row of a [T, width] value
  static Operand None() { return {}; }
  static Operand Value(int32_t v, bool last = false) { return {Kind::kValue, v, last}; }
  static Operand Temp(int32_t t) { return {Kind::kTemp, t, false}; }
  static Operand Weight(int32_t w) { return {Kind::kWeight, w, false}; }
  static Operand Cache(int32_t layer) { return {Kind::kKvCache, layer, false}; }
  bool present() const { return kind != Kind::kNone; }
};

enum class LaunchKind : uint8_t {
  kGemv, kGemm, kEmbed, kRmsNorm, kHeadOps, kAttentionDecode, kAttentionPrefill, kElementwise, kSample,
};

// Operand slots of each kind, in Launch::ops.
namespace slot {
// kGemvHeadPos..kGemvHeadCache: the QKV GEMV with the next node's head ops in its tail (else absent);
// kGemvEmbedTokens..kGemvEmbedY: the first GEMV staging the embedding row itself (else absent).
enum Gemv {
  kGemvX, kGemvGamma, kGemvResidual, kGemvW0, kGemvW1, kGemvW2, kGemvY0, kGemvY1, kGemvY2,
  kGemvHeadPos, kGemvHeadQGamma, kGemvHeadKGamma, kGemvHeadYq, kGemvHeadCache,
  kGemvEmbedTokens, kGemvEmbedPos, kGemvEmbedTable, kGemvEmbedY, kGemvCount
};
enum Gemm { kGemmX, kGemmResidual, kGemmW, kGemmY, kGemmW2, kGemmCount };
enum Embed { kEmbedTokens, kEmbedPos, kEmbedTable, kEmbedY, kEmbedCount };
enum RmsNorm { kNormX, kNormGamma, kNormY, kNormCount };
enum HeadOps { kHeadPos, kHeadXq, kHeadQGamma, kHeadYq, kHeadXk, kHeadKGamma, kHeadXv, kHeadCache, kHeadCount };
// kAttnXq..kAttnXv: decode attention with the head ops fused (their inputs; else absent).
enum Attention { kAttnQ, kAttnCache, kAttnPos, kAttnOut, kAttnXq, kAttnQGamma, kAttnXk, kAttnKGamma, kAttnXv, kAttnCount };
enum Elementwise { kEltA, kEltB, kEltY, kEltCount };
enum Sample { kSampleLogits, kSampleCount };
}  // namespace slot

struct Launch {
  LaunchKind kind = LaunchKind::kElementwise;
  int32_t spec = -1;             // index into LoweredGraph::specs
  std::vector<Operand> ops;      // by the slot enum of `kind`
  float p0 = 0, p1 = 0, p2 = 0, p3 = 0;  // gemv/rms_norm/head_ops: eps; head_ops: rope step, scale;
                                         // attention: scale (+ fused head ops: eps, rope step, scale)
  int64_t width = 0;             // elementwise: elements per token
  // Scratch this launch needs in the shared workspace (reset by the kernel itself).
  int64_t workspace_floats = 0;
  int64_t workspace_counters = 0;
  // Decode head_ops and attention (JLLM_PREFETCH=1): weights of a later GEMV to prefetch into L2
  // (kernel_args.h, L2Prefetch), and their device bytes.
  Operand prefetch[2] = {Operand::None(), Operand::None()};
  int64_t prefetch_bytes[2] = {0, 0};
  // gemv: its shape in a tuning table (tuning.h, GemvShapeKey); empty for other kinds.
  std::string tune_key;
  // gemv with JLLM_TMA: member m's tile geometry (box_bytes 0: none); the binder adds the base
  // and has the device encode it into the kernel's arguments.
  TileBox tile[3] = {};
};

struct NodeLowering {
  std::vector<Launch> decode;
  std::vector<Launch> prefill;
  std::vector<Launch> prefill_all_rows;  // logits: every row (empty for other nodes)
  std::vector<int64_t> temp_widths;      // f32 [T, width] scratch the launches use
  // Values the decode launches read that are not the node's inputs: a producer fused into this
  // node reads its own inputs here, so they must live until this node (memory_plan.cc).
  std::vector<ir::ValueId> extra_reads;
  // Outputs of a later node that the decode launches write (a consumer fused into this node):
  // they get their bytes here, so none of this node's inputs shares them (memory_plan.cc).
  std::vector<ir::ValueId> early_outputs;
};

struct LoweredGraph {
  std::vector<KernelSpec> specs;      // unique; what jllm-compile --arch compiles
  std::vector<NodeLowering> nodes;    // by node index
  Launch sample;                      // the sampler, reading the logits' last row
  ir::ValueId logits = -1;            // the %logits output, or -1
  // A greedy decode step without penalties (SamplingParams::GreedyWithoutPenalties): node
  // greedy_node's decode launch is greedy_logits instead, the logits GEMV drawing the next token
  // in its epilogue (JLLM_ARGMAX), and no sampler runs. spec -1 (JLLM_GREEDY_LOGITS=0): none.
  Launch greedy_logits;
  int32_t greedy_node = -1;
};

// Errors name the node and what is unsupported (a weight type, a shape); every op of ir/ops.h
// with Qwen3's shapes lowers. `tuning` (tuning.h, null or empty: none) sets the knobs of the
// GEMV shapes it names; a shape it names that the graph lacks is an error. `target`: the GPU the
// kernels must fit (lowering_target.h; the default is sm_90's): rings and token tiles shrink to
// its shared memory, and a kernel that still does not fit is an error naming it.
absl::StatusOr<LoweredGraph> LowerGraph(const ir::Graph& graph, const TuningTable* tuning = nullptr,
                                        const LoweringTarget& target = {});

// Whether LowerGraph uses a tuning table it is given: JLLM_TUNING=0 ignores it (the A/B of tuned
// against the heuristics), 1 (default) uses it.
bool UseTuning();

// How the decode GEMVs of the K-quants and q8_0 read x, from JLLM_GEMV_X at lowering: "i16"
// (2, the default: int16 runs of 16 as two int8 planes, two dp4a passes; logits within --validate's
// bound, ~5e-4 on 4b), "i8" (1: int8 runs, one dp4a pass; ~4 % from cpu_ref's on 4b, over the
// bound) or "f32" (0). Other types always read f32. docs/PERF.md has the A/B.
int GemvActivationPlanes();

// How the prefill GEMMs multiply, from JLLM_GEMM_MMA at lowering: 0 f32 FMAs, 1 tf32 mma.sync,
// 2 (the default) f16 mma.sync from raw quant tiles for the K-quants and q8_0 (gemm_f16.cu;
// other types as 1). Whether they run on the tensor cores: operands rounded to 10 mantissa
// bits either way, relative error ~2^-11 each.
int GemmMode();
bool GemmTensorCores();

// Whether decode launches prefetch GEMV weights into L2 (sm_90 bulk prefetch), from JLLM_PREFETCH
// at lowering: 1, head_ops and attention each the first GEMV after them that no earlier one took,
// from their start; 2, attention only its successor (the attention output projection), from
// each CTA's end of stream (attention_mma.cu; the other decode kernels from their start); 0, the
// default, none.
int PrefetchMode();
bool Prefetching();
// How they prefetch (JLLM_PREFETCH_FORM at lowering, a kernels/kernel_args.h L2PrefetchForm):
// bulk (the default: cp.async.bulk.prefetch.L2, one thread a CTA), line (prefetch.global.L2 per
// 128 bytes, every thread), evict-last (the same with the evict-last priority) or load256 (a
// 4-byte load per 256 bytes with the L2::256B fetch size). jllm-bench --probe l2-prefetch
// measures what each leaves in L2.
int PrefetchForm();

// The sampler's CTAs (JLLM_SAMPLE_CTAS at lowering; kernels/launch_geometry.h kSampleCtas by
// default, 16 since stop 31; 1: stop 30's single CTA): a greedy draw without penalties scans
// the row with all of them.
int SampleCtas();

// Whether a greedy decode step draws in the logits GEMV's epilogue (JLLM_GREEDY_LOGITS at
// lowering: 1, the default since stop 35) or in the sampler after it (0).
bool GreedyLogits();

// Whether the GEMV heuristics take the group's size into account (JLLM_GEMV_BY_SIZE, 1 by default
// since stop 28; 0: stop 27's): a group of at least 4 MiB takes 16 warps in one CTA an SM like the
// feed-forward ones, a smaller one aims its K split at twice the items a warp (ITEMS 10).
bool GemvBySize();

// Whether every kernel is built to fill the in-step trace (kernels/kernel_trace.h), from
// JLLM_TRACE at lowering (1; 0, the default, no): a measuring aid for --profile, whose kernels
// then carry JLLM_TRACE=<their spec's index + 1>.
bool Tracing();

// Which decode attention kernel the lowering picks (JLLM_ATTN_KERNEL): 3 attention_mma.cu (the
// default, where it applies, else 2), 2 attention_rows.cu, 1 attention_decode.cu (3 and 1 can take
// the head ops, JLLM_ATTN_FUSE_HEAD).
int AttentionKernel();

}  // namespace jllm::cuda
