// Rows of a GGUF weight rewritten into the CUDA backend's device layout (device_layout.h) while
// they are uploaded: every row padded to 16 bytes, q6_K and q8_0 block scales moved behind the
// row's block bodies, vectors widened to f32. Lossless; the kernels read the result.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/graph.h"

namespace jllm::cuda {

// A 1-D weight (a norm gamma): stored as f32 on the device, whatever its file type.
bool IsVector(const ir::WeightRef& w);

// Bytes `w` occupies on the device: rows (ne[1]·ne[2]·ne[3]) times the row stride.
absl::StatusOr<int64_t> DeviceWeightBytes(const ir::WeightRef& w);

// Rows [row0, row0 + n_rows) of `w` from its GGUF bytes `src` (exactly those rows) into `dst`
// (n_rows device row strides). Padding bytes are zero.
absl::Status RepackRows(const ir::WeightRef& w, int64_t row0, int64_t n_rows,
                        absl::Span<const uint8_t> src, absl::Span<uint8_t> dst);

}  // namespace jllm::cuda
