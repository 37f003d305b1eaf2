// kv-dtype: chooses the KV cache element type of every layer and records it in the graph
// (graph.kv_dtypes and the dtype of each layer's cache value).
//
// Options:
//   dtype: f16 | int8 | f32 | auto (default f16)
//   memory_budget_mib: N          KV cache budget for auto, in MiB (required with auto)
//   context_length: N             tokens the cache must hold for auto (required with auto:
//                                 the context jllm-run will use, -c)
//   layers: {LAYER: f16|int8|f32} per-layer overrides, applied after dtype
// auto picks f16 when context_length tokens of f16 cache fit in the budget, else int8
// (ir::KvBytesPerTokenPerLayer gives the sizes); when not even int8 fits, it is an error that
// says what context would fit, never a cache over the budget. The report states the sizes.
// The runtime still checks the context against the memory it finds; this only fixes the
// storage type ahead of time.
// f32 stores K and V exactly, at twice the f16 size; it exists to validate against float32
// references (tests/oracle), so auto never picks it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

struct KvDTypeOptions {
  enum class Choice { kF16, kInt8, kF32, kAuto };
  Choice dtype = Choice::kF16;
  std::optional<int64_t> memory_budget_mib;
  std::optional<int64_t> context_length;
  std::map<int64_t, ir::KvDType> layers;
};

// Reads and checks the options (no graph needed): unknown dtype names, auto without a budget,
// non-numeric or negative numbers, bad layer keys are errors naming the option.
absl::StatusOr<KvDTypeOptions> ParseKvDTypeOptions(const PassOptions& options);
absl::Status CheckKvDTypeOptions(const PassOptions& options);

// Bytes of KV cache for `tokens` tokens across all layers if every layer used `t`.
int64_t KvCacheBytes(const ir::ModelConfig& config, ir::KvDType t, int64_t tokens);

absl::StatusOr<PassResult> RunKvDType(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
