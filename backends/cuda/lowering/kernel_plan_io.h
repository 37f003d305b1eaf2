// The CUDA backend's plan sections (runtime/plan_file.h carries them as opaque bytes):
//   KSPC  the kernel specs jllm-compile lowered for sm_90 (what the runtime's lowering finds again there)
//   CUBN  CUBINs compiled ahead of time: for each arch, (KernelSpec::ModuleKey(), CUBIN) pairs
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/lowering/kernel_spec.h"

namespace jllm::cuda {

// arch ("sm_90") -> module key -> CUBIN image.
using CubinsByArch = std::map<std::string, std::map<std::string, std::string>>;

std::string SerializeKernelSpecs(const std::vector<KernelSpec>& specs);
absl::StatusOr<std::vector<KernelSpec>> ParseKernelSpecs(std::string_view bytes, const std::string& source);

std::string SerializeCubins(const CubinsByArch& cubins);
absl::StatusOr<CubinsByArch> ParseCubins(std::string_view bytes, const std::string& source);

}  // namespace jllm::cuda
