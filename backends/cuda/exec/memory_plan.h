// Where everything a loaded graph needs lives in device memory, decided before anything is
// allocated, so that a model that does not fit is refused with numbers (and what would fit)
// instead of a CUDA out-of-memory error halfway through loading.
//
// Activations share one arena: each value gets an offset for its lifetime (first write to last
// read, node order), sized for the largest step (max_step_tokens rows), so values whose
// lifetimes do not overlap share bytes. KV caches, weights, the sampler's scratch and the
// decode step's state are separate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/lowering/lowering.h"
#include "ir/graph.h"

namespace jllm::cuda {

inline constexpr int64_t kDeviceAlign = 256;

// One layer's cache geometry (from its append node).
struct KvLayerShape {
  int64_t layer = -1;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  ir::KvDType type = ir::KvDType::kF16;
  int64_t ElementBytes() const;
  // K and V of one position, scales included.
  int64_t BytesPerPosition() const;
};

struct MemoryPlan {
  // The arena.
  std::vector<int64_t> value_offset;              // by value id; -1: not in the arena
  std::vector<std::vector<int64_t>> temp_offset;  // by node, by temp
  int64_t arena_bytes = 0;
  // Weights: offset of each weight in one slab (-1 if no node reads it).
  std::vector<int64_t> weight_offset;
  int64_t weight_bytes = 0;
  // KV caches.
  std::vector<KvLayerShape> kv_layers;  // layers that have a cache
  int64_t kv_bytes = 0;
  int64_t kv_bytes_per_position = 0;
  // Everything else: logits row, sampler scratch, workspace, step inputs, context tokens.
  int64_t workspace_floats = 0;
  int64_t workspace_counters = 0;
  int64_t other_bytes = 0;

  int64_t max_context = 0;
  int64_t max_step_tokens = 0;

  int64_t scratch_bytes() const { return arena_bytes + other_bytes; }
  int64_t total_bytes() const { return weight_bytes + kv_bytes + scratch_bytes(); }
  // "weights 2.50 GB + KV cache 0.59 GB (4096 positions, f16) + scratch 0.08 GB = 3.17 GB"
  std::string Summary() const;
};

absl::StatusOr<MemoryPlan> PlanMemory(const ir::Graph& graph, const LoweredGraph& lowered,
                                      int64_t max_context, int64_t max_step_tokens);

// The largest context (up to `limit`) whose plan fits in `free_bytes` less `reserve`; 0 if none.
absl::StatusOr<int64_t> LargestContextThatFits(const ir::Graph& graph, const LoweredGraph& lowered,
                                               int64_t max_step_tokens, int64_t free_bytes,
                                               int64_t reserve, int64_t limit);

// The plan's values that hold no arena bytes: the inputs %tokens and %pos (step inputs), the
// KV cache values, and %logits (its own buffers).
bool IsKvCacheValue(const ir::Graph& graph, ir::ValueId v);

}  // namespace jllm::cuda
