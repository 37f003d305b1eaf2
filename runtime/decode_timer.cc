#include "runtime/decode_timer.h"

#include <chrono>

#include "backends/sampling_params.h"

namespace jllm::runtime {

absl::StatusOr<double> TimeGreedyDecode(Backend& backend, int32_t token, int64_t n, int64_t pos0) {
  SamplingParams greedy;
  greedy.temperature = 0;
  StepOptions o;
  o.sampling = &greedy;
  // Not the step a backend ran ahead after the last timing (a decode step nobody claims).
  if (absl::Status st = backend.Wait(); !st.ok()) return st;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t one[1] = {token};
    absl::StatusOr<int32_t> next = backend.Step(one, pos0 + i, o);
    if (!next.ok()) return next.status();
    token = *next;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace jllm::runtime
