// Reads the in-step trace (kernels/kernel_trace.h, JLLM_TRACE=1): the records the CTAs of one
// decode step's launches left, matched to the launches, as per-launch times on the step's
// timeline. Pure: the runner copies the buffer back and says which launches ran.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::cuda {

struct TracedLaunch {
  int tag = 0;   // the spec's index + 1 (the kernel's JLLM_TRACE)
  int ctas = 0;  // CTAs launched (grid x · grid y)
};

// One CTA's stamps, in nanoseconds from the step's first CTA entry (-1: not stamped).
struct CtaTrace {
  int x = 0, y = 0;  // blockIdx
  int sm = -1;       // the SM it ran on
  double entry = 0, wait = -1, mark = -1, streamed = -1, exit = 0;
};

// One launch on the step's timeline, in nanoseconds from the step's first CTA entry.
struct LaunchTrace {
  double first_entry = 0;  // its first CTA began (with PDL: possibly long before its predecessor ends)
  double first_wait = -1;  // its first CTA passed its grid wait (-1: it has none)
  double last_exit = 0;    // its last CTA ended
  double median_exit = 0;  // half its CTAs that stamped a mark had ended (of all, if none did)
  double staged = -1;      // mean over CTAs of mark − wait (the GEMV: x staged; -1: no mark)
  double stream = -1;      // mean over CTAs of streamed − mark (the GEMV's loop; -1: not stamped)
  double tail = -1;        // mean over CTAs of exit − streamed (the GEMV: cut items, results)
  // On the critical path: from the previous launch's last exit (this launch's first entry for
  // the first) to this one's; and from there to this launch's first CTA past its wait.
  double step = 0;
  double release = -1;
  std::vector<CtaTrace> ctas;  // its CTAs, in the order they passed the wait (entered, without one)
};

// `buffer`: the trace as the device left it (header and records); `launches`: the step's
// launches in order. The k-th launch of a tag takes, of that tag's records in the order their
// CTAs passed the wait (entered, without one), the k-th run of `ctas`: every CTA of a launch
// passes its wait before any CTA of a later launch of the same kernel, which depends on it.
// Errors: a full buffer, or records that do not match the launches (a count off).
absl::StatusOr<std::vector<LaunchTrace>> ReadStepTrace(absl::Span<const uint64_t> buffer,
                                                       absl::Span<const TracedLaunch> launches);

}  // namespace jllm::cuda
