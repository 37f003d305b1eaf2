// fuse-swiglu: swiglu(gate, up) whose inputs are exactly the two outputs of a matmul_group
// (gate first) read by nothing else becomes the group's epilogue: the group sets `swiglu` and
// writes the swiglu's output, silu(gate)·up, instead of gate and up. Needs group-gate-up to
// have run; without groups it changes nothing. Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseSwiGlu(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
