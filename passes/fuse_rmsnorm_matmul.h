// fuse-rmsnorm-matmul: an rms_norm whose every user is a projection (matmul or matmul_group
// reading it as its activation) becomes the prologue of those projections: they read the
// un-normalized input, carry the norm's gamma as their last weight and its eps as norm_eps, and
// the rms_norm node goes. A norm with any other user (e.g. the final norm before logits) stays.
// Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseRmsNormMatMul(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
