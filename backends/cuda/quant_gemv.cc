#include "backends/cuda/quant_gemv.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/strings/ascii.h"
#include "ir/absl_compat.h"
#include "backends/cuda/cuda_status.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

constexpr int64_t kQK = 256;

}  // namespace

absl::StatusOr<QuantGemvConfig> QuantGemvConfig::Parse(std::string_view text) {
  QuantGemvConfig config;
  const absl::string_view all = Sv(text);
  for (absl::string_view item : absl::StrSplit(all, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    kv.first = absl::StripAsciiWhitespace(kv.first);
    kv.second = absl::StripAsciiWhitespace(kv.second);
    int value = 0;
    if (!absl::SimpleAtoi(kv.second, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("GEMV config '", all, "': '", item, "' is not KEY=INTEGER"));
    }
    if (kv.first == "R") {
      config.rows_per_warp = value;
    } else if (kv.first == "NRG") {
      config.row_groups = value;
    } else if (kv.first == "KS") {
      config.k_split = value;
    } else if (kv.first == "STAGES") {
      config.stages = value;
    } else if (kv.first == "MINB") {
      config.min_blocks = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("GEMV config '", all, "': unknown key '",
                                                     kv.first, "' (valid: R, NRG, KS, STAGES, MINB)"));
    }
  }
  return config;
}

std::string QuantGemvConfig::ToString() const {
  return absl::StrCat("R=", rows_per_warp, ",NRG=", row_groups, ",KS=", k_split,
                      ",STAGES=", stages, ",MINB=", min_blocks);
}

QuantGemvConfig QuantGemvSpec::DefaultConfig(GgmlType type, int64_t rows, int64_t cols) {
  (void)rows;
  QuantGemvConfig config;
  const bool wide = cols > 4096;  // long rows (ffn_down): split the columns across warps
  if (type == GgmlType::kQ4_K) {
    config.rows_per_warp = 4;
    config.row_groups = 4;
    config.k_split = wide ? 2 : 1;
  } else {
    config.rows_per_warp = 2;
    config.row_groups = wide ? 2 : 4;
    config.k_split = wide ? 5 : 2;
    config.stages = 3;
  }
  return config;
}

absl::StatusOr<QuantGemvSpec> QuantGemvSpec::Make(GgmlType type, int64_t rows, int64_t cols) {
  return Make(type, rows, cols, DefaultConfig(type, rows, cols));
}

absl::StatusOr<QuantGemvSpec> QuantGemvSpec::Make(GgmlType type, int64_t rows, int64_t cols,
                                                  const QuantGemvConfig& config) {
  if (type != GgmlType::kQ4_K && type != GgmlType::kQ6_K) {
    return absl::UnimplementedError(
        absl::StrCat("quantized GEMV: no kernel for weight type ", Sv(GgmlTypeName(type)),
                     " (have q4_K, q6_K)"));
  }
  if (rows <= 0 || cols <= 0 || cols % kQK != 0 || rows > (int64_t{1} << 24) ||
      cols > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantized GEMV: bad shape ", rows, "x", cols,
                     " (rows in 1..2^24, cols a positive multiple of 256 up to 2^20)"));
  }
  const QuantGemvSpec spec(type, rows, cols, config);
  const int64_t blocks_per_row = cols / kQK;
  if (config.rows_per_warp < 1 || config.rows_per_warp > 16 || config.row_groups < 1 ||
      config.k_split < 1 || spec.Threads() > 1024 || config.min_blocks < 1 ||
      config.min_blocks > 32) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantized GEMV: bad config ", config.ToString(),
                     " (R in 1..16, NRG and KS >= 1, 32*NRG*KS <= 1024 threads, MINB in 1..32)"));
  }
  if (type == GgmlType::kQ6_K) {
    const int64_t row_bytes = blocks_per_row * 210;
    if (row_bytes % 4 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Q6_K GEMV needs an even number of blocks per row (4-byte aligned rows); cols = ", cols));
    }
    if ((spec.TileRows() * row_bytes) % 16 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Q6_K GEMV: a tile of ", spec.TileRows(), " rows of ", row_bytes,
          " bytes is not a multiple of 16 bytes; choose R*NRG a multiple of 4"));
    }
    if (config.stages < 2 || config.stages > 8) {
      return absl::InvalidArgumentError(
          absl::StrCat("Q6_K GEMV: STAGES must be in 2..8, got ", config.stages));
    }
  }
  return spec;
}

std::string_view QuantGemvSpec::SourceName() const {
  return type_ == GgmlType::kQ4_K ? "q4_k_gemv.cu" : "q6_k_gemv.cu";
}

