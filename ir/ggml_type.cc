#include "ir/ggml_type.h"

#include <limits>

namespace jllm {

std::optional<GgmlTypeTraits> LookupGgmlType(uint32_t id) {
  for (const auto& t : kGgmlTypes) {
    if (static_cast<uint32_t>(t.type) == id) return t;
  }
  return std::nullopt;
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
