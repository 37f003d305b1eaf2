// The weights a graph's nodes use, dequantized once at load into f32 (simple, and the cheapest
// per-step arithmetic; a 0.6B model takes ~3 GB this way). A weight several nodes share (tied
// embeddings) is stored once.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/cpu_ref/thread_pool.h"
#include "ir/graph.h"

namespace jllm::cpu_ref {

class WeightStore {
 public:
  // Errors name the weight: bytes missing or short in `source`, or a type jllm::quant cannot
  // dequantize. Every type is checked before anything big is allocated.
  static absl::StatusOr<WeightStore> Load(const ir::Graph& graph, const WeightSource& source,
                                          ThreadPool& pool);

  // The f32 elements of weight `w` in ggml order (ne[0] contiguous); null if no node uses it.
  const float* data(ir::WeightId w) const;

 private:
  struct Free {
    void operator()(float* p) const;
  };
  // By WeightId; null if unused. Uninitialized on allocation: dequantization is the first write.
  std::vector<std::unique_ptr<float[], Free>> f32_;
};

}  // namespace jllm::cpu_ref
