// ggml tensor element types as stored in GGUF files (FORMATS.md §1), with block geometry.
// Lives in ir/ because weight references in the graph carry it and every layer above needs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace jllm {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,  // newer than FORMATS.md: upstream ggml.h now ends at GGML_TYPE_COUNT = 43
};

struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;    // "q4_K", as ggml spells it
  int64_t block_size;       // elements per block
  int64_t type_size;        // bytes per block
  bool supported;           // jllm can dequantize it
};

// Every type id ggml defines, with its block geometry (ggml's type_traits). The sizes of the
// supported quant blocks are checked against quant/block_layout.h where that is compiled.
inline constexpr GgmlTypeTraits kGgmlTypes[] = {
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

// Traits of a known type id, or nullopt for ids that are retired or unknown.
std::optional<GgmlTypeTraits> LookupGgmlType(uint32_t id);
// `type` must be a known id.
constexpr const GgmlTypeTraits& TraitsOf(GgmlType type) {
  for (const auto& t : kGgmlTypes) {
    if (t.type == type) return t;
  }
  return kGgmlTypes[0];  // unreachable for valid enum values
}
constexpr int64_t BlockSize(GgmlType type) { return TraitsOf(type).block_size; }
constexpr int64_t TypeSize(GgmlType type) { return TraitsOf(type).type_size; }
// Elements of a K-quant super-block.
inline constexpr int64_t kQK_K = BlockSize(GgmlType::kQ4_K);
std::string_view GgmlTypeName(GgmlType type);

// Bytes of a row of `n` elements; -1 if n is not a multiple of the block size.
int64_t RowBytes(GgmlType type, int64_t n);

}  // namespace jllm
