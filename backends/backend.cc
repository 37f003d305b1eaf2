#include "backends/backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace jllm {

absl::StatusOr<absl::Span<const uint8_t>> BlobWeightSource::Bytes(const ir::WeightRef& w) const {
  if (w.offset > blob_.size() || w.nbytes > blob_.size() - w.offset) {
    return absl::OutOfRangeError(absl::StrCat("weight '", w.name, "': bytes [", w.offset, ", ",
                                              w.offset + w.nbytes, ") lie outside the ",
                                              blob_.size(), "-byte weight data"));
  }
  return blob_.subspan(w.offset, w.nbytes);
}

absl::StatusOr<int64_t> Backend::DefaultContext(const ir::Graph& graph, const BackendOptions&) {
  return std::min(graph.config.context_length, kDefaultBackendContext);
}

absl::Status Backend::Forward(absl::Span<const int32_t> tokens, int64_t pos0, LogitsRows rows,
                              std::vector<float>* logits) {
  StepOptions options;
  options.logits = logits;
  options.rows = rows;
  return Step(tokens, pos0, options).status();
}

}  // namespace jllm
