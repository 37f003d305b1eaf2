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

inline constexpr int64_t kQK_K = 256;

// Traits of a known type id, or nullopt for ids that are retired or unknown.
std::optional<GgmlTypeTraits> LookupGgmlType(uint32_t id);
const GgmlTypeTraits& TraitsOf(GgmlType type);  // `type` must be a known id
std::string_view GgmlTypeName(GgmlType type);

// Bytes of a row of `n` elements; -1 if n is not a multiple of the block size.
int64_t RowBytes(GgmlType type, int64_t n);

}  // namespace jllm
