#include "ir/verify.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "absl/strings/str_join.h"
#include "ir/shape_inference.h"
#include "ir/status.h"

namespace jllm::ir {
namespace {

absl::Status Fail(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

bool InRange(int32_t id, size_t n) { return id >= 0 && static_cast<size_t>(id) < n; }

absl::Status VerifyWeights(const Graph& g) {
  absl::flat_hash_set<std::string_view> names;
  for (size_t i = 0; i < g.weights.size(); ++i) {
    const WeightRef& w = g.weights[i];
    if (w.name.empty()) return Fail(absl::StrCat("weight ", i, " has no name"));
    if (!names.insert(w.name).second) return Fail(absl::StrCat("weight '", w.name, "' repeats"));
    if (!LookupGgmlType(static_cast<uint32_t>(w.type))) {
      return Fail(absl::StrCat("weight '", w.name, "' has unknown ggml type ",
                               static_cast<uint32_t>(w.type)));
    }
    const int64_t expected = WeightBytes(w.type, w.ne);
    if (expected < 0) {
      return Fail(absl::StrCat("weight '", w.name, "' has invalid dims {",
                               absl::StrJoin(w.ne, ", "), "} for type ", Sv(GgmlTypeName(w.type))));
    }
    if (static_cast<uint64_t>(expected) != w.nbytes) {
      return Fail(absl::StrCat("weight '", w.name, "' has size ", w.nbytes, ", but ",
                               Sv(GgmlTypeName(w.type)), " {", absl::StrJoin(w.ne, ", "),
                               "} takes ", expected, " bytes"));
    }
    if (w.offset > UINT64_MAX - w.nbytes) {
      return Fail(absl::StrCat("weight '", w.name, "': offset + size overflows"));
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyValues(const Graph& g) {
  absl::flat_hash_set<std::string_view> names;
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.name.empty()) return Fail(absl::StrCat("value ", i, " has no name"));
    if (!names.insert(v.name).second) return Fail(absl::StrCat("value %", v.name, " repeats"));
    if (static_cast<int>(v.type.dtype) >= kNumDTypes || !IsValidShape(v.type.shape)) {
      return Fail(absl::StrCat("value %", v.name, " has an invalid type"));
    }
  }
  return absl::OkStatus();
}

// Each kv cache value must come from the append of the layer that reads it; one append per layer.
absl::Status VerifyKvLayers(const Graph& g) {
  const std::vector<int> producer = g.ProducerIndex();
  std::vector<int> appended(g.kv_dtypes.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int64_t layer = -1;
    if (const auto* a = std::get_if<KvAppendAttrs>(&n.attrs)) layer = a->layer;
    if (const auto* a = std::get_if<QkNormRopeKvAppendAttrs>(&n.attrs)) layer = a->layer;
    if (layer >= 0) {
      if (appended[layer] >= 0) {
        return Fail(absl::StrCat(DescribeNode(g, static_cast<int>(i)), ": layer ", layer,
                                 " is already appended by ", DescribeNode(g, appended[layer])));
      }
      appended[layer] = static_cast<int>(i);
    }
    if (n.op != OpKind::kAttention) continue;
    const int64_t want = n.attrs_as<AttentionAttrs>().layer;
    const int p = producer[n.inputs[1]];
    int64_t got = -1;
    if (p >= 0) {
      if (const auto* a = std::get_if<KvAppendAttrs>(&g.nodes[p].attrs)) got = a->layer;
      if (const auto* a = std::get_if<QkNormRopeKvAppendAttrs>(&g.nodes[p].attrs)) {
        if (g.nodes[p].outputs[1] == n.inputs[1]) got = a->layer;
      }
    }
    if (got != want) {
      return Fail(absl::StrCat(DescribeNode(g, static_cast<int>(i)), ": the kv cache input %",
                               g.name_of(n.inputs[1]), " is not the cache that layer ", want,
                               "'s kv append produces"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string DescribeNode(const Graph& g, int index) {
  if (index < 0 || static_cast<size_t>(index) >= g.nodes.size()) return absl::StrCat("node ", index);
  const Node& n = g.nodes[index];
  std::string out = absl::StrCat("node ", index, " (", Sv(OpName(n.op)));
  if (!n.outputs.empty() && InRange(n.outputs[0], g.values.size())) {
    absl::StrAppend(&out, " -> %", g.values[n.outputs[0]].name);
  }
  return out + ")";
}

absl::Status Verify(const Graph& g) {
  RETURN_IF_ERROR(ValidateModelConfig(g.config));
  if (static_cast<int64_t>(g.kv_dtypes.size()) != g.config.n_layer) {
    return Fail(absl::StrCat("kv_cache lists ", g.kv_dtypes.size(), " layers, the model has ",
                             g.config.n_layer));
  }
  for (KvDType t : g.kv_dtypes) {
    if (t != KvDType::kF16 && t != KvDType::kInt8 && t != KvDType::kF32) return Fail("kv_cache has an unknown type");
  }
  RETURN_IF_ERROR(VerifyWeights(g));
  RETURN_IF_ERROR(VerifyValues(g));

  std::vector<bool> defined(g.values.size(), false);
  for (ValueId v : g.inputs) {
    if (!InRange(v, g.values.size())) return Fail(absl::StrCat("graph input id ", v, " is invalid"));
    if (defined[v]) return Fail(absl::StrCat("graph input %", g.name_of(v), " is listed twice"));
    defined[v] = true;
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const std::string where = DescribeNode(g, static_cast<int>(i));
    if (static_cast<int>(n.op) >= kNumOpKinds) return Fail(absl::StrCat(where, ": unknown op"));
    for (ValueId v : n.inputs) {
      if (!InRange(v, g.values.size())) {
        return Fail(absl::StrCat(where, ": input id ", v, " is invalid"));
      }
      if (!defined[v]) {
        return Fail(absl::StrCat(where, ": reads %", g.name_of(v),
                                 " before any node defines it (not in topological order)"));
      }
    }
    for (ValueId v : n.outputs) {
      if (!InRange(v, g.values.size())) {
        return Fail(absl::StrCat(where, ": output id ", v, " is invalid"));
      }
    }
    auto types = InferOutputTypes(g, n);
    if (!types.ok()) return Fail(absl::StrCat(where, ": ", types.status().message()));
    if (types->size() != n.outputs.size()) {
      return Fail(absl::StrCat(where, ": has ", n.outputs.size(), " outputs, the op gives ",
                               types->size()));
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const ValueId v = n.outputs[j];
      if (defined[v]) return Fail(absl::StrCat(where, ": %", g.name_of(v), " is defined twice"));
      defined[v] = true;
      if (g.type_of(v) != (*types)[j]) {
        return Fail(absl::StrCat(where, ": %", g.name_of(v), " is recorded as ",
                                 ValueTypeToString(g.type_of(v)), " but the op gives ",
                                 ValueTypeToString((*types)[j])));
      }
    }
  }
  for (ValueId v : g.outputs) {
    if (!InRange(v, g.values.size())) return Fail(absl::StrCat("graph output id ", v, " is invalid"));
    if (!defined[v]) return Fail(absl::StrCat("graph output %", g.name_of(v), " is never defined"));
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!defined[v]) {
      return Fail(absl::StrCat("value %", g.values[v].name,
                               " is never defined (a pass left it behind: call Compact())"));
    }
  }
  return VerifyKvLayers(g);
}

}  // namespace jllm::ir
