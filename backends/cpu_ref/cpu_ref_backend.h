// The plain-f32 reference backend: the ground truth other backends are validated against
// (DESIGN.md "Backends"). Weights are dequantized to f32 at Load; every op runs in f32 with
// the rounding choices documented in kernels.h; the KV cache is stored in the per-layer element
// type the graph chose (f16, or int8 with one f16 scale per (position, kv head) row).
//
// The graph must have the input %tokens (i32[T]), optionally %pos (i32[T], fed with pos0,
// pos0+1, ...), no other inputs, and the output %logits (f32[T,V]). A `sample` node is not
// executed: the runtime samples from the logits itself.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace jllm {

std::unique_ptr<Backend> CreateCpuRefBackend();

}  // namespace jllm
