#include "backends/cuda/exec/memory_plan.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "backends/cuda/lowering/weight_repack.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

int64_t Align(int64_t v) { return (v + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign; }

bool AppendsKv(ir::OpKind op) {
  return op == ir::OpKind::kKvAppend || op == ir::OpKind::kQkNormRopeKvAppend;
}

// First-fit allocator over [0, inf) with coalescing of freed ranges.
class Arena {
 public:
  int64_t Allocate(int64_t bytes) {
    bytes = Align(std::max<int64_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= bytes) {
        const int64_t at = it->first;
        const int64_t rest = it->second - bytes;
        free_.erase(it);
        if (rest > 0) free_[at + bytes] = rest;
        return at;
      }
    }
    const int64_t at = top_;
    top_ += bytes;
    return at;
  }
  void Free(int64_t at, int64_t bytes) {
    bytes = Align(std::max<int64_t>(bytes, 1));
    auto [it, inserted] = free_.emplace(at, bytes);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  int64_t size() const { return top_; }

 private:
  std::map<int64_t, int64_t> free_;  // offset -> bytes
  int64_t top_ = 0;
};

std::string GiB(int64_t bytes) { return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / 1e9); }

}  // namespace

int64_t KvLayerShape::ElementBytes() const {
  return type == ir::KvDType::kF32 ? 4 : type == ir::KvDType::kF16 ? 2 : 1;
}

int64_t KvLayerShape::BytesPerPosition() const {
  return 2 * n_head_kv * (head_dim * ElementBytes() + (type == ir::KvDType::kInt8 ? 2 : 0));
}

bool IsKvCacheValue(const ir::Graph& graph, ir::ValueId v) {
  for (const ir::Node& n : graph.nodes) {
    if (AppendsKv(n.op) && n.outputs.back() == v) return true;
  }
  return false;
}

std::string MemoryPlan::Summary() const {
  std::string kv_types;
  if (!kv_layers.empty()) {
    kv_types = std::string(ir::KvDTypeName(kv_layers.front().type));
    for (const KvLayerShape& l : kv_layers) {
      if (l.type != kv_layers.front().type) kv_types = "mixed";
    }
  }
  return absl::StrCat("weights ", GiB(weight_bytes), " + KV cache ", GiB(kv_bytes), " (",
                      max_context, " positions", kv_types.empty() ? "" : ", ", kv_types,
                      ") + scratch ", GiB(scratch_bytes()), " = ", GiB(total_bytes()));
}

