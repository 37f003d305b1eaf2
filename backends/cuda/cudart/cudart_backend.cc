#include "backends/cuda/cudart/cudart_backend.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/cudart/cudart_device.h"
#include "backends/cuda/cudart/device.h"
#include "backends/cuda/exec/cuda_backend.h"
#include "ir/status.h"

namespace jllm::cuda {

std::string CudaUnavailableReason() {
  const DeviceAvailability a = ProbeDevices();
  return a.count > 0 ? "" : a.reason;
}

absl::StatusOr<CudaOpened> OpenCudaBackend(const CudaOpenOptions& options) {
  const DeviceAvailability a = ProbeDevices();
  if (a.count == 0) return absl::FailedPreconditionError(a.reason);
  if (options.device < 0 || options.device >= a.count) {
    return absl::InvalidArgumentError(absl::StrCat("GPU ", options.device, " does not exist (", a.count,
                                                   " present)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<CudartDevice> device,
                   CudartDevice::Open(options.device, CubinCache::FromEnvironment()));
  CudaOpened out;
  out.arch = device->properties().arch;
  out.device = DeviceIdentity(device->properties());
  CudaBackendOptions bo;
  const char* sync = std::getenv("JLLM_CUDA_SYNC");
  bo.debug_sync = options.debug_sync || (sync != nullptr && std::strcmp(sync, "1") == 0);
  const char* ahead = std::getenv("JLLM_DECODE_AHEAD");  // an A/B switch: 0 waits for every step
  bo.decode_ahead = ahead == nullptr || std::strcmp(ahead, "0") != 0;
  if (options.plan_cubins != nullptr && !options.plan_cubins->empty()) {
    auto it = options.plan_cubins->find(out.arch);
    if (it != options.plan_cubins->end()) {
      bo.cubins = it->second;
    } else {
      std::vector<std::string> archs;
      for (const auto& [arch, cubins] : *options.plan_cubins) archs.push_back(arch);
      out.notice = absl::StrCat("the plan's ahead-of-time kernels are for ", absl::StrJoin(archs, ", "),
                                "; this GPU is ", out.arch, ": compiling them with NVRTC");
    }
  }
  if (options.plan_tuning != nullptr) {
    absl::StatusOr<TuningTable> parsed = ParseTuningYaml(*options.plan_tuning, "the plan's tuning section");
    if (!parsed.ok()) {
      return absl::Status(parsed.status().code(), absl::StrCat(parsed.status().message(),
                                                               "; compile the plan again (jllm-compile)"));
    }
    TuningTable tuning = *std::move(parsed);
    if (!tuning.device.empty() && tuning.device != out.device) {
      absl::StrAppend(&out.notice, out.notice.empty() ? "" : "; ", "the plan's tuning was measured on ", tuning.device,
                      ", this GPU is ", out.device, ": using the built-in choices (jllm-compile --tune on this GPU "
                      "tunes for it)");
    } else {
      bo.tuning = std::move(tuning);
    }
  }
  if (const char* omit = std::getenv("JLLM_OMIT"); omit != nullptr && *omit != '\0') {
    bo.omit_kernels = absl::StrSplit(omit, ',', absl::SkipEmpty());
    absl::StrAppend(&out.notice, out.notice.empty() ? "" : "; ", "JLLM_OMIT=", omit,
                    ": kernels whose label contains any of these are left out of every step, so the "
                    "outputs are wrong (a measuring aid; unset it for results)");
  }
  if (const char* dump = std::getenv("JLLM_TRACE_DUMP"); dump != nullptr) bo.trace_dump = dump;
  out.backend = CreateCudaBackendOn(std::move(device), std::move(bo));
  return out;
}

}  // namespace jllm::cuda
