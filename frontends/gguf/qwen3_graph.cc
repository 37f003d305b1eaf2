// CheckQwen3Tensors and BuildQwen3Graph (FORMATS.md §5).
#include "frontends/gguf/qwen3_graph.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "ir/verify.h"

namespace jllm::gguf {
namespace {

using ir::OpKind;

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> ne;
  bool is_norm;
};

std::string Blk(int64_t layer, std::string_view suffix) {
  return absl::StrCat("blk.", layer, ".", Sv(suffix));
}

// The Qwen3 tensor table for `c`, in ggml ne[] order.
std::vector<ExpectedTensor> ExpectedTensors(const ir::ModelConfig& c) {
  const int64_t E = c.n_embd, V = c.n_vocab, F = c.n_ff;
  const int64_t q_width = c.n_head * c.head_dim, kv_width = c.n_head_kv * c.head_dim;
  std::vector<ExpectedTensor> out = {
      {"token_embd.weight", {E, V}, false},
      {"output_norm.weight", {E}, true},
  };
  if (!c.tied_embeddings) out.push_back({"output.weight", {E, V}, false});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    out.push_back({Blk(l, "attn_norm.weight"), {E}, true});
    out.push_back({Blk(l, "attn_q.weight"), {E, q_width}, false});
    out.push_back({Blk(l, "attn_k.weight"), {E, kv_width}, false});
    out.push_back({Blk(l, "attn_v.weight"), {E, kv_width}, false});
    out.push_back({Blk(l, "attn_output.weight"), {q_width, E}, false});
    out.push_back({Blk(l, "attn_q_norm.weight"), {c.head_dim}, true});
    out.push_back({Blk(l, "attn_k_norm.weight"), {c.head_dim}, true});
    out.push_back({Blk(l, "ffn_norm.weight"), {E}, true});
    out.push_back({Blk(l, "ffn_gate.weight"), {E, F}, false});
    out.push_back({Blk(l, "ffn_up.weight"), {E, F}, false});
    out.push_back({Blk(l, "ffn_down.weight"), {F, E}, false});
  }
  return out;
}

std::string NeText(absl::Span<const int64_t> ne) { return absl::StrCat("{", absl::StrJoin(ne, ", "), "}"); }

std::string SupportedTypes(bool norm) {
  std::vector<std::string> names;
  for (uint32_t id = 0; id < 64; ++id) {
    auto t = LookupGgmlType(id);
    if (!t || !t->supported) continue;
    const bool is_float = t->block_size == 1;
    if (!norm || is_float) names.emplace_back(t->name);
  }
  return absl::StrJoin(names, ", ");
}