std::string QuantGemvSpec::KernelName() const {
  return type_ == GgmlType::kQ4_K ? "q4_k_gemv" : "q6_k_gemv";
}

NvrtcOptions QuantGemvSpec::CompileOptions(std::string_view arch) const {
  NvrtcOptions options;
  options.arch = std::string(arch);
  options.defines = {
      {"JLLM_ROWS", absl::StrCat(rows_)},
      {"JLLM_COLS", absl::StrCat(cols_)},
      {"JLLM_R", absl::StrCat(config_.rows_per_warp)},
      {"JLLM_NRG", absl::StrCat(config_.row_groups)},
      {"JLLM_KS", absl::StrCat(config_.k_split)},
      {"JLLM_MIN_BLOCKS", absl::StrCat(config_.min_blocks)},
  };
  if (type_ == GgmlType::kQ6_K) {
    options.defines.emplace_back("JLLM_STAGES", absl::StrCat(config_.stages));
  }
  return options;
}

int64_t QuantGemvSpec::DynamicSharedBytes() const {
  if (type_ != GgmlType::kQ6_K) return 0;  // Q4_K uses static shared memory only
  // Mirrors kSmemBytes in kernels/q6_k_gemv.cu.
  const int64_t units = 8 * (cols_ / kQK);
  const int64_t xs_bytes = 8 * units * 16;
  const int64_t warps = int64_t{config_.row_groups} * config_.k_split;
  const int64_t partial_bytes = (warps * config_.rows_per_warp * 4 + 15) / 16 * 16;
  const int64_t tile_bytes = int64_t{TileRows()} * (cols_ / kQK) * 210;
  return xs_bytes + partial_bytes + config_.stages * tile_bytes;
}

int64_t QuantGemvSpec::WeightBytes() const { return rows_ * RowBytes(type_, cols_); }

std::string QuantGemvSpec::ToString() const {
  return absl::StrCat(KernelName(), " ", rows_, "x", cols_, " ", config_.ToString());
}

absl::StatusOr<QuantGemv> QuantGemv::Load(const QuantGemvSpec& spec, const DeviceInfo& device,
                                          const CubinCache& cache) {
  const int64_t smem = spec.DynamicSharedBytes();
  if (smem > device.shared_per_block_optin) {
    return absl::ResourceExhaustedError(
        absl::StrCat(spec.ToString(), " needs ", smem, " bytes of shared memory per block; ",
                     device.name, " allows ", device.shared_per_block_optin));
  }
  ASSIGN_OR_RETURN(std::string cubin,
                   cache.GetOrCompile(spec.SourceName(), spec.CompileOptions(device.Arch())));
  ASSIGN_OR_RETURN(CudaLibrary library, CudaLibrary::Load(cubin, spec.ToString()));
  ASSIGN_OR_RETURN(cudaKernel_t kernel, library.Kernel(spec.KernelName()));
  if (smem > 48 * 1024) {
    JLLM_CUDA_RETURN_IF_ERROR(
        cudaKernelSetAttributeForDevice(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem), device.ordinal),
        absl::StrCat("raising the shared memory limit of ", spec.ToString()));
  }
  dim3 grid(static_cast<unsigned>(spec.Tiles()));
  if (spec.Persistent()) {
    // One wave of persistent CTAs; each loops over tiles.
    int per_sm = 0;
    JLLM_CUDA_RETURN_IF_ERROR(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, reinterpret_cast<const void*>(kernel), spec.Threads(), static_cast<size_t>(smem)),
        absl::StrCat("occupancy of ", spec.ToString()));
    if (per_sm < 1) {
      return absl::ResourceExhaustedError(
          absl::StrCat(spec.ToString(), " cannot run even one CTA per SM on ", device.name));
    }
    grid.x = static_cast<unsigned>(std::min<int64_t>(spec.Tiles(), int64_t{per_sm} * device.sm_count));
  }
  return QuantGemv(spec, std::move(library), kernel, grid);
}

absl::Status QuantGemv::Launch(const void* w, const float* x, float* y, cudaStream_t stream) const {
  if (w == nullptr || x == nullptr || y == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(spec_.ToString(), ": null pointer argument"));
  }
  if (reinterpret_cast<uintptr_t>(w) % 16 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec_.ToString(), ": weights and x must be 16-byte aligned"));
  }
  void* args[] = {&w, &x, &y};
  return LaunchKernel(kernel_, grid_, dim3(static_cast<unsigned>(spec_.Threads())),
                      static_cast<size_t>(spec_.DynamicSharedBytes()), stream, args,
                      spec_.ToString());
}

}  // namespace jllm::cuda
