#include "runtime/version.h"

#ifndef JLLM_VERSION_STRING
#define JLLM_VERSION_STRING "unknown"
#endif

namespace jllm::runtime {

std::string_view JllmVersion() { return JLLM_VERSION_STRING; }

}  // namespace jllm::runtime
