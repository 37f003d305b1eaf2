#include "backends/cuda/cudart/device.h"

#include <cuda_runtime_api.h>

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/cudart/cuda_status.h"

namespace jllm::cuda {

DeviceAvailability ProbeDevices() {
  DeviceAvailability out;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    std::error_code ec;
    const bool driver_present = std::filesystem::exists("/dev/nvidiactl", ec) ||
                                std::filesystem::exists("/dev/nvhost-ctrl-gpu", ec);  // Jetson
    out.reason = !driver_present && (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice)
                     ? "no NVIDIA GPU or driver on this machine"
                     : absl::StrCat("no usable CUDA device: cudaGetDeviceCount failed with ",
                                    cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return out;
  }
  if (count == 0) {
    out.reason = "no CUDA device present";
    return out;
  }
  out.count = count;
  return out;
}

std::string DeviceInfo::Arch() const { return absl::StrCat("sm_", cc_major, cc_minor); }

std::string DeviceInfo::ToString() const {
  return absl::StrFormat("device %d: %s (%s), %d SMs, %.1f GiB, L2 %.1f MiB, smem/block %d KiB",
                         ordinal, name, Arch(), sm_count,
                         static_cast<double>(global_bytes) / (1 << 30),
                         static_cast<double>(l2_bytes) / (1 << 20),
                         static_cast<int>(shared_per_block_optin / 1024));
}

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal) {
  cudaDeviceProp prop{};
  JLLM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal),
                            absl::StrCat("properties of device ", ordinal));
  DeviceInfo info;
  info.ordinal = ordinal;
  info.name = prop.name;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.sm_count = prop.multiProcessorCount;
  info.global_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info.l2_bytes = prop.l2CacheSize;
  info.shared_per_block_optin = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  info.shared_per_sm = static_cast<int64_t>(prop.sharedMemPerMultiprocessor);
  info.memory_bus_bits = prop.memoryBusWidth;
  return info;
}

}  // namespace jllm::cuda
