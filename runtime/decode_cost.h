// What one decode step must read, from the graph alone: every weight a matmul reads in full,
// one row of the embedding table, the norm vectors, and the KV cache up to the depth. With a
// measured read bandwidth this gives the ceiling a decode step is held to (DESIGN.md,
// "Performance method"): ceiling tok/s = bandwidth / bytes per token.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace jllm::runtime {

// Weight bytes one decode token reads (GGUF sizes; a tied table counted once as the output
// matrix, plus its one embedding row).
int64_t WeightBytesPerToken(const ir::Graph& graph);

// KV cache bytes a decode token at `depth` cached positions reads (every layer's K and V).
int64_t KvBytesPerToken(const ir::Graph& graph, int64_t depth);

// Parameters (weight elements) of the graph.
int64_t ParameterCount(const ir::Graph& graph);

}  // namespace jllm::runtime
