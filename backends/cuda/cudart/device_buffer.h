// Owning device allocation (cudaMalloc / cudaFree) with checked copies.
#pragma once

#include <cstddef>
#include <string_view>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"

namespace jllm::cuda {

class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(size_t bytes, std::string_view what);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }

  // Synchronous copies of `bytes` bytes at `offset`; bounds are checked.
  absl::Status CopyFromHost(const void* src, size_t bytes, size_t offset = 0);
  absl::Status CopyToHost(void* dst, size_t bytes, size_t offset = 0) const;

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace jllm::cuda
