// Builds the ir::Graph of a Qwen3 dense model from a GGUF file's metadata and tensor table
// (FORMATS.md §5). Nothing is assumed: every hyper-parameter is read from the file with the
// strict key types llama.cpp uses, and every tensor's presence, dims and type is checked
// against that config before a node is built.
//
// The graph has the core ops only (passes fuse them later). Inputs %tokens and %pos (i32[T]);
// outputs %logits (f32[T,V]) and %token (i32[1]). Per layer N, values are named blk.N.*:
//   attn_in = rms_norm(x) · attn_norm;  q, k, v = matmul(attn_in) by attn_q/k/v
//   q_normed, k_normed = head_rms_norm(q | k) · attn_q_norm | attn_k_norm
//   q_rope, k_rope = rope(q_normed | k_normed, pos)            (NEOX)
//   kv = kv_append(k_rope, v, pos);  attn = attention(q_rope, kv, pos)   (causal, GQA)
//   attn_out = matmul(attn) by attn_output;  attn_res = x + attn_out
//   ffn_in = rms_norm(attn_res) · ffn_norm;  gate, up = matmul(ffn_in) by ffn_gate/ffn_up
//   ffn_act = swiglu(gate, up);  ffn_out = matmul(ffn_act) by ffn_down;  out = attn_res + ffn_out
// then out_norm = rms_norm(x) · output_norm, logits by output.weight, or by token_embd.weight
// when the file has no output.weight (tied embeddings), and token = sample(logits).
#pragma once

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/gguf/gguf_file.h"
#include "ir/graph.h"

namespace jllm::gguf {

// Reads the Qwen3 hyper-parameters. `source` names the file in messages. Refuses any
// general.architecture other than "qwen3" (naming it), keys of the wrong type, per-layer
// arrays whose entries differ, RoPE scaling other than linear, partial RoPE, and
// value_length != key_length. n_vocab is the length of tokenizer.ggml.tokens;
// tied_embeddings is true when `tensors` has no output.weight.
absl::StatusOr<ir::ModelConfig> ReadQwen3Config(const std::vector<KeyValue>& metadata,
                                                const std::vector<TensorInfo>& tensors,
                                                std::string_view source);

// Checks that `tensors` is exactly the Qwen3 tensor set of `config` (FORMATS.md §5 table):
// every tensor present with the expected ne and a type jllm runs (norms f32/f16/bf16), and no
// tensor the graph would not use. Errors name `source` and the tensor.
absl::Status CheckQwen3Tensors(const ir::ModelConfig& config,
                               const std::vector<TensorInfo>& tensors, std::string_view source);

// CheckQwen3Tensors, then the graph (weights in tensor-table order, KV cache f16 everywhere).
absl::StatusOr<ir::Graph> BuildQwen3Graph(const ir::ModelConfig& config,
                                          const std::vector<TensorInfo>& tensors,
                                          std::string_view source);

// ReadQwen3Config + BuildQwen3Graph on an opened file.
absl::StatusOr<ir::Graph> BuildQwen3Graph(const GgufFile& file);

}  // namespace jllm::gguf
