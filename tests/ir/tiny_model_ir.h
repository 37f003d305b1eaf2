// A one-layer Qwen3-shaped graph written out by hand (E=8, H=2, Hkv=1, D=4, F=16, V=10, f32
// weights, tied embeddings), following FORMATS.md §5 step by step. Tests use it as the expected
// text of the printer and the Qwen3 builder, and as input to the parser and serializer.
// Offsets follow GGUF's 32-byte padding: 320, 32, 32, 256, 128, 128, 256, 16→32, 16→32, 32,
// 512, 512 bytes.
#pragma once

namespace jllm::testing {

inline constexpr char kTinyModelIr[] =
    R"(jllm-ir 1
config arch=qwen3 n_embd=8 n_layer=1 n_head=2 n_head_kv=1 head_dim=4 n_ff=16 n_vocab=10 context_length=64 rope_base=10000 rope_freq_scale=1 rms_eps=1e-06 tied_embeddings
kv_cache f16
weight token_embd.weight f32 {8,10} offset=0 size=320
weight output_norm.weight f32 {8} offset=320 size=32
weight blk.0.attn_norm.weight f32 {8} offset=352 size=32
weight blk.0.attn_q.weight f32 {8,8} offset=384 size=256
weight blk.0.attn_k.weight f32 {8,4} offset=640 size=128
weight blk.0.attn_v.weight f32 {8,4} offset=768 size=128
weight blk.0.attn_output.weight f32 {8,8} offset=896 size=256
weight blk.0.attn_q_norm.weight f32 {4} offset=1152 size=16
weight blk.0.attn_k_norm.weight f32 {4} offset=1184 size=16
weight blk.0.ffn_norm.weight f32 {8} offset=1216 size=32
weight blk.0.ffn_gate.weight f32 {8,16} offset=1248 size=512
weight blk.0.ffn_up.weight f32 {8,16} offset=1760 size=512
weight blk.0.ffn_down.weight f32 {16,8} offset=2272 size=512
input %tokens: i32[T]
input %pos: i32[T]
%embd: f32[T,8] = embed(%tokens; @token_embd.weight)
%blk.0.attn_in: f32[T,8] = rms_norm(%embd; @blk.0.attn_norm.weight) eps=1e-06
%blk.0.q: f32[T,8] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)
%blk.0.k: f32[T,4] = matmul(%blk.0.attn_in; @blk.0.attn_k.weight)
%blk.0.v: f32[T,4] = matmul(%blk.0.attn_in; @blk.0.attn_v.weight)
%blk.0.q_normed: f32[T,8] = head_rms_norm(%blk.0.q; @blk.0.attn_q_norm.weight) n_head=2 head_dim=4 eps=1e-06
%blk.0.k_normed: f32[T,4] = head_rms_norm(%blk.0.k; @blk.0.attn_k_norm.weight) n_head=1 head_dim=4 eps=1e-06
%blk.0.q_rope: f32[T,8] = rope(%blk.0.q_normed, %pos) n_head=2 head_dim=4 n_rot=4 freq_base=10000 freq_scale=1
%blk.0.k_rope: f32[T,4] = rope(%blk.0.k_normed, %pos) n_head=1 head_dim=4 n_rot=4 freq_base=10000 freq_scale=1
%blk.0.kv: f16[2,S,4] = kv_append(%blk.0.k_rope, %blk.0.v, %pos) layer=0 n_head_kv=1 head_dim=4
%blk.0.attn: f32[T,8] = attention(%blk.0.q_rope, %blk.0.kv, %pos) layer=0 n_head=2 n_head_kv=1 head_dim=4 scale=0.5
%blk.0.attn_out: f32[T,8] = matmul(%blk.0.attn; @blk.0.attn_output.weight)
%blk.0.attn_res: f32[T,8] = add(%embd, %blk.0.attn_out)
%blk.0.ffn_in: f32[T,8] = rms_norm(%blk.0.attn_res; @blk.0.ffn_norm.weight) eps=1e-06
%blk.0.gate: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_gate.weight)
%blk.0.up: f32[T,16] = matmul(%blk.0.ffn_in; @blk.0.ffn_up.weight)
%blk.0.ffn_act: f32[T,16] = swiglu(%blk.0.gate, %blk.0.up)
%blk.0.ffn_out: f32[T,8] = matmul(%blk.0.ffn_act; @blk.0.ffn_down.weight)
%blk.0.out: f32[T,8] = add(%blk.0.attn_res, %blk.0.ffn_out)
%out_norm: f32[T,8] = rms_norm(%blk.0.out; @output_norm.weight) eps=1e-06
%logits: f32[T,10] = logits(%out_norm; @token_embd.weight)
%token: i32[1] = sample(%logits)
output %logits, %token
)";

}  // namespace jllm::testing
