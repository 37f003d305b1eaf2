// A kernel specialised for one node's exact shapes, as plain data: which kernel source, the -D
// constants NVRTC compiles it with, and the launch shape — no CUDA header, so jllm-compile lowers
// and compiles ahead of time without the CUDA runtime, and the plan file stores specs through the
// same field visitor (ir/fields.h) as IR attributes.
//
// The launch grid is (grid_x, grid_y), except that one dimension may scale with the step's
// token count T: token_dim 1 (x) or 2 (y) is multiplied by ceil(T / token_tile). A persistent
// kernel runs as many CTAs as the GPU holds at once instead: grid x becomes
// clamp(CTAs per SM x SMs, min_grid_x, grid_x), found at load from the device's occupancy.
// The cost fields feed --profile and jllm-bench: what one launch moves and computes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/byte_io.h"

namespace jllm::cuda {

struct KernelSpec {
  std::string label;    // for people: "gemv q4_K 9728x2560 +norm +swiglu"
  std::string source;   // embedded kernel file: "gemv.cu"
  std::string kernel;   // C symbol in it: "gemv"
  std::string defines;  // "JLLM_K=2560 JLLM_NM=1 ...": NAME=VALUE separated by spaces
  int64_t threads = 0;  // per CTA
  int64_t grid_x = 1;
  int64_t grid_y = 1;
  int64_t token_dim = 0;   // 0: fixed grid; 1/2: grid x/y times ceil(T / token_tile)
  int64_t token_tile = 1;
  int64_t smem = 0;        // dynamic shared memory bytes
  bool persistent = false;
  int64_t min_grid_x = 1;  // persistent: the fewest CTAs the kernel accepts
  // persistent: CTAs an SM at most (0: as many as fit), leaving the rest of each SM to the next
  // kernel's CTAs, which then start under programmatic dependent launch while this one runs.
  int64_t max_per_sm = 0;
  // Cost model.
  int64_t weight_bytes = 0;           // read once per launch
  int64_t bytes_per_token = 0;        // activations read + written per token
  int64_t kv_bytes_per_position = 0;  // cache bytes read per cached position (attention)
  int64_t flops_per_token = 0;

  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("label", s.label);
    v("source", s.source);
    v("kernel", s.kernel);
    v("defines", s.defines);
    v("threads", s.threads);
    v("grid_x", s.grid_x);
    v("grid_y", s.grid_y);
    v("token_dim", s.token_dim);
    v("token_tile", s.token_tile);
    v("smem", s.smem);
    v("persistent", s.persistent);
    v("min_grid_x", s.min_grid_x);
    v("max_per_sm", s.max_per_sm);
    v("weight_bytes", s.weight_bytes);
    v("bytes_per_token", s.bytes_per_token);
    v("kv_bytes_per_position", s.kv_bytes_per_position);
    v("flops_per_token", s.flops_per_token);
  }
  bool operator==(const KernelSpec&) const = default;

  // The compiled module depends only on these; equal keys share one CUBIN.
  std::string ModuleKey() const;
  // The -D constants as (name, value) pairs.
  std::vector<std::pair<std::string, std::string>> DefineList() const;
  // Grid for a step of n_tokens tokens.
  int64_t GridX(int64_t n_tokens) const;
  int64_t GridY(int64_t n_tokens) const;
  // A persistent kernel's grid x on a GPU of `sm_count` SMs where `resident` of its CTAs fit an
  // SM: as many as fit (at most max_per_sm an SM), within [min_grid_x, grid_x].
  int64_t PersistentGridX(int resident, int sm_count) const;
};

// Text form "label=... source=gemv.cu ..." (ir/fields.h), for dumps and messages.
std::string KernelSpecToText(const KernelSpec& spec);
// Binary form, for the plan file; reading checks ValidateKernelSpec.
void WriteKernelSpec(const KernelSpec& spec, ir::ByteWriter& w);
absl::StatusOr<KernelSpec> ReadKernelSpec(ir::ByteReader& r);

// Checks what the executor relies on: a known source file name pattern, defines of the form
// NAME=VALUE with identifier names, 1..1024 threads, a grid that fits CUDA's limits.
absl::Status ValidateKernelSpec(const KernelSpec& spec);

}  // namespace jllm::cuda
