// Backends by name: "cpu" (cpu_ref), "cuda" (the GPU), "auto" (the GPU when one is usable, else
// the CPU with a notice saying why). The one place that knows the concrete backends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "runtime/plan_file.h"

namespace jllm::runtime {

struct BackendRequest {
  std::string name = "auto";
  const Plan* plan = nullptr;  // for its ahead-of-time CUBINs and tuning, if any
  int device = 0;              // GPU ordinal
  bool debug_sync = false;     // cuda: synchronize after every kernel (finds faults)
};

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::vector<std::string> notices;  // one line each, for stderr
  std::string device;                // the GPU ("NVIDIA H200 (sm_90, 132 SMs)"); empty for the CPU
};

// Errors: an unknown name (listing cpu, cuda, auto); cuda without a usable GPU (the reason) or
// in a build without the CUDA backend.
absl::StatusOr<BackendChoice> CreateBackend(const BackendRequest& request);

// Why the cuda backend cannot run here ("" when it can): no GPU or driver, or a build without CUDA.
std::string GpuUnavailableReason();

// The names CreateBackend takes.
const std::vector<std::string>& BackendNames();

}  // namespace jllm::runtime
