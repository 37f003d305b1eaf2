// plan.bin: everything jllm-compile decided, so that jllm-run decides nothing again
// (DESIGN.md "The plan file").
//
// Layout (little-endian). The first four fields keep this meaning in every format version, so
// any jllm can say what a plan is and who wrote it:
//   "JLLMPLAN"            8-byte magic
//   u32 format version    kPlanFormatVersion; a newer one is refused before anything else
//   string                the jllm version that wrote it (u32 length <= 64, bytes)
//   u64 payload size      bytes of the sections that follow
//   sections              4-byte tag, u64 size, body; each exactly once, in this order:
//     PASS  the pass configuration: YAML text, then per pass (name, enabled, changed, report)
//     GRPH  the lowered graph (ir/serialize.h)
//     TOKN  the tokenizer and chat template (runtime/plan_tokenizer_io.h)
//     WSRC  the weight source: GGUF absolute path + fingerprint (runtime/gguf_fingerprint.h),
//           then u32 n and n × (name, u64 offset, u64 nbytes, u64 XXH3-64) (runtime/tensor_hash.h)
//   optional sections     after those, any number of (4-byte tag, u64 size, body), each tag at
//                         most once; a reader keeps them all and uses the ones it knows:
//     KSPC  the CUDA backend's kernel specs as lowered for sm_90 (backends/cuda/lowering/kernel_plan_io.h)
//     CUBN  CUBINs compiled ahead of time, per GPU architecture (jllm-compile --arch), each from
//           the specs lowered for that architecture's shared memory (lowering_target.h)
//     TUNE  per-shape GEMV knobs measured on a GPU (jllm-compile --tune or --tuning FILE; YAML,
//           backends/cuda/lowering/tuning.h): KSPC and CUBN are lowered with them
//   u64 checksum          StableHash64 of every byte before it
// Checks on reading, in order: magic, format version, length (truncation), checksum
// (corruption), then each section, bounds-checked. Each failure has its own message saying
// what is wrong and to re-run jllm-compile.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontends/gguf/tokenizer_data.h"
#include "ir/graph.h"
#include "runtime/plan_weights.h"

namespace jllm::runtime {

inline constexpr std::string_view kPlanMagic = "JLLMPLAN";
inline constexpr uint32_t kPlanFormatVersion = 3;  // 2: optional sections; 3: per-tensor hashes in WSRC

// What one pass of the pipeline did, as jllm-compile printed it.
struct PassRecord {
  std::string name;    // the pass's registered name, e.g. "group-qkv"
  bool enabled = false;
  bool changed = false;
  std::string report;  // the pass's own summary of what it changed
  bool operator==(const PassRecord&) const = default;
};

struct Plan {
  std::string jllm_version;  // who wrote it (set by SerializePlan; read back from the file)
  std::string passes_yaml;   // the pipeline configuration text (empty: the built-in defaults)
  std::vector<PassRecord> passes;
  ir::Graph graph;
  gguf::TokenizerData tokenizer;
  WeightSourceInfo weights;
  // The optional sections by tag (backend data the runtime carries but does not interpret).
  std::map<std::string, std::string> sections;
};

inline constexpr std::string_view kKernelSpecsSection = "KSPC";
inline constexpr std::string_view kCubinsSection = "CUBN";
inline constexpr std::string_view kTuningSection = "TUNE";

// The plan file image; writes this build's JllmVersion() as the writer.
std::string SerializePlan(const Plan& plan);
// `source` names the plan in messages (its path).
absl::StatusOr<Plan> DeserializePlan(std::string_view bytes, const std::string& source);

// Writes `path` through fileio::OutputFile (a unique temporary file renamed over it), so a
// failed write never leaves half a plan; a `path` that is the plan's GGUF or one of `inputs`
// (e.g. the passes file) is refused.
absl::Status WritePlanFile(const Plan& plan, const std::string& path,
                           absl::Span<const std::string> inputs = {});
// Checks the magic and version from the first bytes before reading the rest, so pointing it at
// a large non-plan file (a GGUF) fails fast.
absl::StatusOr<Plan> ReadPlanFile(const std::string& path);

}  // namespace jllm::runtime
