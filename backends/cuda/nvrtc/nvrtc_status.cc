#include "backends/cuda/nvrtc/nvrtc_status.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace jllm::cuda {

absl::Status NvrtcStatus(nvrtcResult res, std::string_view what) {
  if (res == NVRTC_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat("NVRTC: ", Sv(what), ": ", nvrtcGetErrorString(res));
  if (res == NVRTC_ERROR_INVALID_OPTION || res == NVRTC_ERROR_INVALID_INPUT) {
    return absl::InvalidArgumentError(message);
  }
  return absl::InternalError(message);
}

}  // namespace jllm::cuda
