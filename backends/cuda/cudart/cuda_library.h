// A CUBIN loaded with the runtime's library API (cudaLibraryLoadData), its kernels, and launch.
#pragma once

#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"

namespace jllm::cuda {

class CudaLibrary {
 public:
  // Loads `cubin` (an ELF image from NVRTC) into the current device's context.
  static absl::StatusOr<CudaLibrary> Load(std::string_view cubin, std::string_view what);

  CudaLibrary(CudaLibrary&& other) noexcept;
  CudaLibrary& operator=(CudaLibrary&& other) noexcept;
  CudaLibrary(const CudaLibrary&) = delete;
  CudaLibrary& operator=(const CudaLibrary&) = delete;
  ~CudaLibrary();

  // The kernel with C linkage name `name`; NotFound if the CUBIN has none.
  absl::StatusOr<cudaKernel_t> Kernel(const std::string& name) const;

 private:
  CudaLibrary(cudaLibrary_t library, std::string what) : library_(library), what_(std::move(what)) {}
  cudaLibrary_t library_ = nullptr;
  std::string what_;
};

// cudaLaunchKernel on a library kernel, then a check that the launch was accepted (configuration
// errors surface here; errors inside the kernel surface at the next synchronization).
absl::Status LaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                          cudaStream_t stream, void** args, std::string_view what);

}  // namespace jllm::cuda
