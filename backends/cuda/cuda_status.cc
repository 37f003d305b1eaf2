#include "backends/cuda/cuda_status.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace jllm::cuda {

absl::Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat("CUDA: ", Sv(what), ": ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
  switch (err) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevicePointer:
    case cudaErrorInvalidConfiguration:
    case cudaErrorMisalignedAddress:
      return absl::InvalidArgumentError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorNoKernelImageForDevice:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status NvrtcStatus(nvrtcResult res, std::string_view what) {
  if (res == NVRTC_SUCCESS) return absl::OkStatus();
  const std::string message = absl::StrCat("NVRTC: ", Sv(what), ": ", nvrtcGetErrorString(res));
  if (res == NVRTC_ERROR_INVALID_OPTION || res == NVRTC_ERROR_INVALID_INPUT) {
    return absl::InvalidArgumentError(message);
  }
  return absl::InternalError(message);
}

}  // namespace jllm::cuda
