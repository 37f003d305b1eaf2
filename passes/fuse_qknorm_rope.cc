#include "passes/fuse_qknorm_rope.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"

namespace jllm::passes {
namespace {

using ir::OpKind;

// The nodes of one layer's chain, by index.
struct Chain {
  int q_norm, q_rope, k_norm, k_rope, append, attention;
};

class Matcher {
 public:
  explicit Matcher(const ir::Graph& g)
      : g_(g), producer_(g.ProducerIndex()), uses_(g.UseCounts()), users_(g.Users()) {}

  // The node producing `v` if it has op `op` and `v` has exactly `max_uses` readers or fewer.
  int Producer(ir::ValueId v, OpKind op, int max_uses) const {
    const int p = producer_[v];
    if (p < 0 || g_.nodes[p].op != op || uses_[v] > max_uses) return -1;
    return p;
  }

  std::optional<Chain> Match(int append) const {
    const ir::Node& kv = g_.nodes[append];
    const ir::ValueId pos = kv.inputs[2];
    Chain c{-1, -1, -1, -1, append, -1};
    const std::vector<int>& readers = users_[kv.outputs[0]];
    if (readers.size() != 1 || g_.nodes[readers[0]].op != OpKind::kAttention) return std::nullopt;
    c.attention = readers[0];
    const ir::Node& attn = g_.nodes[c.attention];
    c.k_rope = Producer(kv.inputs[0], OpKind::kRope, 1);
    // q_rope may have other readers: it stays an output of the fused node.
    c.q_rope = Producer(attn.inputs[0], OpKind::kRope, 1 << 30);
    if (c.k_rope < 0 || c.q_rope < 0) return std::nullopt;
    const ir::Node &kr = g_.nodes[c.k_rope], &qr = g_.nodes[c.q_rope];
    if (kr.inputs[1] != pos || qr.inputs[1] != pos || attn.inputs[2] != pos) return std::nullopt;
    c.k_norm = Producer(kr.inputs[0], OpKind::kHeadRmsNorm, 1);
    c.q_norm = Producer(qr.inputs[0], OpKind::kHeadRmsNorm, 1);
    if (c.k_norm < 0 || c.q_norm < 0) return std::nullopt;
    const auto& qa = qr.attrs_as<ir::RopeAttrs>();
    const auto& ka = kr.attrs_as<ir::RopeAttrs>();
    if (qa.n_rot != ka.n_rot || qa.freq_base != ka.freq_base || qa.freq_scale != ka.freq_scale ||
        qa.head_dim != ka.head_dim) {
      return std::nullopt;
    }
    if (g_.nodes[c.q_norm].attrs_as<ir::HeadRmsNormAttrs>().eps !=
        g_.nodes[c.k_norm].attrs_as<ir::HeadRmsNormAttrs>().eps) {
      return std::nullopt;
    }
    return c;
  }

  // The fused node goes where kv_append was: after every input's producer and before every
  // reader of q_rope and kv.
  bool FitsAtAppend(const Chain& c, const ir::Node& fused) const {
    for (ir::ValueId v : fused.inputs) {
      if (producer_[v] >= c.append) return false;
    }
    for (ir::ValueId v : fused.outputs) {
      for (int u : users_[v]) {
        if (u <= c.append) return false;
      }
    }
    return true;
  }

 private:
  const ir::Graph& g_;
  std::vector<int> producer_, uses_;
  std::vector<std::vector<int>> users_;
};

ir::Node Fuse(const ir::Graph& g, const Chain& c) {
  const ir::Node &qn = g.nodes[c.q_norm], &kn = g.nodes[c.k_norm], &qr = g.nodes[c.q_rope],
                 &kv = g.nodes[c.append];
  const auto& norm = qn.attrs_as<ir::HeadRmsNormAttrs>();
  const auto& rope = qr.attrs_as<ir::RopeAttrs>();
  const auto& append = kv.attrs_as<ir::KvAppendAttrs>();
  ir::Node fused;
  fused.op = OpKind::kQkNormRopeKvAppend;
  fused.inputs = {qn.inputs[0], kn.inputs[0], kv.inputs[1], kv.inputs[2]};
  fused.weights = {qn.weights[0], kn.weights[0]};
  fused.outputs = {qr.outputs[0], kv.outputs[0]};
  fused.attrs = ir::QkNormRopeKvAppendAttrs{append.layer,  rope.n_head,    append.n_head_kv,
                                            rope.head_dim, norm.eps,       rope.n_rot,
                                            rope.freq_base, rope.freq_scale};
  return fused;
}

}  // namespace

absl::StatusOr<PassResult> RunFuseQkNormRope(ir::Graph& g, const PassOptions&) {
  const Matcher matcher(g);
  std::vector<bool> erase(g.nodes.size(), false);
  std::vector<std::pair<int, ir::Node>> replacements;
  int skipped = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].op != OpKind::kKvAppend) continue;
    const std::optional<Chain> chain = matcher.Match(static_cast<int>(i));
    if (!chain) {
      ++skipped;
      continue;
    }
    ir::Node fused = Fuse(g, *chain);
    if (!matcher.FitsAtAppend(*chain, fused)) {
      ++skipped;
      continue;
    }
    for (int n : {chain->q_norm, chain->k_norm, chain->q_rope, chain->k_rope}) erase[n] = true;
    replacements.emplace_back(chain->append, std::move(fused));
  }
  if (replacements.empty()) {
    return PassResult{false, absl::StrCat("no q/k norm + rope + kv append chain to fuse (",
                                          skipped, " kv appends did not match)")};
  }
  for (auto& [at, node] : replacements) g.nodes[at] = std::move(node);
  g.EraseNodes(erase);
  g.Compact();
  std::string report = absl::StrCat("fused ", replacements.size(), " layers");
  if (skipped > 0) absl::StrAppend(&report, "; ", skipped, " kv appends did not match");
  return PassResult{true, report};
}

}  // namespace jllm::passes
