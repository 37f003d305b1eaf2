// Ahead-of-time compilation for jllm-compile --arch: every kernel spec for every architecture,
// with NVRTC only (no GPU, no CUDA runtime), several compiles at a time.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/lowering/kernel_plan_io.h"
#include "backends/cuda/lowering/kernel_spec.h"

namespace jllm::cuda {

// Each architecture's specs — lowered for it (LowerGraph with TargetForArch: its shared memory) —
// compiled for it. `progress(done, total)` is called after each compile. An NVRTC failure names
// the spec and arch.
absl::StatusOr<CubinsByArch> CompileAheadOfTime(const std::map<std::string, std::vector<KernelSpec>>& specs_by_arch,
                                                const std::function<void(size_t, size_t)>& progress = {});

}  // namespace jllm::cuda
