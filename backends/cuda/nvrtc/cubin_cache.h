// On-disk cache of compiled CUBINs, keyed by a hash of everything that determines the output:
// NVRTC version, flags (arch and -D constants included), the kernel source and every header.
// The cache only saves time: a missing, unreadable or corrupt entry means "compile again", and a
// cache that cannot be written is silently skipped.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/cuda/nvrtc/nvrtc_compiler.h"

namespace jllm::cuda {

class CubinCache {
 public:
  // Directory from $JLLM_CUBIN_CACHE ("off" or empty disables it), else
  // $XDG_CACHE_HOME/jllm/cubin, else $HOME/.cache/jllm/cubin.
  static CubinCache FromEnvironment();

  // `dir` empty: no caching (every call compiles).
  explicit CubinCache(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  bool enabled() const { return !dir_.empty(); }

  // 32 hex digits naming the cache entry of `source_name` compiled with `options`.
  static absl::StatusOr<std::string> Key(std::string_view source_name, const NvrtcOptions& options);

  // The CUBIN of embedded kernel `source_name` for `options`: from the cache when present,
  // otherwise compiled and stored. `*hit` (if given) says which happened.
  absl::StatusOr<std::string> GetOrCompile(std::string_view source_name,
                                           const NvrtcOptions& options, bool* hit = nullptr) const;

 private:
  std::string dir_;
};

}  // namespace jllm::cuda
