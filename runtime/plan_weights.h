// The weights a plan runs with: the GGUF file it names, memory-mapped and checked against the
// fingerprint recorded at compile time, exposed to a backend as a WeightSource over the data
// blob (WeightRef offsets are relative to the blob).
//
// cpu_ref reads straight from the mapping. A device backend copies what it needs once (on a
// Jetson, streaming through a small staging buffer so the page cache does not hold a second
// copy); Release() then tells the kernel the mapped pages are not needed any more.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "runtime/gguf_fingerprint.h"
#include "runtime/tensor_hash.h"
#include "frontends/gguf/mapped_file.h"

namespace jllm::runtime {

using gguf::MappedFile;

// Where a plan's weights live (the plan file's weight-source section).
struct WeightSourceInfo {
  std::string gguf_path;  // absolute
  GgufFingerprint fingerprint;
  // One full hash per tensor the graph reads (jllm-compile records every one). Empty only for
  // an info built in memory without hashes: then tensors are not checked one by one.
  std::vector<TensorHash> tensors;
  bool operator==(const WeightSourceInfo&) const = default;
};

class PlanWeights : public WeightSource {
 public:
  // Maps info.gguf_path (or `path_override`, when the model was moved: the fingerprint then
  // proves it is the same file) and checks its fingerprint. Errors say whether the file is
  // missing or changed and how to fix it; `plan_path` names the plan in them.
  static absl::StatusOr<std::unique_ptr<PlanWeights>> Open(const WeightSourceInfo& info,
                                                           const std::string& plan_path,
                                                           const std::string& path_override = "");

  // The bytes of `w`. The first time a tensor is asked for, its bytes are hashed and compared
  // with the hash jllm-compile recorded: a changed tensor is a DataLoss error naming it, the
  // GGUF and the plan. (The backend reads the bytes right after, so this adds no pass over the
  // file.) Safe to call from several threads.
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override;

  const std::string& path() const { return file_->path(); }
  absl::Span<const uint8_t> blob() const { return blob_; }
  // Advises the kernel that bytes [begin, end) of `w` may be dropped, mapping and page cache
  // alike (a device backend copied them).
  void Release(const ir::WeightRef& w, uint64_t begin, uint64_t end) const override;
  // The same for the whole file.
  void ReleasePages() const;

 private:
  PlanWeights(std::unique_ptr<MappedFile> file, uint64_t data_offset,
              std::vector<TensorHash> tensors, std::string plan_path);
  absl::Status CheckTensor(const ir::WeightRef& w, absl::Span<const uint8_t> bytes) const;
  std::unique_ptr<MappedFile> file_;
  absl::Span<const uint8_t> blob_;
  BlobWeightSource source_;
  std::vector<TensorHash> tensors_;
  absl::flat_hash_map<uint64_t, size_t> tensor_at_;  // blob offset -> index in tensors_
  std::unique_ptr<std::atomic<bool>[]> verified_;    // by index in tensors_
  std::string plan_path_;
};

// The WeightSourceInfo of a GGUF file image at `path` (made absolute), for jllm-compile: the
// header fingerprint and the full hash of each of `tensors` (the graph's weights).
absl::StatusOr<WeightSourceInfo> DescribeGgufWeights(const std::string& path,
                                                     absl::Span<const uint8_t> file_bytes,
                                                     uint64_t data_offset,
                                                     absl::Span<const ir::WeightRef> tensors = {});

}  // namespace jllm::runtime
