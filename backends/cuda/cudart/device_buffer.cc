#include "backends/cuda/cudart/device_buffer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "backends/cuda/cudart/cuda_status.h"

namespace jllm::cuda {

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes, std::string_view what) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  JLLM_CUDA_RETURN_IF_ERROR(cudaMalloc(&buffer.data_, bytes),
                            absl::StrCat("allocating ", bytes, " bytes for ", Sv(what)));
  buffer.size_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

absl::Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes, size_t offset) {
  if (offset > size_ || bytes > size_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("copy of ", bytes, " bytes at offset ", offset,
                                              " into a device buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  return CudaStatus(
      cudaMemcpy(static_cast<char*>(data_) + offset, src, bytes, cudaMemcpyHostToDevice),
      "copy host -> device");
}

absl::Status DeviceBuffer::CopyToHost(void* dst, size_t bytes, size_t offset) const {
  if (offset > size_ || bytes > size_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("copy of ", bytes, " bytes at offset ", offset,
                                              " out of a device buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  return CudaStatus(
      cudaMemcpy(dst, static_cast<const char*>(data_) + offset, bytes, cudaMemcpyDeviceToHost),
      "copy device -> host");
}

}  // namespace jllm::cuda
