// Hand-written IR of one Qwen3 attention block with a Q4_K_M weight mix: E=512, H=2, Hkv=1,
// D=128; attn_q and attn_k are q4_K, attn_v is q6_K (sizes: rows × 144 or 210 bytes per
// 256-element block). Shared by the pass tests that need differing quant types.
//
// As in tests/ir/tiny_model_ir.h every attribute is off its default: eps 1e-5, RoPE base 1e6,
// freq_scale 0.5, and D = 128 while E/H = 256 (attention scale 1/sqrt(128) = 0.088388346, not
// 1/sqrt(256) = 0.0625).
#pragma once

namespace jllm::passes::testing {

inline constexpr char kAttentionLayerIr[] = R"(jllm-ir 1
config arch=qwen3 n_embd=512 n_layer=1 n_head=2 n_head_kv=1 head_dim=128 n_ff=512 n_vocab=16 context_length=128 rope_base=1e+06 rope_freq_scale=0.5 rms_eps=1e-05
kv_cache f16
weight blk.0.attn_q.weight q4_K {512,256} offset=0 size=73728
weight blk.0.attn_k.weight q4_K {512,128} offset=73728 size=36864
weight blk.0.attn_v.weight q6_K {512,128} offset=110592 size=53760
weight blk.0.attn_q_norm.weight f32 {128} offset=164352 size=512
weight blk.0.attn_k_norm.weight f32 {128} offset=164864 size=512
input %x: f32[T,512]
input %pos: i32[T]
%q: f32[T,256] = matmul(%x; @blk.0.attn_q.weight)
%k: f32[T,128] = matmul(%x; @blk.0.attn_k.weight)
%v: f32[T,128] = matmul(%x; @blk.0.attn_v.weight)
%q_normed: f32[T,256] = head_rms_norm(%q; @blk.0.attn_q_norm.weight) n_head=2 head_dim=128 eps=1e-05
%k_normed: f32[T,128] = head_rms_norm(%k; @blk.0.attn_k_norm.weight) n_head=1 head_dim=128 eps=1e-05
%q_rope: f32[T,256] = rope(%q_normed, %pos) n_head=2 head_dim=128 n_rot=128 freq_base=1e+06 freq_scale=0.5
%k_rope: f32[T,128] = rope(%k_normed, %pos) n_head=1 head_dim=128 n_rot=128 freq_base=1e+06 freq_scale=0.5
%kv: f16[2,S,128] = kv_append(%k_rope, %v, %pos) layer=0 n_head_kv=1 head_dim=128
%attn: f32[T,256] = attention(%q_rope, %kv, %pos) layer=0 n_head=2 n_head_kv=1 head_dim=128 scale=0.088388346
output %attn
)";

}  // namespace jllm::passes::testing
