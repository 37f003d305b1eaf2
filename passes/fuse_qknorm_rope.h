// fuse-qknorm-rope: per layer, the chain
//   q_normed = head_rms_norm(q); q_rope = rope(q_normed, pos)
//   k_normed = head_rms_norm(k); k_rope = rope(k_normed, pos); kv = kv_append(k_rope, v, pos)
// becomes one qk_norm_rope_kv_append(q, k, v, pos; q_gamma, k_gamma) -> (q_rope, kv), which
// normalizes and rotates q and k in registers and writes k and v straight into the cache.
// Requires: the attention reading kv takes q_rope; both norms share eps; both ropes share
// n_rot, base and scale; the intermediates have no other reader. Options: none.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace jllm::passes {

absl::StatusOr<PassResult> RunFuseQkNormRope(ir::Graph& graph, const PassOptions& options);

}  // namespace jllm::passes
