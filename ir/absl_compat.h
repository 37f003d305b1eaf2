// Debian's Abseil keeps its own absl::string_view (ABSL_USES_STD_STRING_VIEW is off), which is
// what absl::StrCat and friends take; Sv() hands them a std::string_view without a copy.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace jllm {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace jllm
