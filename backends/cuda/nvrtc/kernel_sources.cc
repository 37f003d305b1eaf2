#include "backends/cuda/nvrtc/kernel_sources.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace jllm::cuda {

absl::StatusOr<std::string_view> FindKernelSource(std::string_view name) {
  std::string known;
  for (const KernelSourceFile& file : KernelSourceFiles()) {
    if (file.name == name) return file.text;
    absl::StrAppend(&known, known.empty() ? "" : ", ", Sv(file.name));
  }
  return absl::NotFoundError(
      absl::StrCat("no embedded kernel source named '", Sv(name), "' (known: ", known, ")"));
}

std::vector<KernelSourceFile> KernelHeaders() {
  std::vector<KernelSourceFile> headers;
  for (const KernelSourceFile& file : KernelSourceFiles()) {
    const bool kernel = file.name.size() >= 3 && file.name.substr(file.name.size() - 3) == ".cu";
    if (!kernel) headers.push_back(file);
  }
  return headers;
}

}  // namespace jllm::cuda
