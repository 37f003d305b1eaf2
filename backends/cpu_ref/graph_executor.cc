#include "backends/cpu_ref/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/verify.h"

namespace jllm::cpu_ref {
namespace {

// No single value may need more than this many elements at T = S = max_context (16 GiB of
// f32): a graph declaring absurd widths is refused instead of exhausting memory.
constexpr int64_t kMaxValueElements = int64_t{1} << 32;

std::string ValueName(const ir::Graph& g, ir::ValueId v) { return "%" + g.name_of(v); }

// Elements of `shape` with T and S bound; -1 past kMaxValueElements.
int64_t Elements(const ir::Shape& shape, int64_t t, int64_t s) {
  int64_t n = 1;
  for (int64_t d : shape.dims) {
    const int64_t size = d == ir::kDimT ? t : d == ir::kDimS ? s : d;
    if (size < 1 || n > kMaxValueElements / size) return -1;
    n *= size;
  }
  return n;
}

bool AppendsKv(ir::OpKind op) {
  return op == ir::OpKind::kKvAppend || op == ir::OpKind::kQkNormRopeKvAppend;
}

}  // namespace

GraphExecutor::GraphExecutor(const ir::Graph& graph, int64_t max_context, int n_threads)
    : graph_(graph), max_context_(max_context), pool_(n_threads) {}

absl::StatusOr<std::unique_ptr<GraphExecutor>> GraphExecutor::Create(
    const ir::Graph& graph, const WeightSource& weights, const BackendOptions& options) {
  if (absl::Status st = ir::Verify(graph); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu_ref: the graph fails verification: ", st.message()));
  }
  if (options.max_context < 1 || options.max_context > graph.config.context_length) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu_ref: max_context = ", options.max_context, " must be in [1, ",
        graph.config.context_length, "] (the model's context_length)"));
  }
  std::unique_ptr<GraphExecutor> exec(
      new GraphExecutor(graph, options.max_context, options.n_threads));
  RETURN_IF_ERROR(exec->PrepareNodes());
  ASSIGN_OR_RETURN(exec->weights_, WeightStore::Load(graph, weights, exec->pool_));
  return exec;
}

absl::Status GraphExecutor::PrepareNodes() {
  const ir::Graph& g = graph_;
  cache_layer_.assign(g.values.size(), -1);
  caches_.resize(g.kv_dtypes.size());
  for (ir::ValueId v : g.inputs) {
    const ir::DType t = g.type_of(v).dtype;
    if (t != ir::DType::kF32 && t != ir::DType::kI32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_ref: graph input ", ValueName(g, v), " is ", Sv(ir::DTypeName(t)),
          "; only f32 and i32 inputs can be fed"));
    }
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const std::string where = absl::StrCat("cpu_ref: ", ir::DescribeNode(g, static_cast<int>(i)));
    switch (n.op) {
      case ir::OpKind::kEmbed: case ir::OpKind::kRmsNorm: case ir::OpKind::kMatMul:
      case ir::OpKind::kHeadRmsNorm: case ir::OpKind::kRope: case ir::OpKind::kKvAppend:
      case ir::OpKind::kAttention: case ir::OpKind::kSwiGlu: case ir::OpKind::kAdd:
      case ir::OpKind::kLogits: case ir::OpKind::kSample: case ir::OpKind::kMatMulGroup:
      case ir::OpKind::kQkNormRopeKvAppend:
        break;
      default:
        return absl::UnimplementedError(absl::StrCat(where, ": cpu_ref cannot run this op"));
    }
    if (AppendsKv(n.op)) {
      int64_t layer, n_head_kv, head_dim;
      if (n.op == ir::OpKind::kKvAppend) {
        const auto& a = n.attrs_as<ir::KvAppendAttrs>();
        layer = a.layer, n_head_kv = a.n_head_kv, head_dim = a.head_dim;
      } else {
        const auto& a = n.attrs_as<ir::QkNormRopeKvAppendAttrs>();
        layer = a.layer, n_head_kv = a.n_head_kv, head_dim = a.head_dim;
      }
      if (n_head_kv * head_dim > kMaxValueElements / (2 * max_context_)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": a KV cache of ", max_context_,
                                                       " positions would be too large"));
      }
      caches_[layer] = std::make_unique<KvCache>(g.kv_dtypes[layer], max_context_, n_head_kv,
                                                 head_dim);
      cache_layer_[n.outputs.back()] = layer;
    }
    if (n.op == ir::OpKind::kAttention) {
      // Verify checks the cache's width only; the head split must match the append's too.
      const auto& a = n.attrs_as<ir::AttentionAttrs>();
      const KvCache& cache = *caches_[cache_layer_[n.inputs[1]]];
      if (cache.n_head_kv() != a.n_head_kv || cache.head_dim() != a.head_dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": n_head_kv = ", a.n_head_kv, ", head_dim = ", a.head_dim,
            " differ from those of the kv append that wrote ", ValueName(g, n.inputs[1])));
      }
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (cache_layer_[v] >= 0) continue;
    const ir::ValueType& t = g.type_of(static_cast<ir::ValueId>(v));
    if (Elements(t.shape, max_context_, max_context_) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_ref: value ", ValueName(g, static_cast<ir::ValueId>(v)), " (",
          ir::ValueTypeToString(t), ") would exceed ", kMaxValueElements, " elements at ",
          max_context_, " positions"));
    }
  }
  f32_.resize(g.values.size());
  i32_.resize(g.values.size());
  return absl::OkStatus();
}

const KvCache* GraphExecutor::kv_cache(int64_t layer) const {
  if (layer < 0 || static_cast<size_t>(layer) >= caches_.size()) return nullptr;
  return caches_[layer].get();
}

