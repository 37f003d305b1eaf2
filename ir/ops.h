// Op kinds and their typed attributes.
//
// Signatures (shapes outermost first; E embd, V vocab, H/Hkv heads, D head_dim, F ffn width;
// weight dims in ggml ne[] order, ne[0] contiguous). Every activation is f32.
//
//  op                      inputs                     weights                outputs
//  embed                   tokens i32[T]              table {E,V}            f32[T,E]
//  rms_norm                x [T,E]                    gamma {E}              [T,E]
//  matmul                  x [T,K] (+ residual [T,N]) W {K,N} (+ gamma {K})   [T,N]
//  head_rms_norm           x [T,H·D]                  gamma {D}              [T,H·D]
//  rope                    x [T,H·D], pos i32[T]      –                      [T,H·D]
//  kv_append               k [T,Hkv·D], v [T,Hkv·D],  –                      kv cache [2,S,Hkv·D]
//                          pos i32[T]
//  attention               q [T,H·D], kv [2,S,Hkv·D], –                      [T,H·D]
//                          pos i32[T]
//  swiglu                  gate [T,F], up [T,F]       –                      [T,F]
//  add                     a [..], b [..] (same)      –                      [..]
//  logits                  x [T,E]                    W {E,V}                [T,V]
//  sample                  logits [T,V]               –                      token i32[1]
// Fused ops, created only by passes:
//  matmul_group            x [T,K]                    W_i {K,N_i} (+ gamma)  [T,N_i] each, or
//                                                                            one [T,F] (swiglu)
//  qk_norm_rope_kv_append  q [T,H·D], k, v [T,Hkv·D], q_gamma {D},           q [T,H·D],
//                          pos i32[T]                 k_gamma {D}            kv cache [2,S,Hkv·D]
//
// Semantics (FORMATS.md §5):
//  - rms_norm: y = x / sqrt(mean(x²) + eps) · gamma, over the last dimension.
//  - matmul: y[t,o] = Σ_i W[o·K + i] · x[t,i]. Fusion attributes (MatMulAttrs) add an RMSNorm
//    prologue on x, a residual epilogue (y += residual) or, for a (gate, up) group, the SwiGLU
//    epilogue y = silu(gate)·up, silu(g) = g / (1 + e^-g).
//  - head_rms_norm: rms_norm over each D-wide head, with one gamma shared by all heads.
//  - rope: NEOX pairing, pair i rotates (x_i, x_{i+n_rot/2}) by pos·freq_scale·base^(-2i/n_rot).
//  - kv_append: writes k and v of this step at positions pos into the layer's cache, whose
//    element type is graph.kv_dtypes[layer]; the output stands for the cache after the write.
//  - attention: causal (query at position p sees cache positions <= p), GQA (query head h reads
//    kv head h / (H/Hkv)), scores scaled by `scale` before the softmax.
//  - logits: the output projection; sample: picks the next token from the last row of logits
//    (the runtime owns the sampler settings).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/byte_io.h"
#include "ir/fields.h"

namespace jllm::ir {

enum class OpKind : uint8_t {
  kEmbed = 0,
  kRmsNorm,
  kMatMul,
  kHeadRmsNorm,
  kRope,
  kKvAppend,
  kAttention,
  kSwiGlu,
  kAdd,
  kLogits,
  kSample,
  kMatMulGroup,          // fused
  kQkNormRopeKvAppend,   // fused
};
inline constexpr int kNumOpKinds = 13;

std::string_view OpName(OpKind op);  // the snake_case text name: "rms_norm"
std::optional<OpKind> ParseOpName(std::string_view name);
bool IsFusedOp(OpKind op);           // matmul_group, qk_norm_rope_kv_append

// Attributes of embed, swiglu, add, logits and sample.
struct NoAttrs {
  template <class Self, class V>
  static void VisitFields(Self&, V&&) {}
  bool operator==(const NoAttrs&) const = default;
};

struct RmsNormAttrs {
  float eps = 0;
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) { v("eps", s.eps); }
  bool operator==(const RmsNormAttrs&) const = default;
};