absl::StatusOr<MemoryPlan> PlanMemory(const ir::Graph& g, const LoweredGraph& lowered,
                                      int64_t max_context, int64_t max_step_tokens) {
  if (max_context < 1 || max_step_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("cuda: context ", max_context,
                                                   " and step size ", max_step_tokens,
                                                   " must be positive"));
  }
  MemoryPlan p;
  p.max_context = max_context;
  p.max_step_tokens = max_step_tokens;
  const size_t n_values = g.values.size();

  // Which values need arena bytes, and for how long (node indices; inputs from -1).
  std::vector<bool> in_arena(n_values, true);
  for (ir::ValueId v : g.inputs) {
    const std::string& name = g.name_of(v);
    if (name == ir::kTokensInput || name == ir::kPositionsInput) in_arena[v] = false;
  }
  if (lowered.logits >= 0) in_arena[lowered.logits] = false;
  for (size_t v = 0; v < n_values; ++v) {
    if (IsKvCacheValue(g, static_cast<ir::ValueId>(v))) in_arena[v] = false;
  }
  const int end = static_cast<int>(g.nodes.size());
  std::vector<int> last_use(n_values, -2);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ir::ValueId v : g.nodes[i].inputs) last_use[v] = std::max(last_use[v], static_cast<int>(i));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ir::ValueId v : lowered.nodes[i].extra_reads) last_use[v] = std::max(last_use[v], static_cast<int>(i));
  }
  for (ir::ValueId v : g.outputs) last_use[v] = end;
  auto bytes_of = [&](ir::ValueId v) -> int64_t {
    int64_t n = 1;
    for (int64_t d : g.type_of(v).shape.dims) n *= d == ir::kDimT ? max_step_tokens : d;
    return n * ir::DTypeBytes(g.type_of(v).dtype);
  };

  Arena arena;
  p.value_offset.assign(n_values, -1);
  p.temp_offset.resize(g.nodes.size());
  for (ir::ValueId v : g.inputs) {
    if (in_arena[v]) p.value_offset[v] = arena.Allocate(bytes_of(v));
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[i];
    const NodeLowering& nl = lowered.nodes[i];
    for (ir::ValueId v : n.outputs) {
      if (in_arena[v] && p.value_offset[v] < 0) p.value_offset[v] = arena.Allocate(bytes_of(v));
    }
    for (ir::ValueId v : nl.early_outputs) {  // a later node's output this node writes
      if (in_arena[v] && p.value_offset[v] < 0) p.value_offset[v] = arena.Allocate(bytes_of(v));
    }
    for (int64_t width : nl.temp_widths) {
      p.temp_offset[i].push_back(arena.Allocate(width * max_step_tokens * 4));
    }
    for (size_t t = 0; t < nl.temp_widths.size(); ++t) {
      arena.Free(p.temp_offset[i][t], nl.temp_widths[t] * max_step_tokens * 4);
    }
    // Free what this node was the last to read (each value once), and outputs nothing reads.
    std::vector<ir::ValueId> done;
    for (ir::ValueId v : n.inputs) {
      if (in_arena[v] && last_use[v] == static_cast<int>(i)) done.push_back(v);
    }
    for (ir::ValueId v : lowered.nodes[i].extra_reads) {
      if (in_arena[v] && last_use[v] == static_cast<int>(i)) done.push_back(v);
    }
    for (ir::ValueId v : n.outputs) {
      if (in_arena[v] && last_use[v] == -2) done.push_back(v);
    }
    std::sort(done.begin(), done.end());
    done.erase(std::unique(done.begin(), done.end()), done.end());
    for (ir::ValueId v : done) arena.Free(p.value_offset[v], bytes_of(v));
  }
  p.arena_bytes = Align(arena.size());

  // Weights read by some node, packed in one slab.
  std::vector<bool> used(g.weights.size(), false);
  for (const ir::Node& n : g.nodes) {
    for (ir::WeightId w : n.weights) used[w] = true;
  }
  p.weight_offset.assign(g.weights.size(), -1);
  for (size_t w = 0; w < g.weights.size(); ++w) {
    if (!used[w]) continue;
    ASSIGN_OR_RETURN(const int64_t bytes, DeviceWeightBytes(g.weights[w]));
    p.weight_offset[w] = p.weight_bytes;
    p.weight_bytes += Align(bytes);
  }

  // KV caches, from the nodes that append to them.
  for (const ir::Node& n : g.nodes) {
    if (!AppendsKv(n.op)) continue;
    KvLayerShape l;
    if (n.op == ir::OpKind::kKvAppend) {
      const auto& a = n.attrs_as<ir::KvAppendAttrs>();
      l = {a.layer, a.n_head_kv, a.head_dim};
    } else {
      const auto& a = n.attrs_as<ir::QkNormRopeKvAppendAttrs>();
      l = {a.layer, a.n_head_kv, a.head_dim};
    }
    l.type = g.kv_dtypes[l.layer];
    p.kv_layers.push_back(l);
    p.kv_bytes_per_position += l.BytesPerPosition();
  }
  for (const KvLayerShape& l : p.kv_layers) {
    p.kv_bytes += 2 * Align(l.n_head_kv * max_context * l.head_dim * l.ElementBytes());
    if (l.type == ir::KvDType::kInt8) p.kv_bytes += 2 * Align(l.n_head_kv * max_context * 2);
  }

  // The rest.
  auto all_launches = [&](auto&& f) {
    for (const NodeLowering& nl : lowered.nodes) {
      for (const Launch& l : nl.decode) f(l);
      for (const Launch& l : nl.prefill) f(l);
      for (const Launch& l : nl.prefill_all_rows) f(l);
    }
    f(lowered.greedy_logits);  // (spec -1 where there is none: no scratch)
  };
  all_launches([&](const Launch& l) {
    p.workspace_floats = std::max(p.workspace_floats, l.workspace_floats);
    p.workspace_counters = std::max(p.workspace_counters, l.workspace_counters);
  });
  const int64_t vocab = lowered.logits >= 0 ? g.type_of(lowered.logits).shape.dims.back() : 0;
  p.other_bytes = Align(vocab * 4)                                     // logits row
                  + Align(vocab * 4) + Align(vocab * 8)                // sampler scratch
                  + Align((vocab + geometry::kSampleStampsExtra) * 4)
                  + Align(p.workspace_floats * 4) + Align(p.workspace_counters * 4)
                  + 2 * Align(max_step_tokens * 4)                     // tokens, positions
                  + Align(max_context * 4)                             // context tokens
                  + 2 * kDeviceAlign;                                  // step state, params
  return p;
}

absl::StatusOr<int64_t> LargestContextThatFits(const ir::Graph& graph, const LoweredGraph& lowered,
                                               int64_t max_step_tokens, int64_t free_bytes,
                                               int64_t reserve, int64_t limit) {
  ASSIGN_OR_RETURN(MemoryPlan one, PlanMemory(graph, lowered, 1, max_step_tokens));
  const int64_t fixed = one.total_bytes() - one.kv_bytes;
  const int64_t per_position = std::max<int64_t>(1, one.kv_bytes_per_position + 4);
  const int64_t room = free_bytes - reserve - fixed;
  if (room < per_position) return 0;
  int64_t n = std::min(limit, room / per_position);
  // Alignment rounding: step down until the real plan fits.
  while (n > 0) {
    ASSIGN_OR_RETURN(MemoryPlan p, PlanMemory(graph, lowered, n, max_step_tokens));
    if (p.total_bytes() + reserve <= free_bytes) break;
    n -= std::max<int64_t>(1, n / 64);
  }
  return n;
}

}  // namespace jllm::cuda
