#include "ir/graph.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/shape_inference.h"

namespace jllm::ir {

int64_t WeightBytes(GgmlType type, absl::Span<const int64_t> ne) {
  if (ne.empty() || ne.size() > 4) return -1;
  for (int64_t d : ne) {
    if (d < 1) return -1;
  }
  int64_t bytes = RowBytes(type, ne[0]);
  if (bytes < 0) return -1;
  for (size_t i = 1; i < ne.size(); ++i) {
    if (bytes > INT64_MAX / ne[i]) return -1;
    bytes *= ne[i];
  }
  return bytes;
}

absl::Span<const WeightId> MatMulMembers(const Node& n) {
  absl::Span<const WeightId> w(n.weights);
  const auto* a = std::get_if<MatMulAttrs>(&n.attrs);
  if (a != nullptr && a->norm_eps && !w.empty()) w.remove_suffix(1);
  return w;
}

std::optional<WeightId> MatMulNormWeight(const Node& n) {
  const auto* a = std::get_if<MatMulAttrs>(&n.attrs);
  if (a == nullptr || !a->norm_eps || n.weights.empty()) return std::nullopt;
  return n.weights.back();
}

absl::StatusOr<WeightId> Graph::AddWeight(WeightRef w) {
  if (FindWeight(w.name)) {
    return absl::AlreadyExistsError(absl::StrCat("weight '", w.name, "' is already in the graph"));
  }
  const int64_t expected = WeightBytes(w.type, w.ne);
  if (expected < 0 || static_cast<uint64_t>(expected) != w.nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "weight '", w.name, "': ", w.nbytes, " bytes do not match type ", Sv(GgmlTypeName(w.type)),
        " and its dims (expected ", expected < 0 ? "valid dims" : absl::StrCat(expected), ")"));
  }
  weights.push_back(std::move(w));
  return static_cast<WeightId>(weights.size() - 1);
}

absl::StatusOr<ValueId> Graph::AddInput(std::string name, ValueType type) {
  if (FindValue(name)) {
    return absl::AlreadyExistsError(absl::StrCat("value %", name, " is already in the graph"));
  }
  values.push_back({std::move(name), std::move(type)});
  const auto id = static_cast<ValueId>(values.size() - 1);
  inputs.push_back(id);
  return id;
}

absl::StatusOr<std::vector<ValueId>> Graph::AddNode(OpKind op, std::vector<ValueId> in,
                                                    std::vector<WeightId> w, Attrs attrs,
                                                    std::vector<std::string> output_names) {
  Node node{op, std::move(in), std::move(w), {}, std::move(attrs)};
  node.outputs.assign(output_names.size(), -1);
  auto types = InferOutputTypes(*this, node);
  const std::string where = absl::StrCat(Sv(OpName(op)), " -> %",
                                         output_names.empty() ? "?" : output_names[0]);
  if (!types.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", types.status().message()));
  }
  for (size_t i = 0; i < output_names.size(); ++i) {
    if (FindValue(output_names[i])) {
      return absl::AlreadyExistsError(
          absl::StrCat(where, ": value %", output_names[i], " is already in the graph"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (output_names[j] == output_names[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": output name %", output_names[i], " repeats"));
      }
    }
  }
  for (size_t i = 0; i < output_names.size(); ++i) {
    values.push_back({std::move(output_names[i]), (*types)[i]});
    node.outputs[i] = static_cast<ValueId>(values.size() - 1);
  }
  nodes.push_back(std::move(node));
  return nodes.back().outputs;
}

absl::StatusOr<ValueId> Graph::AddNode1(OpKind op, std::vector<ValueId> in,
                                        std::vector<WeightId> w, Attrs attrs,
                                        std::string output_name) {
  std::vector<std::string> names;
  names.push_back(std::move(output_name));
  auto outs = AddNode(op, std::move(in), std::move(w), std::move(attrs), std::move(names));
  if (!outs.ok()) return outs.status();
  return outs->front();
}

std::optional<WeightId> Graph::FindWeight(std::string_view name) const {
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i].name == name) return static_cast<WeightId>(i);
  }
  return std::nullopt;
}

std::optional<ValueId> Graph::FindValue(std::string_view name) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].name == name) return static_cast<ValueId>(i);
  }
  return std::nullopt;
}

static bool InRange(ValueId v, size_t n) { return v >= 0 && static_cast<size_t>(v) < n; }

std::vector<int> Graph::ProducerIndex() const {
  std::vector<int> producer(values.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId v : nodes[i].outputs) {
      if (InRange(v, values.size())) producer[v] = static_cast<int>(i);
    }
  }
  return producer;
}

std::vector<int> Graph::UseCounts() const {
  std::vector<int> uses(values.size(), 0);
  for (const Node& n : nodes) {
    for (ValueId v : n.inputs) {
      if (InRange(v, values.size())) ++uses[v];
    }
  }
  for (ValueId v : outputs) {
    if (InRange(v, values.size())) ++uses[v];
  }
  return uses;
}

std::vector<std::vector<int>> Graph::Users() const {
  std::vector<std::vector<int>> users(values.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId v : nodes[i].inputs) {
      if (InRange(v, values.size())) users[v].push_back(static_cast<int>(i));
    }
  }
  return users;
}

void Graph::ReplaceAllUses(ValueId from, ValueId to) {
  for (Node& n : nodes) {
    for (ValueId& v : n.inputs) {
      if (v == from) v = to;
    }
  }
  for (ValueId& v : outputs) {
    if (v == from) v = to;
  }
}

void Graph::EraseNodes(const std::vector<bool>& erase) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i >= erase.size() || !erase[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
}

void Graph::Compact() {
  const size_t n = values.size();
  std::vector<ValueId> remap(n, -1);
  std::vector<Value> kept;
  auto keep = [&](ValueId v) {
    if (InRange(v, n) && remap[v] < 0) {
      remap[v] = static_cast<ValueId>(kept.size());
      kept.push_back(values[v]);
    }
  };
  for (ValueId v : inputs) keep(v);
  for (const Node& node : nodes) {
    for (ValueId v : node.outputs) keep(v);
  }
  // Values read but defined nowhere stay, so that Verify can still name them.
  for (const Node& node : nodes) {
    for (ValueId v : node.inputs) keep(v);
  }
  for (ValueId v : outputs) keep(v);
  auto apply = [&](ValueId& v) { v = InRange(v, n) ? remap[v] : -1; };
  for (ValueId& v : inputs) apply(v);
  for (ValueId& v : outputs) apply(v);
  for (Node& node : nodes) {
    for (ValueId& v : node.inputs) apply(v);
    for (ValueId& v : node.outputs) apply(v);
  }
  values = std::move(kept);
}

void Graph::SetKvDType(int64_t layer, KvDType t) {
  if (layer < 0 || layer >= static_cast<int64_t>(kv_dtypes.size())) return;
  kv_dtypes[layer] = t;
  for (const Node& node : nodes) {
    ValueId cache = -1;
    const auto* append = std::get_if<KvAppendAttrs>(&node.attrs);
    const auto* fused = std::get_if<QkNormRopeKvAppendAttrs>(&node.attrs);
    if (append != nullptr && append->layer == layer && node.outputs.size() == 1) {
      cache = node.outputs[0];
    } else if (fused != nullptr && fused->layer == layer && node.outputs.size() == 2) {
      cache = node.outputs[1];
    }
    if (InRange(cache, values.size())) values[cache].type.dtype = KvValueDType(t);
  }
}

}  // namespace jllm::ir