// matmul and matmul_group. Weights: the member matrices in order, then, when norm_eps is set,
// the RMSNorm gamma (use MatMulMembers / MatMulNormWeight rather than indexing).
struct MatMulAttrs {
  std::optional<float> norm_eps;  // RMSNorm prologue: W·(rmsnorm(x)·gamma)
  bool residual = false;          // matmul only: inputs[1] is added to the product
  bool swiglu = false;            // matmul_group of exactly (gate, up): one output silu(gate)·up
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("norm_eps", s.norm_eps);
    v("residual", s.residual);
    v("swiglu", s.swiglu);
  }
  bool operator==(const MatMulAttrs&) const = default;
};

struct HeadRmsNormAttrs {
  int64_t n_head = 0;
  int64_t head_dim = 0;
  float eps = 0;
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("n_head", s.n_head);
    v("head_dim", s.head_dim);
    v("eps", s.eps);
  }
  bool operator==(const HeadRmsNormAttrs&) const = default;
};

// NEOX RoPE (the only kind Qwen3 uses).
struct RopeAttrs {
  int64_t n_head = 0;
  int64_t head_dim = 0;
  int64_t n_rot = 0;  // rotated dims per head, even, <= head_dim (Qwen3: = head_dim)
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("n_head", s.n_head);
    v("head_dim", s.head_dim);
    v("n_rot", s.n_rot);
    v("freq_base", s.freq_base);
    v("freq_scale", s.freq_scale);
  }
  bool operator==(const RopeAttrs&) const = default;
};

struct KvAppendAttrs {
  int64_t layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("layer", s.layer);
    v("n_head_kv", s.n_head_kv);
    v("head_dim", s.head_dim);
  }
  bool operator==(const KvAppendAttrs&) const = default;
};

struct AttentionAttrs {
  int64_t layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 0;  // 1/sqrt(head_dim) for Qwen3
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("layer", s.layer);
    v("n_head", s.n_head);
    v("n_head_kv", s.n_head_kv);
    v("head_dim", s.head_dim);
    v("scale", s.scale);
  }
  bool operator==(const AttentionAttrs&) const = default;
};

// head_rms_norm on q and k (eps shared), NEOX RoPE on both, then kv_append of (k, v).
struct QkNormRopeKvAppendAttrs {
  int64_t layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float eps = 0;
  int64_t n_rot = 0;
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  template <class Self, class V>
  static void VisitFields(Self& s, V&& v) {
    v("layer", s.layer);
    v("n_head", s.n_head);
    v("n_head_kv", s.n_head_kv);
    v("head_dim", s.head_dim);
    v("eps", s.eps);
    v("n_rot", s.n_rot);
    v("freq_base", s.freq_base);
    v("freq_scale", s.freq_scale);
  }
  bool operator==(const QkNormRopeKvAppendAttrs&) const = default;
};

using Attrs = std::variant<NoAttrs, RmsNormAttrs, MatMulAttrs, HeadRmsNormAttrs, RopeAttrs,
                           KvAppendAttrs, AttentionAttrs, QkNormRopeKvAppendAttrs>;

// The factor between consecutive NEOX RoPE angles, base^(-2/n_rot), computed in f32 as ggml's
// rope cache does; every backend builds the angles θ_{i+1} = θ_i · step from it.
float RopeThetaStep(float freq_base, int64_t n_rot);

// The attribute struct an op kind takes, default-initialised.
Attrs DefaultAttrs(OpKind op);
bool AttrsMatchOp(OpKind op, const Attrs& attrs);

// Text form of the attributes ("eps=1e-06"; fields.h describes it) and back.
std::string AttrsToText(const Attrs& attrs);
absl::StatusOr<Attrs> AttrsFromText(OpKind op, const std::vector<fields::TextField>& text,
                                    std::string_view context);
// Binary form (the op kind is stored separately, before it).
void WriteAttrs(const Attrs& attrs, ByteWriter& w);
absl::StatusOr<Attrs> ReadAttrs(OpKind op, ByteReader& r);

}  // namespace jllm::ir
