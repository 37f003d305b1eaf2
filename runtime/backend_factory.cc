#include "runtime/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu_ref/cpu_ref_backend.h"
#include "ir/absl_compat.h"

namespace jllm::runtime {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(std::string_view name) {
  if (name == "cpu" || name == "auto") return CreateCpuRefBackend();
  if (name == "cuda") {
    return absl::UnimplementedError(
        "the CUDA backend is not built yet (it arrives with the CUDA backend issue); use --backend cpu");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", Sv(name), "' (expected auto, cpu or cuda)"));
}

}  // namespace jllm::runtime