absl::Status CheckOne(const ExpectedTensor& want, const TensorInfo& t, std::string_view source) {
  auto fail = [&](std::string msg) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source), ": tensor '", want.name, "' ", std::move(msg)));
  };
  if (t.n_dims < 1 || t.n_dims > 4) return fail(absl::StrCat("has ", t.n_dims, " dims"));
  int64_t want_ne[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < want.ne.size(); ++i) want_ne[i] = want.ne[i];
  for (int i = 0; i < 4; ++i) {
    if (t.ne[i] != want_ne[i]) {
      return fail(absl::StrCat("has ne ", NeText(absl::MakeSpan(t.ne, t.n_dims)), ", expected ",
                               NeText(want.ne), " from the model's hyper-parameters"));
    }
  }
  const GgmlTypeTraits& traits = TraitsOf(t.type);
  const bool ok_type = traits.supported && (!want.is_norm || traits.block_size == 1);
  if (!ok_type) {
    return fail(absl::StrCat("has type ", Sv(traits.name), ", which jllm cannot run here (",
                             want.is_norm ? "norms: " : "supported: ",
                             SupportedTypes(want.is_norm), ")"));
  }
  const int64_t bytes = ir::WeightBytes(t.type, want.ne);
  if (bytes < 0) {
    return fail(absl::StrCat("has ne[0] = ", t.ne[0], ", not a multiple of the ",
                             Sv(traits.name), " block size ", traits.block_size));
  }
  if (static_cast<uint64_t>(bytes) != t.nbytes) {
    return fail(absl::StrCat("is ", t.nbytes, " bytes, expected ", bytes, " for ",
                             Sv(traits.name), " ", NeText(want.ne)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckQwen3Tensors(const ir::ModelConfig& config,
                               const std::vector<TensorInfo>& tensors, std::string_view source) {
  std::map<std::string_view, const TensorInfo*> by_name;
  for (const TensorInfo& t : tensors) {
    if (!by_name.emplace(t.name, &t).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(source), ": tensor '", t.name, "' appears twice"));
    }
  }
  const std::vector<ExpectedTensor> expected = ExpectedTensors(config);
  for (const ExpectedTensor& want : expected) {
    auto it = by_name.find(want.name);
    if (it == by_name.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Sv(source), ": tensor '", want.name, "' is missing; a qwen3 model with ",
          config.n_layer, " layers needs it"));
    }
    RETURN_IF_ERROR(CheckOne(want, *it->second, source));
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(source), ": tensor '", Sv(by_name.begin()->first),
                     "' is not part of a qwen3 model with ", config.n_layer,
                     " layers; refusing to build a graph that would ignore it"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::Graph> BuildQwen3Graph(const ir::ModelConfig& c,
                                          const std::vector<TensorInfo>& tensors,
                                          std::string_view source) {
  RETURN_IF_ERROR(ir::ValidateModelConfig(c));
  RETURN_IF_ERROR(CheckQwen3Tensors(c, tensors, source));
  ir::Graph g;
  g.config = c;
  g.kv_dtypes.assign(c.n_layer, ir::KvDType::kF16);
  std::map<std::string, ir::WeightId, std::less<>> weight;
  for (const TensorInfo& t : tensors) {
    ir::WeightRef w{t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.offset, t.nbytes};
    ASSIGN_OR_RETURN(weight[t.name], g.AddWeight(std::move(w)));
  }
  auto W = [&](const std::string& name) { return weight.at(name); };

  const ir::ValueType positions{ir::DType::kI32, {{ir::kDimT}}};
  ASSIGN_OR_RETURN(ir::ValueId tokens, g.AddInput(std::string(ir::kTokensInput), positions));
  ASSIGN_OR_RETURN(ir::ValueId pos, g.AddInput(std::string(ir::kPositionsInput), positions));
  ASSIGN_OR_RETURN(ir::ValueId x,
                   g.AddNode1(OpKind::kEmbed, {tokens}, {W("token_embd.weight")}, ir::NoAttrs{}, "embd"));

  const ir::RmsNormAttrs norm{c.rms_eps};
  const ir::HeadRmsNormAttrs q_norm{c.n_head, c.head_dim, c.rms_eps};
  const ir::HeadRmsNormAttrs k_norm{c.n_head_kv, c.head_dim, c.rms_eps};
  const ir::RopeAttrs q_rope{c.n_head, c.head_dim, c.head_dim, c.rope_base, c.rope_freq_scale};
  const ir::RopeAttrs k_rope{c.n_head_kv, c.head_dim, c.head_dim, c.rope_base, c.rope_freq_scale};
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (int64_t l = 0; l < c.n_layer; ++l) {
    auto name = [l](std::string_view what) { return Blk(l, what); };
    auto w = [&](std::string_view what) { return W(Blk(l, what)); };
    auto node = [&](OpKind op, std::vector<ir::ValueId> in, std::vector<ir::WeightId> ws,
                    ir::Attrs attrs, std::string_view out) {
      return g.AddNode1(op, std::move(in), std::move(ws), std::move(attrs), name(out));
    };
    const ir::MatMulAttrs mm{};
    ASSIGN_OR_RETURN(auto h, node(OpKind::kRmsNorm, {x}, {w("attn_norm.weight")}, norm, "attn_in"));
    ASSIGN_OR_RETURN(auto q, node(OpKind::kMatMul, {h}, {w("attn_q.weight")}, mm, "q"));
    ASSIGN_OR_RETURN(auto k, node(OpKind::kMatMul, {h}, {w("attn_k.weight")}, mm, "k"));
    ASSIGN_OR_RETURN(auto v, node(OpKind::kMatMul, {h}, {w("attn_v.weight")}, mm, "v"));
    ASSIGN_OR_RETURN(auto qn, node(OpKind::kHeadRmsNorm, {q}, {w("attn_q_norm.weight")}, q_norm,
                                   "q_normed"));
    ASSIGN_OR_RETURN(auto kn, node(OpKind::kHeadRmsNorm, {k}, {w("attn_k_norm.weight")}, k_norm,
                                   "k_normed"));
    ASSIGN_OR_RETURN(auto qr, node(OpKind::kRope, {qn, pos}, {}, q_rope, "q_rope"));
    ASSIGN_OR_RETURN(auto kr, node(OpKind::kRope, {kn, pos}, {}, k_rope, "k_rope"));
    ASSIGN_OR_RETURN(auto kv, node(OpKind::kKvAppend, {kr, v, pos}, {},
                                   ir::KvAppendAttrs{l, c.n_head_kv, c.head_dim}, "kv"));
    ASSIGN_OR_RETURN(auto attn, node(OpKind::kAttention, {qr, kv, pos}, {},
                                     ir::AttentionAttrs{l, c.n_head, c.n_head_kv, c.head_dim, scale},
                                     "attn"));
    ASSIGN_OR_RETURN(auto o, node(OpKind::kMatMul, {attn}, {w("attn_output.weight")}, mm, "attn_out"));
    ASSIGN_OR_RETURN(auto x_mid, node(OpKind::kAdd, {x, o}, {}, ir::NoAttrs{}, "attn_res"));
    ASSIGN_OR_RETURN(auto h2, node(OpKind::kRmsNorm, {x_mid}, {w("ffn_norm.weight")}, norm, "ffn_in"));
    ASSIGN_OR_RETURN(auto gate, node(OpKind::kMatMul, {h2}, {w("ffn_gate.weight")}, mm, "gate"));
    ASSIGN_OR_RETURN(auto up, node(OpKind::kMatMul, {h2}, {w("ffn_up.weight")}, mm, "up"));
    ASSIGN_OR_RETURN(auto act, node(OpKind::kSwiGlu, {gate, up}, {}, ir::NoAttrs{}, "ffn_act"));
    ASSIGN_OR_RETURN(auto down, node(OpKind::kMatMul, {act}, {w("ffn_down.weight")}, mm, "ffn_out"));
    ASSIGN_OR_RETURN(x, node(OpKind::kAdd, {x_mid, down}, {}, ir::NoAttrs{}, "out"));
  }
  ASSIGN_OR_RETURN(auto final_norm,
                   g.AddNode1(OpKind::kRmsNorm, {x}, {W("output_norm.weight")}, norm, "out_norm"));
  const std::string out_weight = c.tied_embeddings ? "token_embd.weight" : "output.weight";
  ASSIGN_OR_RETURN(auto logits, g.AddNode1(OpKind::kLogits, {final_norm}, {W(out_weight)},
                                           ir::NoAttrs{}, std::string(ir::kLogitsOutput)));
  ASSIGN_OR_RETURN(auto token, g.AddNode1(OpKind::kSample, {logits}, {}, ir::NoAttrs{},
                                          std::string(ir::kTokenOutput)));
  g.outputs = {logits, token};
  if (auto st = ir::Verify(g); !st.ok()) {
    return absl::InternalError(absl::StrCat(Sv(source), ": built an invalid graph: ", st.message()));
  }
  return g;
}

absl::StatusOr<ir::Graph> BuildQwen3Graph(const GgufFile& file) {
  ASSIGN_OR_RETURN(ir::ModelConfig config,
                   ReadQwen3Config(file.metadata(), file.tensors(), file.path()));
  return BuildQwen3Graph(config, file.tensors(), file.path());
}

}  // namespace jllm::gguf
