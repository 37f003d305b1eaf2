// Times greedy decode steps on a loaded backend: what jllm-bench's tg rows and jllm-compile
// --tune measure, one definition for both.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "backends/backend.h"

namespace jllm::runtime {

// Seconds for n greedy decode steps at positions pos0, pos0 + 1, ..., starting from `token`,
// each step feeding the token it sampled to the next (the cache must hold [0, pos0)). The clock
// starts after Backend::Wait: a step run ahead after the last timing is not this one's.
absl::StatusOr<double> TimeGreedyDecode(Backend& backend, int32_t token, int64_t n, int64_t pos0);

}  // namespace jllm::runtime
