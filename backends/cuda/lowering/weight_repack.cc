#include "backends/cuda/lowering/weight_repack.h"

#include <cstddef>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cuda/device_layout.h"
#include "ir/absl_compat.h"
#include "quant/block_layout.h"
#include "quant/quant.h"

namespace jllm::cuda {

absl::StatusOr<int64_t> DeviceWeightBytes(const ir::WeightRef& w) {
  if (IsVector(w)) return layout::RowStride(layout::kF32, w.dim(0));
  const int type = static_cast<int>(w.type);
  if (!layout::IsSupported(type)) {
    return absl::UnimplementedError(absl::StrCat("weight '", w.name, "': type ",
                                                 Sv(GgmlTypeName(w.type)),
                                                 " has no CUDA device layout"));
  }
  const int64_t k = w.dim(0);
  if (k % layout::BlockElems(type) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("weight '", w.name, "': rows of ", k,
                                                   " elements are not whole blocks"));
  }
  return w.dim(1) * w.dim(2) * w.dim(3) * layout::RowStride(type, k);
}

bool IsVector(const ir::WeightRef& w) { return w.ne.size() == 1; }

absl::Status RepackRows(const ir::WeightRef& w, int64_t row0, int64_t n_rows,
                        absl::Span<const uint8_t> src, absl::Span<uint8_t> dst) {
  if (IsVector(w)) {
    // Vectors (norm gammas) are f32 on the device, whatever the file stores.
    const int64_t k = w.dim(0);
    if (row0 != 0 || n_rows != 1 || static_cast<int64_t>(src.size()) != RowBytes(w.type, k) ||
        static_cast<int64_t>(dst.size()) != layout::RowStride(layout::kF32, k)) {
      return absl::InvalidArgumentError(absl::StrCat("repacking vector '", w.name, "'"));
    }
    std::memset(dst.data(), 0, dst.size());
    return quant::DequantizeRow(w.type, src.data(), reinterpret_cast<float*>(dst.data()), k);
  }
  const int type = static_cast<int>(w.type);
  const int64_t k = w.dim(0);
  const int64_t src_row = RowBytes(w.type, k);
  const int64_t dst_row = layout::RowStride(type, k);
  const int64_t rows = w.dim(1) * w.dim(2) * w.dim(3);
  if (row0 < 0 || n_rows < 0 || row0 + n_rows > rows ||
      static_cast<int64_t>(src.size()) != n_rows * src_row ||
      static_cast<int64_t>(dst.size()) != n_rows * dst_row) {
    return absl::InvalidArgumentError(absl::StrCat("repacking weight '", w.name, "': rows [", row0,
                                                   ", ", row0 + n_rows, ") with ", src.size(),
                                                   " -> ", dst.size(), " bytes"));
  }
  const int64_t nb = k / layout::BlockElems(type);
  std::memset(dst.data(), 0, dst.size());
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* in = src.data() + r * src_row;
    uint8_t* out = dst.data() + r * dst_row;
    if (!layout::HasScaleTail(type)) {
      std::memcpy(out, in, static_cast<size_t>(src_row));
      continue;
    }
    // Blocks are [d | body] (q8_0) or [body | d] (q6_K); bodies go first, the d values after.
    const int block = static_cast<int>(TypeSize(w.type));
    const int body = layout::BodyBytes(type);
    const int body_at = type == layout::kQ8_0 ? offsetof(quant::BlockQ8_0, qs) : 0;
    const int d_at = type == layout::kQ8_0 ? offsetof(quant::BlockQ8_0, d) : offsetof(quant::BlockQ6_K, d);
    uint8_t* tail = out + layout::TailOffset(type, k);
    for (int64_t b = 0; b < nb; ++b) {
      std::memcpy(out + b * body, in + b * block + body_at, static_cast<size_t>(body));
      std::memcpy(tail + 2 * b, in + b * block + d_at, 2);
    }
  }
  return absl::OkStatus();
}

}  // namespace jllm::cuda
