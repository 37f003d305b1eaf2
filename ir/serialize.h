// Binary form of a graph, the "lowered graph" section of the plan file.
//
// Layout (little-endian): magic "JIRG", u32 format version, the model config fields, the KV
// types, the weight table, the values, the graph inputs and outputs, then the nodes (op, input
// ids, weight ids, output ids, attribute fields). Reading is bounds-checked throughout, refuses
// a version it does not know, and ends with Verify, so a corrupt or truncated graph is an
// error, never a crash or a huge allocation.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/byte_io.h"
#include "ir/graph.h"

namespace jllm::ir {

inline constexpr uint32_t kGraphFormatVersion = 1;

// Appends the graph to `w` (for embedding in a larger file) / reads one graph from `r`.
void WriteGraph(const Graph& g, ByteWriter& w);
absl::StatusOr<Graph> ReadGraph(ByteReader& r);

// A whole buffer holding exactly one graph; `source` names it in errors.
std::string SerializeGraph(const Graph& g);
absl::StatusOr<Graph> DeserializeGraph(std::string_view bytes, std::string source = "graph");

}  // namespace jllm::ir
