// The CUDA backend on this machine's GPU: CudartDevice + the executor.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/backend.h"

namespace jllm::cuda {

struct CudaOpenOptions {
  int device = 0;
  // Synchronize after every launch and name the faulting kernel (also $JLLM_CUDA_SYNC=1).
  bool debug_sync = false;
  // The plan's ahead-of-time CUBINs: arch -> (KernelSpec::ModuleKey() -> CUBIN).
  const std::map<std::string, std::map<std::string, std::string>>* plan_cubins = nullptr;
  // The plan's tuning table (lowering/tuning.h, YAML; null: none). Used where it was measured on
  // this GPU; on another, the heuristics are (with a notice).
  const std::string* plan_tuning = nullptr;
};

struct CudaOpened {
  std::unique_ptr<Backend> backend;
  std::string arch;    // "sm_90"
  std::string device;  // DeviceIdentity(): "NVIDIA H200 (sm_90, 132 SMs)"
  std::string notice;  // e.g. that the plan's CUBINs are for other GPUs; empty if none
};

// FailedPrecondition naming the reason when there is no usable GPU (no driver, no device).
absl::StatusOr<CudaOpened> OpenCudaBackend(const CudaOpenOptions& options);

// Why no GPU is usable ("" if one is).
std::string CudaUnavailableReason();

}  // namespace jllm::cuda
