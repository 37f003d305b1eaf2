#include "backends/cuda/cudart/cuda_library.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "backends/cuda/cudart/cuda_status.h"

namespace jllm::cuda {

absl::StatusOr<CudaLibrary> CudaLibrary::Load(std::string_view cubin, std::string_view what) {
  // cudaLibraryLoadData reads the image during the call; the string need not outlive it.
  const std::string image(cubin);
  cudaLibrary_t library = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(
      cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
      absl::StrCat("loading the CUBIN of ", Sv(what)));
  return CudaLibrary(library, std::string(what));
}

CudaLibrary::CudaLibrary(CudaLibrary&& other) noexcept
    : library_(std::exchange(other.library_, nullptr)), what_(std::move(other.what_)) {}

CudaLibrary& CudaLibrary::operator=(CudaLibrary&& other) noexcept {
  if (this != &other) {
    if (library_ != nullptr) cudaLibraryUnload(library_);
    library_ = std::exchange(other.library_, nullptr);
    what_ = std::move(other.what_);
  }
  return *this;
}

CudaLibrary::~CudaLibrary() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

absl::StatusOr<cudaKernel_t> CudaLibrary::Kernel(const std::string& name) const {
  cudaKernel_t kernel = nullptr;
  const cudaError_t err = cudaLibraryGetKernel(&kernel, library_, name.c_str());
  if (err == cudaErrorSymbolNotFound || err == cudaErrorSharedObjectSymbolNotFound) {
    cudaGetLastError();
    return absl::NotFoundError(absl::StrCat("kernel '", name, "' not found in ", what_));
  }
  JLLM_CUDA_RETURN_IF_ERROR(err, absl::StrCat("kernel '", name, "' of ", what_));
  return kernel;
}

absl::Status LaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes,
                          cudaStream_t stream, void** args, std::string_view what) {
  // The runtime takes a cudaKernel_t wherever it takes a kernel function pointer.
  JLLM_CUDA_RETURN_IF_ERROR(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block,
                                             args, dynamic_shared_bytes, stream),
                            absl::StrCat("launching ", Sv(what)));
  return CudaStatus(cudaGetLastError(), absl::StrCat("after launching ", Sv(what)));
}

}  // namespace jllm::cuda
