// group-gate-up: the FFN gate and up projections feeding one swiglu, which read the same
// activation, become one matmul_group (outputs gate, up in that order), whatever their weight
// types. fuse-swiglu can then fold the swiglu into the group. Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunGroupGateUp(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
