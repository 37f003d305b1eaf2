// The invariant checker run after building, after every pass and after deserialization.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "ir/graph.h"

namespace jllm::ir {

// OK, or InvalidArgument naming the first problem found and where (node index, op, value,
// weight). Checks: the model config; one KV type per layer; weights (unique names, known type,
// nbytes matching type and dims, offset + nbytes without overflow); values (unique non-empty
// names, valid shapes, each defined exactly once by a graph input or a node output); nodes in
// topological order (every input defined earlier); per node, the attributes and input/weight
// types and shapes through shape inference, whose result must equal the recorded output types;
// every attention reads the cache its own layer's append produced; each layer is appended once;
// graph outputs defined.
absl::Status Verify(const Graph& g);

// "node 12 (matmul -> %blk.0.q)": how messages name a node.
std::string DescribeNode(const Graph& g, int index);

}  // namespace jllm::ir
