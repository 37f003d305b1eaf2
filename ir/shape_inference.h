// Shape inference: the output types of a node, from its op, input types, weights and attributes.
// It is also the per-node consistency check: input/weight counts, dtypes, shapes, weight dims
// and attribute values (ops.h lists the signatures). Verify compares its result to the types
// recorded in the graph.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace jllm::ir {

// Errors describe the problem ("weight 'blk.0.attn_q.weight' has ne {1024, 512}, expected
// ne[0] = 2048"); the caller adds which node it was. Ids out of range are errors, not UB.
absl::StatusOr<std::vector<ValueType>> InferOutputTypes(const Graph& g, const Node& node);

}  // namespace jllm::ir
