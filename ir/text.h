// The IR's text form: what `jllm-compile --dump-ir` shows and what pass tests are written in.
//
//   jllm-ir 1
//   config arch=qwen3 n_embd=1024 n_layer=28 ... rms_eps=1e-06 tied_embeddings
//   kv_cache f16 f16 ...                         (one KV element type per layer)
//   weight blk.0.attn_q.weight q4_K {1024,2048} offset=0 size=1179648
//   input %tokens: i32[T]
//   %blk.0.q: f32[T,2048] = matmul(%blk.0.attn_in; @blk.0.attn_q.weight)
//   %a: f32[T,8], %b: f32[T,8] = matmul_group(%x; @wa, @wb, @gamma) norm_eps=1e-06
//   output %logits, %token
//
// One line per entry, in this order; a node line is `outputs = op(inputs; weights) attrs`.
// Weight dims are in ggml ne[] order inside braces; value shapes are outermost first inside
// brackets (ir/types.h). Names made of [A-Za-z0-9_.+-] print bare, others double-quoted with
// C escapes. Floats print in their shortest exact form, so Parse(Print(g)) reproduces g.
// Parse also accepts blank lines and '#' comments.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace jllm::ir {

inline constexpr int kTextFormatVersion = 1;

std::string Print(const Graph& g);

// Reads the text form. It checks syntax and that every name it references is declared
// somewhere in the text, not the graph's semantics: run Verify for those (so a test can write an
// invalid graph as text and check that Verify rejects it). Errors name the line.
absl::StatusOr<Graph> Parse(std::string_view text);

}  // namespace jllm::ir
