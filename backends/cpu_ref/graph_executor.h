// Runs any verified ir::Graph in plain f32, node by node in graph order, with the semantics of
// ir/ops.h. The Backend (cpu_ref_backend.h) is a thin layer over it that feeds tokens and
// positions and reads logits; tests use it directly to run one-op graphs on arbitrary inputs.
//
// Every value gets a row-major f32 (or i32) buffer sized for the step's T and S; the output of
// a kv append stands for that layer's persistent KvCache instead. Weights are dequantized once,
// at Create. `sample` is not executed: the runtime samples from the logits itself, so the
// token output of a graph is left 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"
#include "backends/cpu_ref/kv_cache.h"
#include "backends/cpu_ref/thread_pool.h"
#include "backends/cpu_ref/weight_store.h"
#include "ir/graph.h"

namespace jllm::cpu_ref {

// One graph input's data for a step: `f32` for an f32 input, `i32` for an i32 one, with
// exactly the elements of its shape at this step's T and S.
struct Feed {
  std::string_view name;
  absl::Span<const float> f32;
  absl::Span<const int32_t> i32;
};

class GraphExecutor {
 public:
  // Verifies the graph, checks every node can run here, dequantizes the weights and allocates
  // the KV caches for options.max_context positions.
  static absl::StatusOr<std::unique_ptr<GraphExecutor>> Create(const ir::Graph& graph,
                                                              const WeightSource& weights,
                                                              const BackendOptions& options);

  // One step of `n_tokens` tokens after `pos0` positions already in the caches: binds T =
  // n_tokens and S = pos0 + n_tokens (<= max_context). Every graph input is fed exactly once.
  // Positions reaching a kv append or attention must lie in [0, S).
  // `last_row_only`, if >= 0, is a graph output made by a logits or matmul node and read by no
  // node: only its last row is computed, and its buffer holds just that row.
  // `node_seconds`, if given, receives each node's wall time.
  absl::Status Run(int64_t n_tokens, int64_t pos0, absl::Span<const Feed> feeds,
                   ir::ValueId last_row_only = -1, std::vector<double>* node_seconds = nullptr);

  // After Run: a value's elements, row-major, for this step's T and S (empty for kv caches).
  absl::Span<const float> f32(ir::ValueId v) const { return f32_[v]; }
  absl::Span<const int32_t> i32(ir::ValueId v) const { return i32_[v]; }
  // The cache of `layer`, or null if no node appends to that layer.
  const KvCache* kv_cache(int64_t layer) const;

  const ir::Graph& graph() const { return graph_; }
  int64_t max_context() const { return max_context_; }

 private:
  GraphExecutor(const ir::Graph& graph, int64_t max_context, int n_threads);
  // Checks every node can run here and allocates the KV caches the appends write.
  absl::Status PrepareNodes();
  absl::Status BindInputs(absl::Span<const Feed> feeds);
  absl::Status RunNode(const ir::Node& n, int index);

  // The ops (graph_executor_dense.cc and graph_executor_attention.cc).
  absl::Status RunEmbed(const ir::Node& n);
  void RunRmsNorm(const ir::Node& n);
  void RunMatMul(const ir::Node& n);  // matmul, matmul_group and logits
  void RunHeadRmsNorm(const ir::Node& n);
  void RunRope(const ir::Node& n);
  void RunSwiGlu(const ir::Node& n);
  void RunAdd(const ir::Node& n);
  absl::Status RunKvAppend(const ir::Node& n);
  absl::Status RunAttention(const ir::Node& n);
  absl::Status RunQkNormRopeKvAppend(const ir::Node& n);

  // Shared pieces.
  void HeadNormRope(const float* x, int64_t n_head, int64_t head_dim, const float* gamma,
                    float eps, const int32_t* pos, int64_t n_rot, float freq_base,
                    float freq_scale, float* y);
  absl::Status AppendRows(int64_t layer, const float* k, const float* v, const int32_t* pos);
  absl::Status CheckPositions(const int32_t* pos, std::string_view what) const;
  int64_t Width(ir::ValueId v) const;  // the last dimension of a value
  float* Out(ir::ValueId v) { return f32_[v].data(); }
  const float* In(ir::ValueId v) const { return f32_[v].data(); }
  const float* W(ir::WeightId w) const { return weights_.data(w); }

  ir::Graph graph_;
  int64_t max_context_;
  ThreadPool pool_;
  WeightStore weights_;
  std::vector<std::unique_ptr<KvCache>> caches_;  // by layer
  std::vector<int64_t> cache_layer_;              // by value: the layer a kv value stands for, or -1
  std::vector<std::vector<float>> f32_;           // by value
  std::vector<std::vector<int32_t>> i32_;         // by value
  // The current step.
  int64_t t_ = 0;
  int64_t s_ = 0;
  ir::ValueId last_row_only_ = -1;
};

}  // namespace jllm::cpu_ref
