// The CUDA backend: jllm's Backend interface over a GraphRunner on a DeviceApi. The device is
// the CUDA runtime in the product (backends/cuda/cudart/cudart_backend.h) and the CPU emulation
// in tests; everything above the device is the same code.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/exec/device_api.h"
#include "backends/cuda/lowering/tuning.h"

namespace jllm::cuda {

struct CudaBackendOptions {
  bool debug_sync = false;  // see RunnerOptions::debug_sync
  bool decode_ahead = true;  // see RunnerOptions::decode_ahead
  std::vector<std::string> omit_kernels;  // see RunnerOptions::omit_kernels
  std::string trace_dump;                 // see RunnerOptions::trace_dump
  // CUBINs from the plan for this device's architecture, by KernelSpec::ModuleKey().
  std::map<std::string, std::string> cubins;
  // The plan's per-shape GEMV knobs, measured on this GPU (lowering/tuning.h); empty: none.
  TuningTable tuning;
};

std::unique_ptr<Backend> CreateCudaBackendOn(std::unique_ptr<DeviceApi> device,
                                             CudaBackendOptions options);

}  // namespace jllm::cuda
