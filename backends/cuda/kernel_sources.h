// The CUDA kernel sources (backends/cuda/kernels/*.cu and *.cuh), embedded into the library at
// build time, so that compiling a kernel never depends on where the binary runs.
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::cuda {

struct KernelSourceFile {
  std::string_view name;  // file name, e.g. "q4_k_gemv.cu"
  std::string_view text;
};

// Every embedded file, sorted by name.
absl::Span<const KernelSourceFile> KernelSourceFiles();

// The text of the file called `name`; NotFound (listing the known files) if there is none.
absl::StatusOr<std::string_view> FindKernelSource(std::string_view name);

// The embedded headers (*.cuh), which every kernel may #include by file name.
std::vector<KernelSourceFile> KernelHeaders();

}  // namespace jllm::cuda
