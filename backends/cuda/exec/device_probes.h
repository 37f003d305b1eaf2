// Microbenchmarks of the device itself, outside any model: the read bandwidth that decode's
// ceiling divides by (jllm-bench's denominator) and what an L2 prefetch leaves in L2
// (jllm-bench --probe l2-prefetch), the question cross-kernel weight prefetching hangs on.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "backends/cuda/exec/device_api.h"

namespace jllm::cuda {

// GB/s of streaming 16-byte loads over a buffer of up to 2 GiB (many times any L2); best of ten.
absl::StatusOr<double> MeasureReadBandwidth(DeviceApi& device);

struct L2ProbeOptions {
  // Buffer sizes in bytes (multiples of 256); empty: 4, 16 and 32 MiB, each at most 3/4 of L2.
  std::vector<int64_t> sizes;
  int64_t flush_bytes = 0;  // read between repetitions to evict the buffer; 0: 4× L2, ≥ 64 MiB
  int reps = 7;             // the median is reported
  int64_t settle_ns = 20000;  // how long the prefetch kernel stays open in the "settled" timing
};

// For each size and each prefetch form (kernels/kernel_args.h L2PrefetchForm; none; bulk chunks of
// 4 KiB, 64 KiB and 1 MiB where the device has bulk copies): the time to read the buffer right
// after the prefetch kernel and, settled, after a prefetch kernel held open for settle_ns (its
// prefetches issued that long before the read starts), the prefetch kernel's own time, and the share
// of the cold-to-warm gain each read got, (cold − t) / (cold − warm), with the buffer evicted
// before every repetition.
absl::StatusOr<ProbeTable> MeasureL2Prefetch(DeviceApi& device, const L2ProbeOptions& options = {});

}  // namespace jllm::cuda