int64_t GraphExecutor::Width(ir::ValueId v) const {
  return graph_.type_of(v).shape.dims.back();
}

absl::Status GraphExecutor::BindInputs(absl::Span<const Feed> feeds) {
  std::vector<bool> fed(graph_.values.size(), false);
  for (const Feed& f : feeds) {
    const std::optional<ir::ValueId> v = graph_.FindValue(f.name);
    if (!v || std::find(graph_.inputs.begin(), graph_.inputs.end(), *v) == graph_.inputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu_ref: fed '", Sv(f.name), "', which is not a graph input"));
    }
    if (fed[*v]) {
      return absl::InvalidArgumentError(absl::StrCat("cpu_ref: input %", Sv(f.name), " is fed twice"));
    }
    fed[*v] = true;
    const ir::ValueType& t = graph_.type_of(*v);
    const int64_t n = Elements(t.shape, t_, s_);
    const bool is_f32 = t.dtype == ir::DType::kF32;
    const size_t given = is_f32 ? f.f32.size() : f.i32.size();
    if (static_cast<int64_t>(given) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_ref: input %", Sv(f.name), " (", ir::ValueTypeToString(t), ") needs ", n, " ",
          is_f32 ? "f32" : "i32", " elements at T = ", t_, ", S = ", s_, "; got ", given));
    }
    if (is_f32) {
      f32_[*v].assign(f.f32.begin(), f.f32.end());
    } else {
      i32_[*v].assign(f.i32.begin(), f.i32.end());
    }
  }
  for (ir::ValueId v : graph_.inputs) {
    if (!fed[v]) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu_ref: graph input ", ValueName(graph_, v), " was not fed"));
    }
  }
  return absl::OkStatus();
}

absl::Status GraphExecutor::Run(int64_t n_tokens, int64_t pos0, absl::Span<const Feed> feeds,
                                ir::ValueId last_row_only, std::vector<double>* node_seconds) {
  if (n_tokens < 1 || pos0 < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cpu_ref: a step of ", n_tokens,
                                                   " tokens at position ", pos0));
  }
  if (pos0 > max_context_ - n_tokens) {
    return absl::OutOfRangeError(absl::StrCat(
        "cpu_ref: positions [", pos0, ", ", pos0 + n_tokens, ") do not fit max_context = ",
        max_context_, " (the KV cache is full)"));
  }
  const std::vector<int> producer = graph_.ProducerIndex();
  if (last_row_only >= 0) {
    const bool is_output = std::find(graph_.outputs.begin(), graph_.outputs.end(),
                                     last_row_only) != graph_.outputs.end();
    const int p = static_cast<size_t>(last_row_only) < producer.size() ? producer[last_row_only]
                                                                        : -1;
    const bool by_matmul = p >= 0 && (graph_.nodes[p].op == ir::OpKind::kLogits ||
                                      graph_.nodes[p].op == ir::OpKind::kMatMul);
    bool read = false;
    for (const ir::Node& n : graph_.nodes) {
      if (n.op == ir::OpKind::kSample) continue;  // not executed
      read = read || std::find(n.inputs.begin(), n.inputs.end(), last_row_only) != n.inputs.end();
    }
    if (!is_output || !by_matmul || read) {
      return absl::InvalidArgumentError(
          "cpu_ref: last_row_only must be a graph output of a logits or matmul node that no "
          "other node reads");
    }
  }
  t_ = n_tokens;
  s_ = pos0 + n_tokens;
  last_row_only_ = last_row_only;
  for (size_t v = 0; v < graph_.values.size(); ++v) {
    if (producer[v] < 0 || cache_layer_[v] >= 0) continue;
    const ir::ValueType& t = graph_.type_of(static_cast<ir::ValueId>(v));
    const int64_t n = static_cast<ir::ValueId>(v) == last_row_only
                          ? t.shape.dims.back()
                          : Elements(t.shape, t_, s_);
    if (t.dtype == ir::DType::kI32) {
      i32_[v].assign(n, 0);
    } else {
      f32_[v].assign(n, 0.0f);
    }
  }
  RETURN_IF_ERROR(BindInputs(feeds));
  if (node_seconds != nullptr) node_seconds->assign(graph_.nodes.size(), 0.0);
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status st = RunNode(graph_.nodes[i], static_cast<int>(i));
    if (node_seconds != nullptr) {
      (*node_seconds)[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("cpu_ref: ",
                                                  ir::DescribeNode(graph_, static_cast<int>(i)),
                                                  ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status GraphExecutor::RunNode(const ir::Node& n, int index) {
  switch (n.op) {
    case ir::OpKind::kEmbed: return RunEmbed(n);
    case ir::OpKind::kRmsNorm: RunRmsNorm(n); return absl::OkStatus();
    case ir::OpKind::kMatMul:
    case ir::OpKind::kMatMulGroup:
    case ir::OpKind::kLogits: RunMatMul(n); return absl::OkStatus();
    case ir::OpKind::kHeadRmsNorm: RunHeadRmsNorm(n); return absl::OkStatus();
    case ir::OpKind::kRope: RunRope(n); return absl::OkStatus();
    case ir::OpKind::kSwiGlu: RunSwiGlu(n); return absl::OkStatus();
    case ir::OpKind::kAdd: RunAdd(n); return absl::OkStatus();
    case ir::OpKind::kKvAppend: return RunKvAppend(n);
    case ir::OpKind::kAttention: return RunAttention(n);
    case ir::OpKind::kQkNormRopeKvAppend: return RunQkNormRopeKvAppend(n);
    case ir::OpKind::kSample:
      // The runtime samples from the logits with its own settings; nothing to do here.
      return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat("node ", index, ": unknown op"));
}

}  // namespace jllm::cpu_ref
