#include "backends/cuda/exec/kernel_binder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

template <class Args>
std::vector<uint8_t> Bytes(const Args& args) {
  std::vector<uint8_t> out(sizeof(Args));
  std::memcpy(out.data(), &args, sizeof(Args));
  return out;
}

class Resolver {
 public:
  Resolver(const ir::Graph& g, const MemoryPlan& p, const DeviceBuffers& b, int node, Phase phase,
           int64_t n_tokens)
      : g_(g), p_(p), b_(b), node_(node), phase_(phase), n_tokens_(n_tokens) {}

  absl::StatusOr<void*> Ptr(const Operand& op) const {
    switch (op.kind) {
      case Operand::Kind::kNone:
        return nullptr;
      case Operand::Kind::kWeight:
        if (p_.weight_offset[op.id] < 0) return Missing(op);
        return static_cast<void*>(b_.weights + p_.weight_offset[op.id]);
      case Operand::Kind::kTemp:
        if (node_ < 0 || op.id >= static_cast<int>(p_.temp_offset[node_].size())) return Missing(op);
        return static_cast<void*>(b_.arena + p_.temp_offset[node_][op.id]);
      case Operand::Kind::kKvCache:
        return Missing(op);  // caches bind through Cache()
      case Operand::Kind::kValue:
        break;
    }
    const std::string& name = g_.name_of(op.id);
    const bool decode = phase_ == Phase::kDecode;
    if (name == ir::kTokensInput) return decode ? static_cast<void*>(&b_.state->token) : b_.tokens;
    if (name == ir::kPositionsInput) return decode ? static_cast<void*>(&b_.state->pos) : b_.positions;
    uint8_t* base = nullptr;
    if (std::find(g_.outputs.begin(), g_.outputs.end(), op.id) != g_.outputs.end() &&
        name == ir::kLogitsOutput) {
      base = reinterpret_cast<uint8_t*>(phase_ == Phase::kPrefillAllRows ? b_.logits_all : b_.logits_row);
      if (base == nullptr) return Missing(op);
      return static_cast<void*>(base);  // the last row is row 0 of logits_row
    }
    if (p_.value_offset[op.id] < 0) return Missing(op);
    base = b_.arena + p_.value_offset[op.id];
    if (op.last_row) {
      const int64_t width = g_.type_of(op.id).shape.dims.back();
      base += (n_tokens_ - 1) * width * 4;
    }
    return static_cast<void*>(base);
  }

  absl::StatusOr<const LayerCache*> Cache(const Operand& op) const {
    if (op.kind != Operand::Kind::kKvCache || op.id < 0 ||
        op.id >= static_cast<int>(b_.caches.size()) || b_.caches[op.id].k == nullptr) {
      return Missing(op);
    }
    return &b_.caches[op.id];
  }

 private:
  absl::Status Missing(const Operand& op) const {
    return absl::InternalError(absl::StrCat("cuda: node ", node_, ": operand kind ",
                                            static_cast<int>(op.kind), " id ", op.id,
                                            " has no device buffer"));
  }
  const ir::Graph& g_;
  const MemoryPlan& p_;
  const DeviceBuffers& b_;
  int node_;
  Phase phase_;
  int64_t n_tokens_;
};

template <class T>
absl::StatusOr<T*> As(const Resolver& r, const Operand& op) {
  ASSIGN_OR_RETURN(void* p, r.Ptr(op));
  return static_cast<T*>(p);
}

// The launch's L2 prefetch ranges (lowering: JLLM_PREFETCH), whole 16-byte units.
absl::StatusOr<L2Prefetch> Prefetch(const Resolver& r, const Launch& l) {
  L2Prefetch out{};
  for (int i = 0; i < 2; ++i) {
    if (!l.prefetch[i].present()) continue;
    ASSIGN_OR_RETURN(out.p[i], As<const void>(r, l.prefetch[i]));
    out.bytes[i] = static_cast<unsigned long long>(l.prefetch_bytes[i]) / 16 * 16;
  }
  return out;
}

