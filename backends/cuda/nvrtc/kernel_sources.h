// The CUDA kernel sources — backends/cuda/kernels/* and the host headers they share
// (quant/block_layout.h, ...) — embedded into the library at build time, so that compiling a
// kernel never depends on where the binary runs.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::cuda {

struct KernelSourceFile {
  std::string_view name;  // "gemv.cu" (kernels/) or the repository path of a shared header
  std::string_view text;
};

// Every embedded file, sorted by name.
absl::Span<const KernelSourceFile> KernelSourceFiles();

// The text of the file called `name`; NotFound (listing the known files) if there is none.
absl::StatusOr<std::string_view> FindKernelSource(std::string_view name);

// Every embedded file but the kernels (*.cu): what a kernel may #include, by its name.
std::vector<KernelSourceFile> KernelHeaders();

}  // namespace jllm::cuda
