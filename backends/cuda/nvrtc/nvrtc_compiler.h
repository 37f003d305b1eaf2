// NVRTC front end: compiles one embedded kernel source, specialized by -D constants, to a CUBIN
// for one GPU architecture. No GPU is needed, so CI compiles every kernel for every target.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/cuda/nvrtc/kernel_sources.h"

namespace jllm::cuda {

struct NvrtcOptions {
  std::string arch;  // real architecture: "sm_87", "sm_90"
  // -DNAME=VALUE, in this order; the shapes and tuning constants of the kernel.
  std::vector<std::pair<std::string, std::string>> defines;
  // Adds --ptxas-options=-v: registers, shared memory and spills land in CompiledCubin::log.
  bool ptxas_verbose = false;
};

struct CompiledCubin {
  std::string cubin;  // ELF image for cudaLibraryLoadData
  std::string log;    // NVRTC's program log (warnings, ptxas report); may be empty
};

// True for "sm_NN" / "sm_NNa" / "sm_NNNf" with a number >= 80 (the kernels use cp.async).
absl::Status ValidateArch(std::string_view arch);

// The exact NVRTC flags CompileKernel passes for `options` (also part of the cache key).
std::vector<std::string> NvrtcFlags(const NvrtcOptions& options);

// "13.0": the NVRTC library this binary runs with.
std::string NvrtcVersionString();

// Compiles `source` (named `name` in diagnostics) with `headers` available to #include.
// Errors carry the NVRTC log, so a kernel typo reads like a compiler error.
absl::StatusOr<CompiledCubin> CompileSource(std::string_view name, std::string_view source,
                                            absl::Span<const KernelSourceFile> headers,
                                            const NvrtcOptions& options);

// Compiles the embedded kernel file `source_name` with every embedded header available.
absl::StatusOr<CompiledCubin> CompileKernel(std::string_view source_name,
                                            const NvrtcOptions& options);

// True if `image` starts with the ELF magic (what a CUBIN is).
bool LooksLikeCubin(std::string_view image);

}  // namespace jllm::cuda