// A fused head op's gammas, the layer's caches and its parameters (the launch's p1..p3: eps, RoPE
// step and scale); its inputs are the caller's.
absl::Status BindFusedHead(const Resolver& r, const Launch& l, const Operand& q_gamma, const Operand& k_gamma,
                           const LayerCache& c, FusedHeadArgs& h) {
  ASSIGN_OR_RETURN(h.q_gamma, As<const float>(r, q_gamma));
  ASSIGN_OR_RETURN(h.k_gamma, As<const float>(r, k_gamma));
  h.k_cache = c.k;
  h.v_cache = c.v;
  h.k_scales = c.k_scales;
  h.v_scales = c.v_scales;
  h.eps = l.p1;
  h.rope_step = l.p2;
  h.rope_scale = l.p3;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> BindArgs(const ir::Graph& graph, const MemoryPlan& plan,
                                              const DeviceBuffers& b, int node, const Launch& l,
                                              Phase phase, int64_t n_tokens,
                                              const TileMapEncoder& encode_tile_map) {
  const Resolver r(graph, plan, b, node, phase, n_tokens);
  const int n = static_cast<int>(n_tokens);
  switch (l.kind) {
    case LaunchKind::kGemv: {
      GemvArgs a{};
      for (int m = 0; m < 3; ++m) {
        ASSIGN_OR_RETURN(a.w[m], As<const void>(r, l.ops[slot::kGemvW0 + m]));
        ASSIGN_OR_RETURN(a.y[m], As<float>(r, l.ops[slot::kGemvY0 + m]));
      }
      ASSIGN_OR_RETURN(a.x, As<const float>(r, l.ops[slot::kGemvX]));
      ASSIGN_OR_RETURN(a.gamma, As<const float>(r, l.ops[slot::kGemvGamma]));
      ASSIGN_OR_RETURN(a.residual, As<const float>(r, l.ops[slot::kGemvResidual]));
      a.partials = b.workspace;
      a.counters = b.counters;
      a.eps = l.p0;
      // JLLM_ARGMAX (LoweredGraph::greedy_logits): the sampler's scratch and the step state.
      a.draw_keys = reinterpret_cast<unsigned long long*>(b.sample_weights);
      a.draw_stamps = b.sample_stamps;
      a.state = b.state;
      if (l.ops[slot::kGemvHeadCache].present()) {  // the head ops in the tail, on y[0..2]
        FusedHeadArgs& h = a.head;
        h.xq = a.y[0];
        h.xk = a.y[1];
        h.xv = a.y[2];
        ASSIGN_OR_RETURN(const LayerCache* c, r.Cache(l.ops[slot::kGemvHeadCache]));
        RETURN_IF_ERROR(BindFusedHead(r, l, l.ops[slot::kGemvHeadQGamma], l.ops[slot::kGemvHeadKGamma], *c, h));
        ASSIGN_OR_RETURN(a.yq, As<float>(r, l.ops[slot::kGemvHeadYq]));
        ASSIGN_OR_RETURN(a.pos, As<const int>(r, l.ops[slot::kGemvHeadPos]));
        a.max_ctx = static_cast<int>(b.max_context);
      }
      if (l.ops[slot::kGemvEmbedTable].present()) {  // JLLM_EMBED: the embedding row is x
        ASSIGN_OR_RETURN(a.embed_table, As<const void>(r, l.ops[slot::kGemvEmbedTable]));
        ASSIGN_OR_RETURN(a.embed_tokens, As<const int>(r, l.ops[slot::kGemvEmbedTokens]));
        ASSIGN_OR_RETURN(a.pos, As<const int>(r, l.ops[slot::kGemvEmbedPos]));
        ASSIGN_OR_RETURN(a.embed_y, As<float>(r, l.ops[slot::kGemvEmbedY]));
        a.ctx_tokens = b.context_tokens;
      }
      for (int m = 0; m < 3; ++m) {  // JLLM_TMA: each matrix's boxes, encoded by the device
        if (l.tile[m].box_bytes == 0) continue;
        TileBox box = l.tile[m];
        box.base = a.w[m];
        absl::Status st = encode_tile_map(box, &a.tmap[m]);
        if (!st.ok()) {
          return absl::Status(st.code(), absl::StrCat("the tile map of GEMV weight ", m, " (node ", node, "): ",
                                                      st.message(), "; JLLM_GEMV_TMA=0 reads without one"));
        }
      }
      return Bytes(a);
    }
    case LaunchKind::kGemm: {
      GemmArgs a{};
      ASSIGN_OR_RETURN(a.w, As<const void>(r, l.ops[slot::kGemmW]));
      ASSIGN_OR_RETURN(a.w2, As<const void>(r, l.ops[slot::kGemmW2]));
      ASSIGN_OR_RETURN(a.x, As<const float>(r, l.ops[slot::kGemmX]));
      ASSIGN_OR_RETURN(a.residual, As<const float>(r, l.ops[slot::kGemmResidual]));
      ASSIGN_OR_RETURN(a.y, As<float>(r, l.ops[slot::kGemmY]));
      a.n_tokens = n;
      return Bytes(a);
    }
    case LaunchKind::kEmbed: {
      EmbedArgs a{};
      ASSIGN_OR_RETURN(a.table, As<const void>(r, l.ops[slot::kEmbedTable]));
      ASSIGN_OR_RETURN(a.tokens, As<const int>(r, l.ops[slot::kEmbedTokens]));
      ASSIGN_OR_RETURN(a.pos, As<const int>(r, l.ops[slot::kEmbedPos]));
      ASSIGN_OR_RETURN(a.y, As<float>(r, l.ops[slot::kEmbedY]));
      a.ctx_tokens = b.context_tokens;
      a.state = b.state;
      a.n_tokens = n;
      return Bytes(a);
    }
    case LaunchKind::kRmsNorm: {
      RmsNormArgs a{};
      ASSIGN_OR_RETURN(a.x, As<const float>(r, l.ops[slot::kNormX]));
      ASSIGN_OR_RETURN(a.gamma, As<const float>(r, l.ops[slot::kNormGamma]));
      ASSIGN_OR_RETURN(a.y, As<float>(r, l.ops[slot::kNormY]));
      a.eps = l.p0;
      a.n_tokens = n;
      return Bytes(a);
    }
    case LaunchKind::kHeadOps: {
      HeadOpsArgs a{};
      ASSIGN_OR_RETURN(a.pos, As<const int>(r, l.ops[slot::kHeadPos]));
      ASSIGN_OR_RETURN(a.xq, As<const float>(r, l.ops[slot::kHeadXq]));
      ASSIGN_OR_RETURN(a.q_gamma, As<const float>(r, l.ops[slot::kHeadQGamma]));
      ASSIGN_OR_RETURN(a.yq, As<float>(r, l.ops[slot::kHeadYq]));
      ASSIGN_OR_RETURN(a.xk, As<const float>(r, l.ops[slot::kHeadXk]));
      ASSIGN_OR_RETURN(a.k_gamma, As<const float>(r, l.ops[slot::kHeadKGamma]));
      ASSIGN_OR_RETURN(a.xv, As<const float>(r, l.ops[slot::kHeadXv]));
      if (l.ops[slot::kHeadCache].present()) {
        ASSIGN_OR_RETURN(const LayerCache* c, r.Cache(l.ops[slot::kHeadCache]));
        a.k_cache = c->k;
        a.v_cache = c->v;
        a.k_scales = c->k_scales;
        a.v_scales = c->v_scales;
      }
      a.max_ctx = b.max_context;
      a.eps = l.p0;
      a.rope_step = l.p1;
      a.rope_scale = l.p2;
      a.n_tokens = n;
      ASSIGN_OR_RETURN(a.prefetch, Prefetch(r, l));
      return Bytes(a);
    }
    case LaunchKind::kAttentionDecode:
    case LaunchKind::kAttentionPrefill: {
      AttentionArgs a{};
      ASSIGN_OR_RETURN(a.q, As<const float>(r, l.ops[slot::kAttnQ]));
      ASSIGN_OR_RETURN(const LayerCache* c, r.Cache(l.ops[slot::kAttnCache]));
      a.k_cache = c->k;
      a.v_cache = c->v;
      a.k_scales = c->k_scales;
      a.v_scales = c->v_scales;
      ASSIGN_OR_RETURN(a.pos, As<const int>(r, l.ops[slot::kAttnPos]));
      ASSIGN_OR_RETURN(a.out, As<float>(r, l.ops[slot::kAttnOut]));
      a.partials = b.workspace;
      a.counters = b.counters;
      a.max_ctx = b.max_context;
      a.scale = l.p0;
      a.n_tokens = n;
      if (l.ops.size() > slot::kAttnXq && l.ops[slot::kAttnXq].present()) {
        FusedHeadArgs& h = a.head;
        ASSIGN_OR_RETURN(h.xq, As<const float>(r, l.ops[slot::kAttnXq]));
        ASSIGN_OR_RETURN(h.xk, As<const float>(r, l.ops[slot::kAttnXk]));
        ASSIGN_OR_RETURN(h.xv, As<const float>(r, l.ops[slot::kAttnXv]));
        RETURN_IF_ERROR(BindFusedHead(r, l, l.ops[slot::kAttnQGamma], l.ops[slot::kAttnKGamma], *c, h));
      }
      ASSIGN_OR_RETURN(a.prefetch, Prefetch(r, l));
      return Bytes(a);
    }
    case LaunchKind::kElementwise: {
      ElementwiseArgs a{};
      ASSIGN_OR_RETURN(a.a, As<const float>(r, l.ops[slot::kEltA]));
      ASSIGN_OR_RETURN(a.b, As<const float>(r, l.ops[slot::kEltB]));
      ASSIGN_OR_RETURN(a.y, As<float>(r, l.ops[slot::kEltY]));
      a.n = l.width * n_tokens;
      return Bytes(a);
    }
    case LaunchKind::kSample: {
      SampleArgs a{};
      a.logits = b.logits_row;
      a.work = b.sample_work;
      a.weights = b.sample_weights;
      a.stamps = b.sample_stamps;
      a.ctx_tokens = b.context_tokens;
      a.params = b.sample_params;
      a.state = b.state;
      return Bytes(a);
    }
  }
  return absl::InternalError("cuda: unknown launch kind");
}

}  // namespace jllm::cuda
