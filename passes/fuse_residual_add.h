// fuse-residual-add: add(r, y) where y is a single matmul's output read by nothing else becomes
// that matmul's residual epilogue (y' = W·x + r, inputs [x, r], `residual` set), writing the
// add's output directly; the add node goes. r must be defined before the matmul (it is: the
// residual stream). In Qwen3 this folds both residual adds of every layer (after attn_output
// and after ffn_down). Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseResidualAdd(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
