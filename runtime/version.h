// The jllm version this build reports and writes into plan files (CMake's PROJECT_VERSION).
#pragma once

#include <string_view>

namespace jllm::runtime {

std::string_view JllmVersion();

}  // namespace jllm::runtime
