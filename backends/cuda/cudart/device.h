// Which CUDA devices this process can use, and the properties the kernels are tuned by.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace jllm::cuda {

struct DeviceAvailability {
  int count = 0;       // usable devices; 0 when there is no GPU or no driver
  std::string reason;  // why count is 0 (for test skips and tool messages)
};

// Never fails: a machine without a GPU or driver is a normal case (CI, build machines).
DeviceAvailability ProbeDevices();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t global_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t shared_per_block_optin = 0;  // the most dynamic shared memory one block may request
  int64_t shared_per_sm = 0;
  int memory_bus_bits = 0;

  // "sm_90": the NVRTC architecture that runs natively on this device.
  std::string Arch() const;
  std::string ToString() const;
};

absl::StatusOr<DeviceInfo> QueryDevice(int ordinal);

}  // namespace jllm::cuda
