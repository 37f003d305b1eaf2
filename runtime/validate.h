// --validate: two backends (the reference, cpu_ref, and one under test) run the same tokens in
// lockstep; every step's logits are compared — max |Δ|, that over max |reference| (relative),
// and whether the arg-maxes agree — and the tokens fed next are the ones the backend under test
// samples, so the check follows the path a user's generation takes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "backends/backend.h"

namespace jllm::runtime {

struct ValidationBounds {
  // The oracle's bound for the CUDA backend against transformers (docs/VALIDATION.md): the
  // kernels compute in f32 like cpu_ref but in another order, and prefill tiles differ.
  double max_relative = 5e-3;
};

struct ValidationStep {
  int64_t position = 0;   // of the (last) token whose logits these are
  int32_t token = 0;      // that token
  double max_abs = 0;     // max |test - ref| over the vocabulary
  double relative = 0;    // max_abs / max |ref|
  int32_t ref_top = -1, test_top = -1;
  bool near_tie = false;  // the reference's top two are closer than 2 max_abs: either may win
};

struct ValidationReport {
  std::vector<ValidationStep> steps;
  int64_t top1_agree = 0, top1_ties = 0;
  double worst_relative = 0;
  bool passed = false;
  std::string Summary() const;  // one line
};

// Prefills `prompt` on both (each chunk's last row compared), then decodes `n_decode` steps
// feeding the test backend's samples (drawn with `sampling`). Both must be loaded with the same
// graph and hold nothing (positions from 0).
absl::StatusOr<ValidationReport> ValidateLockstep(Backend& ref, Backend& test,
                                                  absl::Span<const int32_t> prompt, int64_t n_decode,
                                                  const SamplingParams& sampling,
                                                  const ValidationBounds& bounds = {});

}  // namespace jllm::runtime
