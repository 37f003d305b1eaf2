#include "backends/cuda/nvrtc/cubin_cache.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

// Two independent 64-bit FNV-1a streams: a stable (unseeded) 128-bit content hash.
class Hasher {
 public:
  void Add(std::string_view bytes) {
    // Length first, so that ("ab","c") and ("a","bc") differ.
    const uint64_t n = bytes.size();
    AddRaw(std::string_view(reinterpret_cast<const char*>(&n), sizeof(n)));
    AddRaw(bytes);
  }
  std::string Hex() const { return absl::StrFormat("%016x%016x", a_, b_); }

 private:
  void AddRaw(std::string_view bytes) {
    for (unsigned char ch : bytes) {
      a_ = (a_ ^ ch) * 0x100000001b3ull;
      b_ = (b_ ^ (ch + 0x5bu)) * 0x00000100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
  }
  uint64_t a_ = 0xcbf29ce484222325ull;
  uint64_t b_ = 0x84222325cbf29ce4ull;
};

std::string EnvOr(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : fallback;
}

}  // namespace

CubinCache CubinCache::FromEnvironment() {
  if (const char* dir = std::getenv("JLLM_CUBIN_CACHE"); dir != nullptr) {
    const std::string value(dir);
    return CubinCache(value == "off" ? "" : value);
  }
  const std::string xdg = EnvOr("XDG_CACHE_HOME", "");
  if (!xdg.empty()) return CubinCache(xdg + "/jllm/cubin");
  const std::string home = EnvOr("HOME", "");
  if (!home.empty()) return CubinCache(home + "/.cache/jllm/cubin");
  return CubinCache("");
}

absl::StatusOr<std::string> CubinCache::Key(std::string_view source_name,
                                            const NvrtcOptions& options) {
  ASSIGN_OR_RETURN(std::string_view source, FindKernelSource(source_name));
  Hasher hasher;
  hasher.Add("jllm-cubin-v1");
  hasher.Add(NvrtcVersionString());
  for (const std::string& flag : NvrtcFlags(options)) hasher.Add(flag);
  hasher.Add(source_name);
  hasher.Add(source);
  for (const KernelSourceFile& header : KernelHeaders()) {
    hasher.Add(header.name);
    hasher.Add(header.text);
  }
  return hasher.Hex();
}

absl::StatusOr<std::string> CubinCache::GetOrCompile(std::string_view source_name,
                                                     const NvrtcOptions& options,
                                                     bool* hit) const {
  if (hit != nullptr) *hit = false;
  std::filesystem::path path;
  if (enabled()) {
    ASSIGN_OR_RETURN(std::string key, Key(source_name, options));
    path = std::filesystem::path(dir_) / (key + ".cubin");
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream bytes;
      bytes << in.rdbuf();
      std::string cubin = std::move(bytes).str();
      if (in.good() || in.eof()) {
        if (LooksLikeCubin(cubin)) {
          if (hit != nullptr) *hit = true;
          return cubin;
        }
      }
    }
  }
  ASSIGN_OR_RETURN(CompiledCubin compiled, CompileKernel(source_name, options));
  if (enabled()) {
    // Write to a unique temporary name and rename, so readers never see a partial file.
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    const std::filesystem::path tmp =
        path.string() + absl::StrCat(".tmp", static_cast<long>(::getpid()));
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(compiled.cubin.data(), static_cast<std::streamsize>(compiled.cubin.size()));
      out.close();
      if (!out) {
        std::filesystem::remove(tmp, ec);
        return std::move(compiled.cubin);
      }
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec) std::filesystem::remove(tmp, ec);
  }
  return std::move(compiled.cubin);
}

}  // namespace jllm::cuda
