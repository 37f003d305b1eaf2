// Quantized GEMV kernels (y = W x, W a GGUF Q4_K or Q6_K weight, x and y f32) for single-token
// decode: the spec (shape + tuning constants, all compile-time for NVRTC), and a loaded kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include "absl/status/statusor.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_library.h"
#include "backends/cuda/device.h"
#include "backends/cuda/nvrtc_compiler.h"
#include "ir/ggml_type.h"

namespace jllm::cuda {

// How a GEMV launch splits the work (see the comments atop kernels/q4_k_gemv.cu).
struct QuantGemvConfig {
  int rows_per_warp = 4;  // R: rows each lane computes at once, reusing its activations
  int row_groups = 4;     // NRG: row groups per CTA; a CTA tile is NRG*R rows
  int k_split = 1;        // KS: warps splitting one row group's columns
  int stages = 3;         // Q6_K only: shared-memory ring depth (tiles in flight + 1)
  int min_blocks = 1;     // __launch_bounds__ minimum CTAs per SM (caps registers)

  // "R=4,NRG=4,KS=1,STAGES=3,MINB=1" (keys in any order, any subset).
  static absl::StatusOr<QuantGemvConfig> Parse(std::string_view text);
  std::string ToString() const;
};

class QuantGemvSpec {
 public:
  // Q4_K or Q6_K, cols a multiple of 256, with the tuned default config for the shape.
  static absl::StatusOr<QuantGemvSpec> Make(GgmlType type, int64_t rows, int64_t cols);
  static absl::StatusOr<QuantGemvSpec> Make(GgmlType type, int64_t rows, int64_t cols,
                                            const QuantGemvConfig& config);
  static QuantGemvConfig DefaultConfig(GgmlType type, int64_t rows, int64_t cols);

  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const QuantGemvConfig& config() const { return config_; }

  std::string_view SourceName() const;  // "q4_k_gemv.cu"
  std::string KernelName() const;       // C symbol in the CUBIN: "q4_k_gemv"
  NvrtcOptions CompileOptions(std::string_view arch) const;

  int Threads() const { return 32 * config_.row_groups * config_.k_split; }
  int TileRows() const { return config_.rows_per_warp * config_.row_groups; }
  int64_t Tiles() const { return (rows_ + TileRows() - 1) / TileRows(); }
  bool Persistent() const { return type_ == GgmlType::kQ6_K; }
  int64_t DynamicSharedBytes() const;  // must match the kernel's kSmemBytes
  int64_t WeightBytes() const;         // rows * RowBytes(type, cols)
  std::string ToString() const;        // "q4_k_gemv 9728x2560 R=4,NRG=4,KS=1,..."

 private:
  QuantGemvSpec(GgmlType type, int64_t rows, int64_t cols, QuantGemvConfig config)
      : type_(type), rows_(rows), cols_(cols), config_(config) {}
  GgmlType type_;
  int64_t rows_;
  int64_t cols_;
  QuantGemvConfig config_;
};

// A GEMV kernel compiled (or taken from the cache) for one device and ready to launch.
class QuantGemv {
 public:
  static absl::StatusOr<QuantGemv> Load(const QuantGemvSpec& spec, const DeviceInfo& device,
                                        const CubinCache& cache);

  // y[rows] = W x[cols]. W: rows * RowBytes bytes in GGUF layout; w and x 16-byte aligned,
  // all three device pointers. Asynchronous on `stream`.
  absl::Status Launch(const void* w, const float* x, float* y, cudaStream_t stream) const;

  const QuantGemvSpec& spec() const { return spec_; }
  dim3 grid() const { return grid_; }

 private:
  QuantGemv(QuantGemvSpec spec, CudaLibrary library, cudaKernel_t kernel, dim3 grid)
      : spec_(std::move(spec)), library_(std::move(library)), kernel_(kernel), grid_(grid) {}
  QuantGemvSpec spec_;
  CudaLibrary library_;
  cudaKernel_t kernel_;
  dim3 grid_;
};

}  // namespace jllm::cuda
