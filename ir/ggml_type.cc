#include "ir/ggml_type.h"

#include <array>
#include <limits>

namespace jllm {
namespace {

constexpr GgmlTypeTraits kTraits[] = {
    {GgmlType::kF32, "f32", 1, 4, true},
    {GgmlType::kF16, "f16", 1, 2, true},
    {GgmlType::kQ4_0, "q4_0", 32, 18, false},
    {GgmlType::kQ4_1, "q4_1", 32, 20, false},
    {GgmlType::kQ5_0, "q5_0", 32, 22, false},
    {GgmlType::kQ5_1, "q5_1", 32, 24, false},
    {GgmlType::kQ8_0, "q8_0", 32, 34, true},
    {GgmlType::kQ8_1, "q8_1", 32, 36, false},
    {GgmlType::kQ2_K, "q2_K", 256, 84, false},
    {GgmlType::kQ3_K, "q3_K", 256, 110, false},
    {GgmlType::kQ4_K, "q4_K", 256, 144, true},
    {GgmlType::kQ5_K, "q5_K", 256, 176, true},
    {GgmlType::kQ6_K, "q6_K", 256, 210, true},
    {GgmlType::kQ8_K, "q8_K", 256, 292, false},
    {GgmlType::kIQ2_XXS, "iq2_xxs", 256, 66, false},
    {GgmlType::kIQ2_XS, "iq2_xs", 256, 74, false},
    {GgmlType::kIQ3_XXS, "iq3_xxs", 256, 98, false},
    {GgmlType::kIQ1_S, "iq1_s", 256, 50, false},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 18, false},
    {GgmlType::kIQ3_S, "iq3_s", 256, 110, false},
    {GgmlType::kIQ2_S, "iq2_s", 256, 82, false},
    {GgmlType::kIQ4_XS, "iq4_xs", 256, 136, false},
    {GgmlType::kI8, "i8", 1, 1, false},
    {GgmlType::kI16, "i16", 1, 2, false},
    {GgmlType::kI32, "i32", 1, 4, false},
    {GgmlType::kI64, "i64", 1, 8, false},
    {GgmlType::kF64, "f64", 1, 8, false},
    {GgmlType::kIQ1_M, "iq1_m", 256, 56, false},
    {GgmlType::kBF16, "bf16", 1, 2, true},
    {GgmlType::kTQ1_0, "tq1_0", 256, 54, false},
    {GgmlType::kTQ2_0, "tq2_0", 256, 66, false},
    {GgmlType::kMXFP4, "mxfp4", 32, 17, false},
    {GgmlType::kNVFP4, "nvfp4", 64, 36, false},
    {GgmlType::kQ1_0, "q1_0", 128, 18, false},
    {GgmlType::kQ2_0, "q2_0", 64, 18, false},
};

}  // namespace

std::optional<GgmlTypeTraits> LookupGgmlType(uint32_t id) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
}

const GgmlTypeTraits& TraitsOf(GgmlType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  return kTraits[0];  // unreachable for valid enum values
}

std::string_view GgmlTypeName(GgmlType type) { return TraitsOf(type).name; }

int64_t RowBytes(GgmlType type, int64_t n) {
  const auto& t = TraitsOf(type);
  if (n < 0 || n % t.block_size != 0) return -1;
  const int64_t blocks = n / t.block_size;
  // Sizes come from files: refuse what would overflow rather than wrap.
  if (blocks > std::numeric_limits<int64_t>::max() / t.type_size) return -1;
  return blocks * t.type_size;
}

}  // namespace jllm
