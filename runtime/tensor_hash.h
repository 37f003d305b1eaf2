// The full-content fingerprint of a plan's weights: one XXH3-64 per tensor the graph reads,
// recorded by jllm-compile and checked by PlanWeights as each tensor is first handed to the
// backend — the backend reads those bytes right after, so checking costs no extra pass over
// the file. (The header fingerprint, gguf_fingerprint.h, stays the fast "same file?" test at
// start-up; this one catches any changed byte of any weight.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace jllm::runtime {

struct TensorHash {
  std::string name;     // the GGUF tensor name, for messages
  uint64_t offset = 0;  // byte offset in the data blob (ir::WeightRef::offset)
  uint64_t nbytes = 0;
  uint64_t xxh3 = 0;    // XXH3-64 (seed 0) of the tensor's bytes
  bool operator==(const TensorHash&) const = default;
};

// XXH3-64 of `bytes` (seed 0): the value is fixed by the xxHash specification.
uint64_t TensorBytesHash(absl::Span<const uint8_t> bytes);

// One TensorHash per weight of `weights`, in order, over the data blob. A weight whose bytes
// lie outside the blob is an error naming it.
absl::StatusOr<std::vector<TensorHash>> HashTensors(absl::Span<const ir::WeightRef> weights,
                                                    absl::Span<const uint8_t> blob);

}  // namespace jllm::runtime
