// group-qkv: the Q, K and V projections of one attention layer, which read the same activation,
// become one matmul_group (outputs q, k, v in that order), also when their weight types differ
// (Q4_K, Q4_K, Q6_K in a Q4_K_M file): one kernel reads the activation once for all three.
// The three are found from each attention node: q through rope/head_rms_norm to its matmul,
// k and v through the layer's kv_append (or qk_norm_rope_kv_append). Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunGroupQkv(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
