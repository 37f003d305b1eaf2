// A one-layer Qwen3-shaped graph written out by hand (E=8, H=2, Hkv=1, D=8, F=16, V=10, f32
// weights, tied embeddings), following FORMATS.md §5 step by step. Tests use it as the expected
// text of the printer and the Qwen3 builder, and as input to the parser, the serializer and
// every pass.
//
// Every attribute sits away from its default, so that code which drops one and writes the
// default (or computes it from the wrong field) changes this text: rms_eps 1e-5 (not 1e-6),
// rope_base 1e6 (not 1e4), rope_freq_scale 0.5 (not 1), and head_dim D = 8 while E/H = 4, so the
// attention scale is 1/sqrt(8) = 0.35355338, not 1/sqrt(E/H) = 0.5.
//
// Offsets follow GGUF's 32-byte padding: 320, 32, 32, 512, 256, 256, 512, 32, 32, 32, 512, 512,
// 512 bytes.
#pragma once

#include <string>

namespace jllm::testing {

inline constexpr char kTinyModelIr[] =
    R"(jllm-ir 1
config arch=qwen3 n_embd=8 n_layer=1 n_head=2 n_head_kv=1 head_dim=8 n_ff=16 n_vocab=10 context_length=64 rope_base=1e+06 rope_freq_scale=0.5 rms_eps=1e-05 tied_embeddings
kv_cache f16
weight token_embd.weight f32 {8,10} offset=0 size=320
weight output_norm.weight f32 {8} offset=320 size=32
weight blk.0.attn_norm.weight f32 {8} offset=352 size=32
weight blk.0.attn_q.weight f32 {8,16} offset=384 size=512
weight blk.0.attn_k.weight f32 {8,8} offset=896 size=256
weight blk.0.attn_v.weight f32 {8,8} offset=1152 size=256
weight blk.0.attn_output.weight f32 {16,8} offset=1408 size=512
weight blk.0.attn_q_norm.weight f32 {8} offset=1920 size=32
weight blk.0.attn_k_norm.weight f32 {8} offset=1952 size=32
weight blk.0.ffn_norm.weight f32 {8} offset=1984 size=32
weight blk.0.ffn_gate.weight f32 {8,16} offset=2016 size=512
weight blk.0.ffn_up.weight f32 {8,16} offset=2528 size=512
weight blk.0.ffn_down.weight f32 {16,8} offset=3040 size=512
input %tokens: i32[T]
input %pos: i32[T]
%embd: f32[T,8] = embed(%tokens; @token_embd.weight)
%blk.0.attn_in: f32[T,8] = rms_norm(%embd; @blk.0.attn_norm.weight) eps=1e-05
%blk.0.q: f32[T,16] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)
%blk.0.k: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_k.weight)
%blk.0.v: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_v.weight)
%blk.0.q_normed: f32[T,16] = head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=2 head_dim=8 eps=1e-05
%blk.0.k_normed: f32[T,8] = head_rms_norm(%blk.0.k; @blk.0.attn_k_norm.weight) n_head=1 head_dim=8 eps=1e-05
%blk.0.q_rope: f32[T,16] = rope(%blk.0.q_normed, %pos) n_head=2 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=0.5
%blk.0.k_rope: f32[T,8] = rope(%blk.0.k_normed, %pos) n_head=1 head_dim=8 n_rot=8 freq_base=1e+06 freq_scale=0.5
%blk.0.kv: f16[2,S,8] = kv_append(%blk.0.k_rope, %blk.0.v, %pos) layer=0 n_head_kv=1 head_dim=8
%blk.0.attn: f32[T,16] = attention(%blk.0.q_rope, %blk.0.kv, %pos) layer=0 n_head=2 n_head_kv=1 head_dim=8 scale=0.35355338
%blk.0.attn_out: f32[T,8] = matmul(%blk.0.attn; @blk.0.attn_output.weight)
%blk.0.attn_res: f32[T,8] = add(%embd, %blk.0.attn_out)
%blk.0.ffn_in: f32[T,8] = rms_norm(%blk.0.attn_res; @blk.0.ffn_norm.weight) eps=1e-05
%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)
%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)
%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)
%blk.0.ffn_out: f32[T,8] = matmul(%blk.0.ffn_act; @blk.0.ffn_down.weight)
%blk.0.out: f32[T,8] = add(%blk.0.attn_res, %blk.0.ffn_out)
%out_norm: f32[T,8] = rms_norm(%blk.0.out; @output_norm.weight) eps=1e-05
%logits: f32[T,10] = logits(%out_norm; @token_embd.weight)
%token: i32[1] = sample(%logits)
output %logits, %token
)";

// The same model after every pass of the default pipeline, written out by hand: q/k/v and
// gate/up grouped, both layer norms folded into their projections (the final norm stays: it
// feeds logits), both residual adds folded, SwiGLU folded into the gate/up group, and q/k norm +
// RoPE + KV append fused.
inline std::string TinyModelFusedIr() {
  const std::string unfused = kTinyModelIr;
  return unfused.substr(0, unfused.find("%embd")) +
         "%embd: f32[T,8] = embed(%tokens; @token_embd.weight)\n"
         "%blk.0.q: f32[T,16], %blk.0.k: f32[T,8], %blk.0.v: f32[T,8] = matmul_group(%embd; "
         "@blk.0.attn_q.weight, @blk.0.attn_k.weight, @blk.0.attn_v.weight, "
         "@blk.0.attn_norm.weight) norm_eps=1e-05\n"
         "%blk.0.q_rope: f32[T,16], %blk.0.kv: f16[2,S,8] = qk_norm_rope_kv_append(%blk.0.q, "
         "%blk.0.k, %blk.0.v, %pos; @blk.0.attn_q_norm.weight, @blk.0.attn_k_norm.weight) layer=0 "
         "n_head=2 n_head_kv=1 head_dim=8 eps=1e-05 n_rot=8 freq_base=1e+06 freq_scale=0.5\n"
         "%blk.0.attn: f32[T,16] = attention(%blk.0.q_rope, %blk.0.kv, %pos) layer=0 n_head=2 "
         "n_head_kv=1 head_dim=8 scale=0.35355338\n"
         "%blk.0.attn_res: f32[T,8] = matmul(%blk.0.attn, %embd; @blk.0.attn_output.weight) "
         "residual\n"
         "%blk.0.ffn_act: f32[T,16] = matmul_group(%blk.0.attn_res; @blk.0.ffn_gate.weight, "
         "@blk.0.ffn_up.weight, @blk.0.ffn_norm.weight) norm_eps=1e-05 swiglu\n"
         "%blk.0.out: f32[T,8] = matmul(%blk.0.ffn_act, %blk.0.attn_res; @blk.0.ffn_down.weight) "
         "residual\n"
         "%out_norm: f32[T,8] = rms_norm(%blk.0.out; @output_norm.weight) eps=1e-05\n"
         "%logits: f32[T,10] = logits(%out_norm; @token_embd.weight)\n"
         "%token: i32[1] = sample(%logits)\n"
         "output %logits, %token\n";
}

}  // namespace jllm::testing
