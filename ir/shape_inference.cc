#include "ir/shape_inference.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "absl/strings/str_join.h"
#include "ir/status.h"

namespace jllm::ir {
namespace {

absl::Status Fail(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

std::string NeString(const WeightRef& w) { return absl::StrCat("{", absl::StrJoin(w.ne, ", "), "}"); }

// Reads the inputs and weights of one node, checking each access.
class Checker {
 public:
  Checker(const Graph& g, const Node& n) : g_(g), n_(n) {}

  absl::Status Counts(size_t n_inputs, size_t n_weights, size_t n_outputs) const {
    if (n_.inputs.size() != n_inputs || n_.weights.size() != n_weights ||
        n_.outputs.size() != n_outputs) {
      return Fail(absl::StrCat(Sv(OpName(n_.op)), " takes ", n_inputs, " input(s), ", n_weights,
                               " weight(s) and ", n_outputs, " output(s); the node has ",
                               n_.inputs.size(), ", ", n_.weights.size(), " and ",
                               n_.outputs.size()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<const ValueType*> Input(size_t i) const {
    const ValueId v = n_.inputs[i];
    if (v < 0 || static_cast<size_t>(v) >= g_.values.size()) {
      return Fail(absl::StrCat("input ", i, " has no value (id ", v, ")"));
    }
    return &g_.values[v].type;
  }

  // An activation [rows, width]; width < 0 accepts any. Returns the width.
  absl::StatusOr<int64_t> Matrix(size_t i, DType dtype, int64_t rows, int64_t width) const {
    ASSIGN_OR_RETURN(const ValueType* t, Input(i));
    const std::string& name = g_.values[n_.inputs[i]].name;
    if (t->dtype != dtype || t->shape.rank() != 2 || t->shape.dims[0] != rows ||
        (width >= 0 && t->shape.dims[1] != width)) {
      return Fail(absl::StrCat("input %", name, " is ", ValueTypeToString(*t), ", expected ",
                               Sv(DTypeName(dtype)), "[", DimToString(rows), ",",
                               width >= 0 ? DimToString(width) : "N", "]"));
    }
    return t->shape.dims[1];
  }

  // Rows of the first input, which every activation input of the node shares.
  absl::StatusOr<int64_t> Rows() const {
    ASSIGN_OR_RETURN(const ValueType* t, Input(0));
    if (t->shape.rank() < 1) {
      return Fail(absl::StrCat("input %", g_.values[n_.inputs[0]].name, " is a scalar"));
    }
    return t->shape.dims[0];
  }

  absl::StatusOr<const WeightRef*> Weight(size_t i) const {
    const WeightId w = n_.weights[i];
    if (w < 0 || static_cast<size_t>(w) >= g_.weights.size()) {
      return Fail(absl::StrCat("weight ", i, " does not exist (id ", w, ")"));
    }
    return &g_.weights[w];
  }

  // A weight matrix {k, n}; n < 0 accepts any. Returns n.
  absl::StatusOr<int64_t> WeightMatrix(size_t i, int64_t k, int64_t n) const {
    ASSIGN_OR_RETURN(const WeightRef* w, Weight(i));
    if (w->ne.size() > 2 || w->dim(0) != k || (n >= 0 && w->dim(1) != n)) {
      return Fail(absl::StrCat("weight '", w->name, "' has ne ", NeString(*w), ", expected {",
                               k, ", ", n >= 0 ? absl::StrCat(n) : "N", "}"));
    }
    return w->dim(1);
  }

  // A norm gamma {width}, stored unquantized.
  absl::Status Gamma(size_t i, int64_t width) const {
    ASSIGN_OR_RETURN(const WeightRef* w, Weight(i));
    if (w->ne.size() != 1 || w->ne[0] != width) {
      return Fail(absl::StrCat("norm weight '", w->name, "' has ne ", NeString(*w),
                               ", expected {", width, "}"));
    }
    if (w->type != GgmlType::kF32 && w->type != GgmlType::kF16 && w->type != GgmlType::kBF16) {
      return Fail(absl::StrCat("norm weight '", w->name, "' is ", Sv(GgmlTypeName(w->type)),
                               "; norms must be f32, f16 or bf16"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<KvDType> Layer(int64_t layer) const {
    if (layer < 0 || layer >= static_cast<int64_t>(g_.kv_dtypes.size())) {
      return Fail(absl::StrCat("layer ", layer, " is outside the ", g_.kv_dtypes.size(),
                               " layers of kv_cache"));
    }
    return g_.kv_dtypes[layer];
  }

 private:
  const Graph& g_;
  const Node& n_;
};

absl::Status Positive(absl::string_view name, int64_t v) {
  if (v < 1 || v > (int64_t{1} << 24)) return Fail(absl::StrCat(name, " = ", v, " is out of range"));
  return absl::OkStatus();
}

absl::Status PositiveFloat(absl::string_view name, float v) {
  if (!std::isfinite(v) || v <= 0) return Fail(absl::StrCat(name, " = ", v, " must be > 0"));
  return absl::OkStatus();
}

absl::Status Heads(int64_t n_head, int64_t head_dim) {
  RETURN_IF_ERROR(Positive("n_head", n_head));
  return Positive("head_dim", head_dim);
}

absl::Status RopeParams(int64_t head_dim, int64_t n_rot, float base, float scale) {
  if (n_rot < 2 || n_rot > head_dim || n_rot % 2 != 0) {
    return Fail(absl::StrCat("n_rot = ", n_rot, " must be even and in [2, head_dim = ",
                             head_dim, "]"));
  }
  RETURN_IF_ERROR(PositiveFloat("freq_base", base));
  return PositiveFloat("freq_scale", scale);
}

ValueType F32(int64_t rows, int64_t width) { return {DType::kF32, {{rows, width}}}; }
ValueType KvCache(KvDType t, int64_t n_head_kv, int64_t head_dim) {
  return {KvValueDType(t), {{2, kDimS, n_head_kv * head_dim}}};
}

absl::StatusOr<std::vector<ValueType>> InferMatMul(const Checker& c, const Node& n) {
  const auto& a = n.attrs_as<MatMulAttrs>();
  const bool group = n.op == OpKind::kMatMulGroup;
  if (n.weights.size() < (a.norm_eps ? 2u : 1u)) return Fail("no weight matrix");
  const size_t n_members = n.weights.size() - (a.norm_eps ? 1 : 0);
  if (group && n_members < 2) return Fail("matmul_group needs at least 2 member weights");
  if (!group && n_members != 1) return Fail("matmul takes one weight matrix");
  if (group && a.residual) return Fail("the residual epilogue applies to a single matmul only");
  if (!group && a.swiglu) return Fail("the swiglu epilogue applies to a (gate, up) group only");
  if (a.swiglu && n_members != 2) return Fail("the swiglu epilogue needs exactly 2 members");
  if (a.norm_eps) RETURN_IF_ERROR(PositiveFloat("norm_eps", *a.norm_eps));
  const size_t n_inputs = a.residual ? 2 : 1;
  const size_t n_outputs = a.swiglu ? 1 : n_members;
  if (n.inputs.size() != n_inputs || n.outputs.size() != n_outputs) {
    return Fail(absl::StrCat(Sv(OpName(n.op)), " with these attributes takes ", n_inputs,
                             " input(s) and ", n_outputs, " output(s); the node has ",
                             n.inputs.size(), " and ", n.outputs.size()));
  }
  ASSIGN_OR_RETURN(int64_t rows, c.Rows());
  ASSIGN_OR_RETURN(int64_t k, c.Matrix(0, DType::kF32, rows, -1));
  if (a.norm_eps) RETURN_IF_ERROR(c.Gamma(n_members, k));
  std::vector<ValueType> out;
  for (size_t i = 0; i < n_members; ++i) {
    ASSIGN_OR_RETURN(int64_t width, c.WeightMatrix(i, k, -1));
    out.push_back(F32(rows, width));
  }
  if (a.swiglu) {
    if (out[0] != out[1]) return Fail("swiglu members (gate, up) differ in width");
    out.resize(1);
  }
  if (a.residual) RETURN_IF_ERROR(c.Matrix(1, DType::kF32, rows, out[0].shape.dims[1]).status());
  return out;
}

absl::StatusOr<std::vector<ValueType>> Infer(const Graph& g, const Node& n) {
  const Checker c(g, n);
  if (n.op == OpKind::kMatMul || n.op == OpKind::kMatMulGroup) return InferMatMul(c, n);
  switch (n.op) {
    case OpKind::kEmbed: {
      RETURN_IF_ERROR(c.Counts(1, 1, 1));
      ASSIGN_OR_RETURN(const ValueType* tokens, c.Input(0));
      if (tokens->dtype != DType::kI32 || tokens->shape.rank() != 1) {
        return Fail(absl::StrCat("tokens are ", ValueTypeToString(*tokens), ", expected i32[T]"));
      }
      ASSIGN_OR_RETURN(const WeightRef* table, c.Weight(0));
      RETURN_IF_ERROR(c.WeightMatrix(0, table->dim(0), -1).status());
      return std::vector{F32(tokens->shape.dims[0], table->dim(0))};
    }
    case OpKind::kRmsNorm: {
      RETURN_IF_ERROR(c.Counts(1, 1, 1));
      RETURN_IF_ERROR(PositiveFloat("eps", n.attrs_as<RmsNormAttrs>().eps));
      ASSIGN_OR_RETURN(int64_t rows, c.Rows());
      ASSIGN_OR_RETURN(int64_t width, c.Matrix(0, DType::kF32, rows, -1));
      RETURN_IF_ERROR(c.Gamma(0, width));
      return std::vector{F32(rows, width)};
    }
    case OpKind::kHeadRmsNorm: {
      RETURN_IF_ERROR(c.Counts(1, 1, 1));
      const auto& a = n.attrs_as<HeadRmsNormAttrs>();
      RETURN_IF_ERROR(Heads(a.n_head, a.head_dim));
      RETURN_IF_ERROR(PositiveFloat("eps", a.eps));
      ASSIGN_OR_RETURN(int64_t rows, c.Rows());
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, a.n_head * a.head_dim).status());
      RETURN_IF_ERROR(c.Gamma(0, a.head_dim));
      return std::vector{F32(rows, a.n_head * a.head_dim)};
    }
    case OpKind::kRope: {
      RETURN_IF_ERROR(c.Counts(2, 0, 1));
      const auto& a = n.attrs_as<RopeAttrs>();
      RETURN_IF_ERROR(Heads(a.n_head, a.head_dim));
      RETURN_IF_ERROR(RopeParams(a.head_dim, a.n_rot, a.freq_base, a.freq_scale));
      ASSIGN_OR_RETURN(int64_t rows, c.Rows());
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, a.n_head * a.head_dim).status());
      ASSIGN_OR_RETURN(const ValueType* pos, c.Input(1));
      if (*pos != ValueType{DType::kI32, {{rows}}}) {
        return Fail(absl::StrCat("positions are ", ValueTypeToString(*pos), ", expected i32[",
                                 DimToString(rows), "]"));
      }
      return std::vector{F32(rows, a.n_head * a.head_dim)};
    }
    default:
      break;
  }
  // The remaining ops share the positions check and the KV layer lookup.
  ASSIGN_OR_RETURN(int64_t rows, c.Rows());
  auto positions = [&](size_t i) -> absl::Status {
    ASSIGN_OR_RETURN(const ValueType* pos, c.Input(i));
    if (*pos != ValueType{DType::kI32, {{rows}}}) {
      return Fail(absl::StrCat("positions are ", ValueTypeToString(*pos), ", expected i32[",
                               DimToString(rows), "]"));
    }
    return absl::OkStatus();
  };
  switch (n.op) {
    case OpKind::kKvAppend: {
      RETURN_IF_ERROR(c.Counts(3, 0, 1));
      const auto& a = n.attrs_as<KvAppendAttrs>();
      RETURN_IF_ERROR(Heads(a.n_head_kv, a.head_dim));
      ASSIGN_OR_RETURN(KvDType kv, c.Layer(a.layer));
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, a.n_head_kv * a.head_dim).status());
      RETURN_IF_ERROR(c.Matrix(1, DType::kF32, rows, a.n_head_kv * a.head_dim).status());
      RETURN_IF_ERROR(positions(2));
      return std::vector{KvCache(kv, a.n_head_kv, a.head_dim)};
    }
    case OpKind::kAttention: {
      RETURN_IF_ERROR(c.Counts(3, 0, 1));
      const auto& a = n.attrs_as<AttentionAttrs>();
      RETURN_IF_ERROR(Heads(a.n_head, a.head_dim));
      RETURN_IF_ERROR(Positive("n_head_kv", a.n_head_kv));
      if (a.n_head % a.n_head_kv != 0) {
        return Fail(absl::StrCat("n_head = ", a.n_head, " is not a multiple of n_head_kv = ",
                                 a.n_head_kv));
      }
      RETURN_IF_ERROR(PositiveFloat("scale", a.scale));
      ASSIGN_OR_RETURN(KvDType kv, c.Layer(a.layer));
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, a.n_head * a.head_dim).status());
      ASSIGN_OR_RETURN(const ValueType* cache, c.Input(1));
      if (*cache != KvCache(kv, a.n_head_kv, a.head_dim)) {
        return Fail(absl::StrCat("kv cache input is ", ValueTypeToString(*cache), ", expected ",
                                 ValueTypeToString(KvCache(kv, a.n_head_kv, a.head_dim)),
                                 " (layer ", a.layer, " is ", Sv(KvDTypeName(kv)), ")"));
      }
      RETURN_IF_ERROR(positions(2));
      return std::vector{F32(rows, a.n_head * a.head_dim)};
    }
    case OpKind::kSwiGlu:
    case OpKind::kAdd: {
      RETURN_IF_ERROR(c.Counts(2, 0, 1));
      ASSIGN_OR_RETURN(int64_t width, c.Matrix(0, DType::kF32, rows, -1));
      RETURN_IF_ERROR(c.Matrix(1, DType::kF32, rows, width).status());
      return std::vector{F32(rows, width)};
    }
    case OpKind::kLogits: {
      RETURN_IF_ERROR(c.Counts(1, 1, 1));
      ASSIGN_OR_RETURN(int64_t width, c.Matrix(0, DType::kF32, rows, -1));
      ASSIGN_OR_RETURN(int64_t vocab, c.WeightMatrix(0, width, -1));
      return std::vector{F32(rows, vocab)};
    }
    case OpKind::kSample: {
      RETURN_IF_ERROR(c.Counts(1, 0, 1));
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, -1).status());
      return std::vector{ValueType{DType::kI32, {{1}}}};
    }
    case OpKind::kQkNormRopeKvAppend: {
      RETURN_IF_ERROR(c.Counts(4, 2, 2));
      const auto& a = n.attrs_as<QkNormRopeKvAppendAttrs>();
      RETURN_IF_ERROR(Heads(a.n_head, a.head_dim));
      RETURN_IF_ERROR(Positive("n_head_kv", a.n_head_kv));
      RETURN_IF_ERROR(PositiveFloat("eps", a.eps));
      RETURN_IF_ERROR(RopeParams(a.head_dim, a.n_rot, a.freq_base, a.freq_scale));
      ASSIGN_OR_RETURN(KvDType kv, c.Layer(a.layer));
      RETURN_IF_ERROR(c.Matrix(0, DType::kF32, rows, a.n_head * a.head_dim).status());
      RETURN_IF_ERROR(c.Matrix(1, DType::kF32, rows, a.n_head_kv * a.head_dim).status());
      RETURN_IF_ERROR(c.Matrix(2, DType::kF32, rows, a.n_head_kv * a.head_dim).status());
      RETURN_IF_ERROR(positions(3));
      RETURN_IF_ERROR(c.Gamma(0, a.head_dim));
      RETURN_IF_ERROR(c.Gamma(1, a.head_dim));
      return std::vector{F32(rows, a.n_head * a.head_dim), KvCache(kv, a.n_head_kv, a.head_dim)};
    }
    default:
      return Fail(absl::StrCat("unknown op kind ", static_cast<int>(n.op)));
  }
}

}  // namespace

absl::StatusOr<std::vector<ValueType>> InferOutputTypes(const Graph& g, const Node& node) {
  if (static_cast<int>(node.op) >= kNumOpKinds) {
    return Fail(absl::StrCat("unknown op kind ", static_cast<int>(node.op)));
  }
  if (!AttrsMatchOp(node.op, node.attrs)) {
    return Fail(absl::StrCat(Sv(OpName(node.op)), " carries the attributes of another op"));
  }
  if (node.inputs.empty()) return Fail(absl::StrCat(Sv(OpName(node.op)), " has no inputs"));
  return Infer(g, node);
}

}  // namespace jllm::ir
