#include "runtime/tensor_hash.h"

#include "absl/strings/str_cat.h"

#define XXH_INLINE_ALL
#include "xxhash.h"

namespace jllm::runtime {

uint64_t TensorBytesHash(absl::Span<const uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

absl::StatusOr<std::vector<TensorHash>> HashTensors(absl::Span<const ir::WeightRef> weights,
                                                    absl::Span<const uint8_t> blob) {
  std::vector<TensorHash> out;
  out.reserve(weights.size());
  for (const ir::WeightRef& w : weights) {
    if (w.offset > blob.size() || w.nbytes > blob.size() - w.offset) {
      return absl::OutOfRangeError(absl::StrCat("tensor '", w.name, "' (bytes [", w.offset, ", +",
                                                w.nbytes, ")) lies outside the ", blob.size(),
                                                "-byte data blob"));
    }
    out.push_back({w.name, w.offset, w.nbytes, TensorBytesHash(blob.subspan(w.offset, w.nbytes))});
  }
  return out;
}

}  // namespace jllm::runtime
