#include "backends/cpu_ref/weight_store.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "quant/quant.h"
#include "ir/absl_compat.h"
#include "ir/status.h"

namespace jllm::cpu_ref {
namespace {

absl::Status WeightError(const ir::WeightRef& w, const absl::Status& cause) {
  return absl::Status(cause.code(), absl::StrCat("cpu_ref: weight '", w.name, "' (",
                                                 Sv(GgmlTypeName(w.type)), "): ", cause.message()));
}

// Memory for n floats, left uninitialized. Big buffers are 2 MiB aligned and advised to use
// huge pages: a 0.6B model is ~3 GB of f32, and faulting it in 4 KiB at a time dominated load.
float* AllocateF32(size_t n) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = std::max<size_t>(1, n * sizeof(float));
  if (bytes < kHugePage) return static_cast<float*>(std::malloc(bytes));
  const size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, rounded);
#ifdef MADV_HUGEPAGE
  if (p != nullptr) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return static_cast<float*>(p);
}

}  // namespace

void WeightStore::Free::operator()(float* p) const { std::free(p); }

absl::StatusOr<WeightStore> WeightStore::Load(const ir::Graph& graph, const WeightSource& source,
                                              ThreadPool& pool) {
  std::vector<bool> used(graph.weights.size(), false);
  for (const ir::Node& n : graph.nodes) {
    for (ir::WeightId w : n.weights) used[w] = true;
  }
  // First pass: every byte range present and every type decodable (one block as a probe).
  std::vector<absl::Span<const uint8_t>> bytes(graph.weights.size());
  for (size_t i = 0; i < graph.weights.size(); ++i) {
    if (!used[i]) continue;
    const ir::WeightRef& w = graph.weights[i];
    auto span = source.Bytes(w);
    if (!span.ok()) return WeightError(w, span.status());
    if (span->size() != w.nbytes) {
      return WeightError(w, absl::OutOfRangeError(absl::StrCat(
                                "the weight source gave ", span->size(), " bytes, expected ",
                                w.nbytes)));
    }
    const GgmlTypeTraits& traits = TraitsOf(w.type);
    std::vector<float> probe(traits.block_size);
    absl::Status st = quant::DequantizeRow(w.type, span->data(), probe.data(), traits.block_size);
    if (!st.ok()) return WeightError(w, st);
    bytes[i] = *span;
  }

  WeightStore store;
  store.f32_.resize(graph.weights.size());
  for (size_t i = 0; i < graph.weights.size(); ++i) {
    if (!used[i]) continue;
    const ir::WeightRef& w = graph.weights[i];
    const int64_t row = w.dim(0);
    const int64_t rows = w.dim(1) * w.dim(2) * w.dim(3);
    const int64_t row_bytes = RowBytes(w.type, row);
    float* dst = AllocateF32(static_cast<size_t>(row * rows));
    if (dst == nullptr) {
      return WeightError(w, absl::ResourceExhaustedError(absl::StrCat(
                                "cannot allocate ", row * rows * 4, " bytes for its f32 copy")));
    }
    store.f32_[i].reset(dst);
    std::mutex mu;
    absl::Status error;
    pool.ParallelFor(rows, [&](int64_t begin, int64_t end) {
      absl::Status st = quant::DequantizeRow(w.type, bytes[i].data() + begin * row_bytes,
                                             dst + begin * row, (end - begin) * row);
      std::lock_guard<std::mutex> lock(mu);
      error.Update(st);
    }, /*min_chunk=*/16);
    if (!error.ok()) return WeightError(w, error);
  }
  return store;
}

const float* WeightStore::data(ir::WeightId w) const {
  if (w < 0 || static_cast<size_t>(w) >= f32_.size()) return nullptr;
  return f32_[w].get();
}

}  // namespace jllm::cpu_ref
