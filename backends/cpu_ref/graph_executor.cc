#include "backends/cpu_ref/graph_executor.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/verify.h"

namespace jllm::cpu_ref {
namespace {

// No single value may need more than this many elements (16 GiB of f32): checked for a
// one-token step at the full context when the graph loads, and for each step's actual T and S
// before its buffers are allocated, so a graph declaring absurd widths is refused instead of
// exhausting memory.
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

// The layer and head split of a kv append node.
struct KvAppendShape {
  int64_t layer, n_head_kv, head_dim;
};
KvAppendShape KvShapeOf(const ir::Node& n) {
  if (n.op == ir::OpKind::kKvAppend) {
    const auto& a = n.attrs_as<ir::KvAppendAttrs>();
    return {a.layer, a.n_head_kv, a.head_dim};
  }
  const auto& a = n.attrs_as<ir::QkNormRopeKvAppendAttrs>();
  return {a.layer, a.n_head_kv, a.head_dim};
}

// Memory the system could give us now (MemAvailable); nullopt where /proc/meminfo does not say.
std::optional<double> AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  return std::nullopt;
}

std::string GiB(double bytes) { return absl::StrFormat("%.2f GiB", bytes / (1024.0 * 1024 * 1024)); }

// Refuses a context whose KV cache (plus the f32 weights, which Create allocates whole) cannot
// fit in the memory available, before anything is allocated: an absurd -c is an error saying
// what would fit, not std::bad_alloc or tens of GB of swapping.
absl::Status CheckMemoryFits(const ir::Graph& g, int64_t max_context) {
  double per_position = 0;
  for (const ir::Node& n : g.nodes) {
    if (!AppendsKv(n.op)) continue;
    const KvAppendShape k = KvShapeOf(n);
    if (k.layer < 0 || static_cast<size_t>(k.layer) >= g.kv_dtypes.size()) continue;  // Verify's
    per_position += static_cast<double>(
        KvCache::BytesPerPosition(g.kv_dtypes[k.layer], k.n_head_kv, k.head_dim));
  }
  double weights = 0;
  std::vector<bool> used(g.weights.size(), false);
  for (const ir::Node& n : g.nodes) {
    for (ir::WeightId w : n.weights) used[w] = true;
  }
  for (size_t i = 0; i < g.weights.size(); ++i) {
    if (!used[i]) continue;
    double elements = 1;
    for (int64_t d : g.weights[i].ne) elements *= static_cast<double>(d);
    weights += 4 * elements;
  }
  const std::optional<double> available = AvailableMemoryBytes();
  if (!available) return absl::OkStatus();
  const double kv = per_position * static_cast<double>(max_context);
  if (weights + kv <= *available) return absl::OkStatus();
  if (weights >= *available) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cpu_ref: the model's weights in f32 alone need ", GiB(weights), ", but ",
        GiB(*available), " of memory is available"));
  }
  const int64_t fit = static_cast<int64_t>((*available - weights) / per_position);
  return absl::ResourceExhaustedError(absl::StrCat(
      "cpu_ref: a KV cache for a context of ", max_context, " positions needs ", GiB(kv), " (",
      absl::StrFormat("%.1f", per_position / 1024), " KiB per position), and the f32 weights ",
      GiB(weights), ", but ", GiB(*available), " of memory is available: at most ", fit,
      " positions fit; lower the context size (-c)"));
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
  RETURN_IF_ERROR(CheckMemoryFits(graph, options.max_context));
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
      const auto [layer, n_head_kv, head_dim] = KvShapeOf(n);
      if (n_head_kv * head_dim > kMaxValueElements / (2 * max_context_)) {
        return absl::ResourceExhaustedError(absl::StrCat(
            where, ": a KV cache of ", max_context_, " positions would exceed ",
            kMaxValueElements, " elements per layer; lower the context size (-c) to at most ",
            kMaxValueElements / (2 * n_head_kv * head_dim)));
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
  // Every value must fit for a decode step (T = 1) at the full context; longer steps are
  // checked when they run (Run), since prefill comes in chunks far shorter than the context.
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (cache_layer_[v] >= 0) continue;
    const ir::ValueType& t = g.type_of(static_cast<ir::ValueId>(v));
    if (Elements(t.shape, 1, max_context_) < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cpu_ref: value ", ValueName(g, static_cast<ir::ValueId>(v)), " (",
          ir::ValueTypeToString(t), ") would exceed ", kMaxValueElements,
          " elements in a one-token step at ", max_context_, " positions"));
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
    if (n < 0) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cpu_ref: value ", ValueName(graph_, static_cast<ir::ValueId>(v)), " (",
          ir::ValueTypeToString(t), ") would exceed ", kMaxValueElements, " elements in a step of ",
          t_, " tokens at ", s_, " positions; run fewer tokens per step"));
    }
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
