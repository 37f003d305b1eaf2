// CUDA runtime error codes as absl::Status, with what was being attempted.
#pragma once

#include <string_view>

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "ir/status.h"

namespace jllm::cuda {

// OK for cudaSuccess; otherwise an error naming `what`, the CUDA error name and its text.
absl::Status CudaStatus(cudaError_t err, std::string_view what);

}  // namespace jllm::cuda

// Returns from the enclosing function if a CUDA runtime call fails.
#define JLLM_CUDA_RETURN_IF_ERROR(expr, what) \
  RETURN_IF_ERROR(::jllm::cuda::CudaStatus((expr), (what)))
