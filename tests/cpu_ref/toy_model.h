// A small Qwen3-shaped model built directly as a graph, in two spellings of the same
// computation: the core ops of FORMATS.md §5, or every fused op the passes create (grouped
// norm+QKV, fused q/k-norm+RoPE+append, residual epilogues, norm+gate/up+SwiGLU). Weights are
// drawn in the same order either way, so both spellings hold identical weights for one seed.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "test_support.h"

namespace jllm::cpu_ref::testing {

struct ToyOptions {
  int64_t n_layer = 2;
  bool fused = false;
  std::vector<ir::KvDType> kv;  // per layer; empty: f16 everywhere
  uint32_t seed = 1;
};

// E=256, H=4, Hkv=2, D=64, F=512, V=300; Q4_K_M-like types (Q4_K, V and down Q6_K, embedding
// Q8_0, norms f32); tied embeddings.
inline void BuildToyModel(TestModel& m, const ToyOptions& o) {
  using ir::OpKind;
  ir::ModelConfig& c = m.graph.config;
  c.n_embd = 256, c.n_layer = o.n_layer, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 64;
  c.n_ff = 512, c.n_vocab = 300, c.context_length = 512, c.rope_base = 1e6f, c.rms_eps = 1e-6f;
  c.tied_embeddings = true;
  m.graph.kv_dtypes = o.kv.empty() ? std::vector<ir::KvDType>(o.n_layer, ir::KvDType::kF16) : o.kv;
  const int64_t e = c.n_embd, qw = c.n_head * c.head_dim, kvw = c.n_head_kv * c.head_dim;
  const int64_t d = c.head_dim, f = c.n_ff;
  const float eps = c.rms_eps;
  std::mt19937 rng(o.seed);

  struct Layer { ir::WeightId attn_norm, q, k, v, o, q_norm, k_norm, ffn_norm, gate, up, down; };
  const ir::WeightId embd = m.AddRandomWeight("token_embd.weight", GgmlType::kQ8_0, {e, c.n_vocab}, rng);
  const ir::WeightId out_norm = m.AddRandomWeight("output_norm.weight", GgmlType::kF32, {e}, rng, 0.1f, 1.0f);
  std::vector<Layer> layers;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto w = [&](const char* name, GgmlType t, std::vector<int64_t> ne) {
      return m.AddRandomWeight(absl::StrCat("blk.", l, ".", name, ".weight"), t, std::move(ne), rng, 0.05f);
    };
    auto norm = [&](const char* name, int64_t n) {
      return m.AddRandomWeight(absl::StrCat("blk.", l, ".", name, ".weight"), GgmlType::kF32, {n}, rng, 0.1f, 1.0f);
    };
    Layer L;
    L.attn_norm = norm("attn_norm", e);
    L.q = w("attn_q", GgmlType::kQ4_K, {e, qw});
    L.k = w("attn_k", GgmlType::kQ4_K, {e, kvw});
    L.v = w("attn_v", GgmlType::kQ6_K, {e, kvw});
    L.o = w("attn_output", GgmlType::kQ4_K, {qw, e});
    L.q_norm = norm("attn_q_norm", d);
    L.k_norm = norm("attn_k_norm", d);
    L.ffn_norm = norm("ffn_norm", e);
    L.gate = w("ffn_gate", GgmlType::kQ4_K, {e, f});
    L.up = w("ffn_up", GgmlType::kQ4_K, {e, f});
    L.down = w("ffn_down", GgmlType::kQ6_K, {f, e});
    layers.push_back(L);
  }

