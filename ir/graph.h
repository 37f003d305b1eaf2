// The op graph: model config, KV cache types, weight references, values and nodes.
//
//   Graph g;  g.config = ...;  g.kv_dtypes.assign(n_layer, KvDType::kF16);
//   WeightId w = *g.AddWeight({"blk.0.attn_q.weight", GgmlType::kQ4_K, {1024, 2048}, off, n});
//   ValueId x = *g.AddInput("x", {DType::kF32, {{kDimT, 1024}}});
//   ValueId q = *g.AddNode1(OpKind::kMatMul, {x}, {w}, MatMulAttrs{}, "q");
//   g.outputs.push_back(q);
//
// Nodes are in topological order: every input is a graph input or an output of an earlier
// node. Values and weights are addressed by their index (ValueId, WeightId); names are unique
// and are what the text form (ir/text.h) shows. Passes edit the vectors directly, using the
// rewriting helpers below, then call Compact(); ir::Verify (ir/verify.h) checks the result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/ggml_type.h"
#include "ir/model_config.h"
#include "ir/ops.h"
#include "ir/types.h"

namespace jllm::ir {

using ValueId = int32_t;
using WeightId = int32_t;

// Conventional names of the graph inputs and outputs the runtime binds.
inline constexpr std::string_view kTokensInput = "tokens";    // i32[T]
inline constexpr std::string_view kPositionsInput = "pos";    // i32[T], absolute positions
inline constexpr std::string_view kLogitsOutput = "logits";   // f32[T,V]
inline constexpr std::string_view kTokenOutput = "token";     // i32[1]

// A tensor in the GGUF data blob; the graph never holds weight bytes.
struct WeightRef {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> ne;  // ggml order, ne[0] contiguous; 1..4 dims
  uint64_t offset = 0;      // byte offset within the GGUF data blob
  uint64_t nbytes = 0;      // = WeightBytes(type, ne)

  // ne[i], 1 past the listed dims.
  int64_t dim(int i) const { return i < static_cast<int>(ne.size()) ? ne[i] : 1; }
  bool operator==(const WeightRef&) const = default;
};

// Bytes of a tensor of `type` with dims `ne`; -1 if a dim is < 1, ne[0] is not a multiple of the
// block size, there are more than 4 dims, or the size overflows.
int64_t WeightBytes(GgmlType type, absl::Span<const int64_t> ne);

struct Value {
  std::string name;
  ValueType type;
  bool operator==(const Value&) const = default;
};

struct Node {
  OpKind op = OpKind::kAdd;
  std::vector<ValueId> inputs;
  std::vector<WeightId> weights;
  std::vector<ValueId> outputs;
  Attrs attrs;  // the alternative DefaultAttrs(op) holds

  template <class A> const A& attrs_as() const { return std::get<A>(attrs); }
  template <class A> A& attrs_as() { return std::get<A>(attrs); }
  bool operator==(const Node&) const = default;
};

// matmul / matmul_group: the member matrices, and the prologue's RMSNorm gamma if any.
absl::Span<const WeightId> MatMulMembers(const Node& n);
std::optional<WeightId> MatMulNormWeight(const Node& n);

struct Graph {
  ModelConfig config;
  std::vector<KvDType> kv_dtypes;  // KV cache element type of each layer (size n_layer)
  std::vector<WeightRef> weights;
  std::vector<Value> values;
  std::vector<ValueId> inputs;     // fed by the runtime, defined before every node
  std::vector<ValueId> outputs;    // results the runtime reads
  std::vector<Node> nodes;         // topological order

  // --- building --------------------------------------------------------------------------
  // Errors: duplicate name, or a weight whose nbytes disagrees with its type and dims.
  absl::StatusOr<WeightId> AddWeight(WeightRef w);
  absl::StatusOr<ValueId> AddInput(std::string name, ValueType type);
  // Appends a node; output types come from shape inference (ir/shape_inference.h), so an
  // inconsistent node is refused here with the inference error. One name per output.
  absl::StatusOr<std::vector<ValueId>> AddNode(OpKind op, std::vector<ValueId> inputs,
                                               std::vector<WeightId> weights, Attrs attrs,
                                               std::vector<std::string> output_names);
  absl::StatusOr<ValueId> AddNode1(OpKind op, std::vector<ValueId> inputs,
                                   std::vector<WeightId> weights, Attrs attrs,
                                   std::string output_name);

  // --- lookup (linear scans; a graph has a few thousand entries at most) -------------------
  std::optional<WeightId> FindWeight(std::string_view name) const;
  std::optional<ValueId> FindValue(std::string_view name) const;
  const ValueType& type_of(ValueId v) const { return values[v].type; }
  const std::string& name_of(ValueId v) const { return values[v].name; }

  // --- analysis and rewriting, for passes ---------------------------------------------------
  // Per value: the index of the node producing it, or -1 (graph input or undefined).
  std::vector<int> ProducerIndex() const;
  // Per value: the number of node input slots plus graph output slots reading it.
  std::vector<int> UseCounts() const;
  // Per value: the indices of the nodes reading it (a node reading it twice appears twice).
  std::vector<std::vector<int>> Users() const;
  // Makes every node input and graph output that reads `from` read `to` instead.
  void ReplaceAllUses(ValueId from, ValueId to);
  // Removes the nodes whose flag is set (erase.size() == nodes.size()).
  void EraseNodes(const std::vector<bool>& erase);
  // Drops values nothing defines or reads and renumbers the rest in definition order (graph
  // inputs, then node outputs in node order), so equal graphs have equal ids.
  void Compact();
  // Sets layer's KV cache type and retypes the cache values that layer's appends produce.
  void SetKvDType(int64_t layer, KvDType t);

  bool operator==(const Graph&) const = default;
};

}  // namespace jllm::ir
