#include "backends/cuda/lowering/kernel_plan_io.h"

#include "absl/strings/str_cat.h"
#include "ir/byte_io.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

constexpr uint32_t kSpecsVersion = 2;  // 2: max_per_sm
constexpr uint32_t kCubinsVersion = 1;
constexpr uint64_t kMaxCubinBytes = uint64_t{64} << 20;

}  // namespace

std::string SerializeKernelSpecs(const std::vector<KernelSpec>& specs) {
  ir::ByteWriter w;
  w.U32(kSpecsVersion);
  w.U32(static_cast<uint32_t>(specs.size()));
  for (const KernelSpec& s : specs) WriteKernelSpec(s, w);
  return w.Take();
}

absl::StatusOr<std::vector<KernelSpec>> ParseKernelSpecs(std::string_view bytes, const std::string& source) {
  ir::ByteReader r(bytes, source);
  ASSIGN_OR_RETURN(uint32_t version, r.U32("kernel specs version"));
  if (version != kSpecsVersion) return r.Error(absl::StrCat("kernel specs version ", version, " is unknown"));
  ASSIGN_OR_RETURN(uint32_t n, r.Count("kernel spec count", 16));
  std::vector<KernelSpec> specs;
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(KernelSpec s, ReadKernelSpec(r));
    specs.push_back(std::move(s));
  }
  if (!r.at_end()) return r.Error("bytes after the kernel specs");
  return specs;
}

std::string SerializeCubins(const CubinsByArch& cubins) {
  ir::ByteWriter w;
  w.U32(kCubinsVersion);
  w.U32(static_cast<uint32_t>(cubins.size()));
  for (const auto& [arch, modules] : cubins) {
    w.Str(arch);
    w.U32(static_cast<uint32_t>(modules.size()));
    for (const auto& [key, image] : modules) {
      w.Str(key);
      w.U64(image.size());
      w.Bytes(image);
    }
  }
  return w.Take();
}

absl::StatusOr<CubinsByArch> ParseCubins(std::string_view bytes, const std::string& source) {
  ir::ByteReader r(bytes, source);
  ASSIGN_OR_RETURN(uint32_t version, r.U32("CUBIN section version"));
  if (version != kCubinsVersion) return r.Error(absl::StrCat("CUBIN section version ", version, " is unknown"));
  ASSIGN_OR_RETURN(uint32_t n_arch, r.Count("architecture count", 8));
  CubinsByArch out;
  for (uint32_t a = 0; a < n_arch; ++a) {
    ASSIGN_OR_RETURN(std::string arch, r.Str("architecture", 16));
    ASSIGN_OR_RETURN(uint32_t n, r.Count("CUBIN count", 16));
    auto& modules = out[arch];
    for (uint32_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(std::string key, r.Str("module key", 4096));
      ASSIGN_OR_RETURN(uint64_t size, r.U64("CUBIN size"));
      if (size > kMaxCubinBytes) return r.Error(absl::StrCat("a CUBIN of ", size, " bytes"));
      ASSIGN_OR_RETURN(auto image, r.Bytes(size, "CUBIN"));
      modules[key] = std::string(reinterpret_cast<const char*>(image.data()), image.size());
    }
  }
  if (!r.at_end()) return r.Error("bytes after the CUBINs");
  return out;
}

}  // namespace jllm::cuda