  const ir::ValueId tokens = m.Input(std::string(ir::kTokensInput), ir::DType::kI32, {ir::kDimT});
  const ir::ValueId pos = m.Input(std::string(ir::kPositionsInput), ir::DType::kI32, {ir::kDimT});
  ir::ValueId x = m.Node1(OpKind::kEmbed, {tokens}, {embd}, ir::NoAttrs{}, "embd");
  for (int64_t l = 0; l < o.n_layer; ++l) {
    const Layer& L = layers[l];
    auto name = [&](const char* s) { return absl::StrCat("blk.", l, ".", s); };
    const ir::AttentionAttrs att{l, c.n_head, c.n_head_kv, d, 1.0f / std::sqrt(static_cast<float>(d))};
    if (o.fused) {
      ir::MatMulAttrs norm_attrs;
      norm_attrs.norm_eps = eps;
      auto qkv = m.Node(OpKind::kMatMulGroup, {x}, {L.q, L.k, L.v, L.attn_norm}, norm_attrs,
                        {name("q"), name("k"), name("v")});
      auto qc = m.Node(OpKind::kQkNormRopeKvAppend, {qkv[0], qkv[1], qkv[2], pos}, {L.q_norm, L.k_norm},
                       ir::QkNormRopeKvAppendAttrs{l, c.n_head, c.n_head_kv, d, eps, d, c.rope_base, 1.0f},
                       {name("q_rope"), name("kv")});
      auto attn = m.Node1(OpKind::kAttention, {qc[0], qc[1], pos}, {}, att, name("attn"));
      ir::MatMulAttrs residual;
      residual.residual = true;
      auto attn_res = m.Node1(OpKind::kMatMul, {attn, x}, {L.o}, residual, name("attn_res"));
      ir::MatMulAttrs gate_up;
      gate_up.norm_eps = eps;
      gate_up.swiglu = true;
      auto act = m.Node1(OpKind::kMatMulGroup, {attn_res}, {L.gate, L.up, L.ffn_norm}, gate_up, name("ffn_act"));
      x = m.Node1(OpKind::kMatMul, {act, attn_res}, {L.down}, residual, name("out"));
    } else {
      auto h = m.Node1(OpKind::kRmsNorm, {x}, {L.attn_norm}, ir::RmsNormAttrs{eps}, name("attn_in"));
      auto q = m.Node1(OpKind::kMatMul, {h}, {L.q}, ir::MatMulAttrs{}, name("q"));
      auto k = m.Node1(OpKind::kMatMul, {h}, {L.k}, ir::MatMulAttrs{}, name("k"));
      auto v = m.Node1(OpKind::kMatMul, {h}, {L.v}, ir::MatMulAttrs{}, name("v"));
      auto qn = m.Node1(OpKind::kHeadRmsNorm, {q}, {L.q_norm}, ir::HeadRmsNormAttrs{c.n_head, d, eps}, name("q_normed"));
      auto kn = m.Node1(OpKind::kHeadRmsNorm, {k}, {L.k_norm}, ir::HeadRmsNormAttrs{c.n_head_kv, d, eps}, name("k_normed"));
      auto qr = m.Node1(OpKind::kRope, {qn, pos}, {}, ir::RopeAttrs{c.n_head, d, d, c.rope_base, 1.0f}, name("q_rope"));
      auto kr = m.Node1(OpKind::kRope, {kn, pos}, {}, ir::RopeAttrs{c.n_head_kv, d, d, c.rope_base, 1.0f}, name("k_rope"));
      auto kv = m.Node1(OpKind::kKvAppend, {kr, v, pos}, {}, ir::KvAppendAttrs{l, c.n_head_kv, d}, name("kv"));
      auto attn = m.Node1(OpKind::kAttention, {qr, kv, pos}, {}, att, name("attn"));
      auto attn_out = m.Node1(OpKind::kMatMul, {attn}, {L.o}, ir::MatMulAttrs{}, name("attn_out"));
      auto attn_res = m.Node1(OpKind::kAdd, {x, attn_out}, {}, ir::NoAttrs{}, name("attn_res"));
      auto h2 = m.Node1(OpKind::kRmsNorm, {attn_res}, {L.ffn_norm}, ir::RmsNormAttrs{eps}, name("ffn_in"));
      auto gate = m.Node1(OpKind::kMatMul, {h2}, {L.gate}, ir::MatMulAttrs{}, name("gate"));
      auto up = m.Node1(OpKind::kMatMul, {h2}, {L.up}, ir::MatMulAttrs{}, name("up"));
      auto act = m.Node1(OpKind::kSwiGlu, {gate, up}, {}, ir::NoAttrs{}, name("ffn_act"));
      auto down = m.Node1(OpKind::kMatMul, {act}, {L.down}, ir::MatMulAttrs{}, name("ffn_out"));
      x = m.Node1(OpKind::kAdd, {attn_res, down}, {}, ir::NoAttrs{}, name("out"));
    }
  }
  auto normed = m.Node1(OpKind::kRmsNorm, {x}, {out_norm}, ir::RmsNormAttrs{eps}, "out_norm");
  auto logits = m.Node1(OpKind::kLogits, {normed}, {embd}, ir::NoAttrs{}, std::string(ir::kLogitsOutput));
  auto token = m.Node1(OpKind::kSample, {logits}, {}, ir::NoAttrs{}, std::string(ir::kTokenOutput));
  m.graph.outputs = {logits, token};
}

}  // namespace jllm::cpu_ref::testing
