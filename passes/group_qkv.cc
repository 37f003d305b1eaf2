#include "passes/group_qkv.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "passes/matmul_grouping.h"

namespace jllm::passes {
namespace {

using ir::OpKind;

// The matmul whose output reaches `v` through head_rms_norm / rope (their input 0) or through
// the q output of a qk_norm_rope_kv_append; -1 if the chain leads elsewhere.
int TraceToMatMul(const ir::Graph& g, const std::vector<int>& producer, ir::ValueId v) {
  for (size_t steps = 0; steps <= g.nodes.size(); ++steps) {
    const int p = producer[v];
    if (p < 0) return -1;
    const ir::Node& n = g.nodes[p];
    if (n.op == OpKind::kMatMul) return p;
    const bool passes_through = n.op == OpKind::kHeadRmsNorm || n.op == OpKind::kRope ||
                                (n.op == OpKind::kQkNormRopeKvAppend && n.outputs[0] == v);
    if (!passes_through) return -1;
    v = n.inputs[0];
  }
  return -1;
}

}  // namespace

absl::StatusOr<PassResult> RunGroupQkv(ir::Graph& g, const PassOptions&) {
  const std::vector<int> producer = g.ProducerIndex();
  std::vector<std::vector<int>> groups;
  std::set<int> taken;
  for (const ir::Node& attn : g.nodes) {
    if (attn.op != OpKind::kAttention) continue;
    const int cache = producer[attn.inputs[1]];
    if (cache < 0) continue;
    const ir::Node& kv = g.nodes[cache];
    int q = -1, k = -1, v = -1;
    if (kv.op == OpKind::kKvAppend) {
      q = TraceToMatMul(g, producer, attn.inputs[0]);
      k = TraceToMatMul(g, producer, kv.inputs[0]);
      v = TraceToMatMul(g, producer, kv.inputs[1]);
    } else if (kv.op == OpKind::kQkNormRopeKvAppend) {
      q = TraceToMatMul(g, producer, kv.inputs[0]);
      k = TraceToMatMul(g, producer, kv.inputs[1]);
      v = TraceToMatMul(g, producer, kv.inputs[2]);
    }
    if (q < 0 || k < 0 || v < 0 || q == k || k == v || q == v) continue;
    if (taken.count(q) || taken.count(k) || taken.count(v)) continue;
    const ir::Node &nq = g.nodes[q], &nk = g.nodes[k], &nv = g.nodes[v];
    if (!IsGroupableMatMul(nq) || !IsGroupableMatMul(nk) || !IsGroupableMatMul(nv)) continue;
    if (!SameProjectionInput(nq, nk) || !SameProjectionInput(nq, nv)) continue;
    groups.push_back({q, k, v});
    taken.insert({q, k, v});
  }
  if (groups.empty()) return PassResult{false, "no q/k/v projections to group"};
  const std::string mixes = DescribeTypeMixes(g, groups);
  ReplaceWithGroups(g, groups);
  return PassResult{true, absl::StrCat("grouped ", groups.size(), " q/k/v triples (", mixes, ")")};
}

}  // namespace jllm::passes
