// NVRTC result codes as absl::Status, with what was being attempted.
#pragma once

#include <string_view>

#include <nvrtc.h>

#include "absl/status/status.h"

namespace jllm::cuda {

absl::Status NvrtcStatus(nvrtcResult res, std::string_view what);

}  // namespace jllm::cuda
