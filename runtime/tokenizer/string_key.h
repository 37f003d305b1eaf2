// Hash and equality for maps keyed by std::string that are looked up with std::string_view
// (Debian's Abseil has its own string_view, so its built-in heterogeneous lookup does not apply).
#pragma once

#include <string_view>

#include "absl/hash/hash.h"

namespace jllm::runtime {

struct StringKeyHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return absl::Hash<std::string_view>{}(s); }
};
struct StringKeyEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

}  // namespace jllm::runtime
