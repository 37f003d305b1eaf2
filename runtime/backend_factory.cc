#include "runtime/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "ir/status.h"
#if JLLM_HAVE_CUDA
#include "backends/cuda/cudart/cudart_backend.h"
#include "backends/cuda/lowering/kernel_plan_io.h"
#endif

namespace jllm::runtime {

const std::vector<std::string>& BackendNames() {
  static const std::vector<std::string> names = {"auto", "cuda", "cpu"};
  return names;
}

std::string GpuUnavailableReason() {
#if JLLM_HAVE_CUDA
  return cuda::CudaUnavailableReason();
#else
  return "this jllm was built without the CUDA backend (no CUDA toolkit at build time)";
#endif
}

absl::StatusOr<BackendChoice> CreateBackend(const BackendRequest& request) {
  BackendChoice out;
  if (request.name == "cpu") {
    out.backend = CreateCpuRefBackend();
    return out;
  }
  if (request.name != "cuda" && request.name != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("unknown backend '", request.name,
                                                   "' (valid: auto, cuda, cpu)"));
  }
#if JLLM_HAVE_CUDA
  const std::string reason = cuda::CudaUnavailableReason();
  if (!reason.empty()) {
    if (request.name == "cuda") {
      return absl::FailedPreconditionError(
          absl::StrCat("--backend cuda: ", reason, "; use --backend cpu (or auto) to run on the CPU"));
    }
    out.notices.push_back(absl::StrCat("no usable GPU (", reason, "): running on the CPU (cpu_ref)"));
    out.backend = CreateCpuRefBackend();
    return out;
  }
  cuda::CubinsByArch cubins;
  if (request.plan != nullptr) {
    auto it = request.plan->sections.find(std::string(kCubinsSection));
    if (it != request.plan->sections.end()) {
      ASSIGN_OR_RETURN(cubins, cuda::ParseCubins(it->second, "the plan's CUBIN section"));
    }
  }
  cuda::CudaOpenOptions options;
  options.device = request.device;
  options.debug_sync = request.debug_sync;
  options.plan_cubins = &cubins;
  if (request.plan != nullptr) {
    auto it = request.plan->sections.find(std::string(kTuningSection));
    if (it != request.plan->sections.end()) options.plan_tuning = &it->second;
  }
  ASSIGN_OR_RETURN(cuda::CudaOpened opened, cuda::OpenCudaBackend(options));
  if (!opened.notice.empty()) out.notices.push_back(opened.notice);
  out.device = opened.device;
  out.backend = std::move(opened.backend);
  return out;
#else
  if (request.name == "cuda") {
    return absl::FailedPreconditionError(
        "--backend cuda: this jllm was built without the CUDA backend (no CUDA toolkit at build "
        "time); use --backend cpu");
  }
  out.notices.push_back("this jllm was built without the CUDA backend: running on the CPU (cpu_ref)");
  out.backend = CreateCpuRefBackend();
  return out;
#endif
}

}  // namespace jllm::runtime
