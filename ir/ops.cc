#include "ir/ops.h"

#include <cmath>

#include "ir/absl_compat.h"

namespace jllm::ir {
namespace {

constexpr std::string_view kOpNames[kNumOpKinds] = {
    "embed",  "rms_norm", "matmul", "head_rms_norm", "rope",         "kv_append",
    "attention", "swiglu", "add",   "logits",        "sample",       "matmul_group",
    "qk_norm_rope_kv_append",
};

}  // namespace

std::string_view OpName(OpKind op) {
  const auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(kNumOpKinds) ? kOpNames[i] : "?";
}

std::optional<OpKind> ParseOpName(std::string_view name) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    if (kOpNames[i] == name) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

float RopeThetaStep(float freq_base, int64_t n_rot) {
  return std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
}

bool IsFusedOp(OpKind op) {
  return op == OpKind::kMatMulGroup || op == OpKind::kQkNormRopeKvAppend;
}

Attrs DefaultAttrs(OpKind op) {
  switch (op) {
    case OpKind::kRmsNorm: return RmsNormAttrs{};
    case OpKind::kMatMul:
    case OpKind::kMatMulGroup: return MatMulAttrs{};
    case OpKind::kHeadRmsNorm: return HeadRmsNormAttrs{};
    case OpKind::kRope: return RopeAttrs{};
    case OpKind::kKvAppend: return KvAppendAttrs{};
    case OpKind::kAttention: return AttentionAttrs{};
    case OpKind::kQkNormRopeKvAppend: return QkNormRopeKvAppendAttrs{};
    case OpKind::kEmbed:
    case OpKind::kSwiGlu:
    case OpKind::kAdd:
    case OpKind::kLogits:
    case OpKind::kSample: return NoAttrs{};
  }
  return NoAttrs{};
}

bool AttrsMatchOp(OpKind op, const Attrs& attrs) {
  return DefaultAttrs(op).index() == attrs.index();
}

std::string AttrsToText(const Attrs& attrs) {
  return std::visit([](const auto& a) { return fields::ToText(a); }, attrs);
}

absl::StatusOr<Attrs> AttrsFromText(OpKind op, const std::vector<fields::TextField>& text,
                                    std::string_view context) {
  Attrs attrs = DefaultAttrs(op);
  absl::Status st =
      std::visit([&](auto& a) { return fields::FromText(text, &a, Sv(context)); }, attrs);
  if (!st.ok()) return st;
  return attrs;
}

void WriteAttrs(const Attrs& attrs, ByteWriter& w) {
  std::visit([&w](const auto& a) { fields::Write(a, w); }, attrs);
}

absl::StatusOr<Attrs> ReadAttrs(OpKind op, ByteReader& r) {
  Attrs attrs = DefaultAttrs(op);
  absl::Status st = std::visit([&r](auto& a) { return fields::Read(r, &a); }, attrs);
  if (!st.ok()) return st;
  return attrs;
}

}  // namespace jllm::ir
