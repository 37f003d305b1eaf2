// The weights a plan runs with: the GGUF file it names, memory-mapped and checked against the
// fingerprint recorded at compile time, exposed to a backend as a WeightSource over the data
// blob (WeightRef offsets are relative to the blob).
//
// cpu_ref reads straight from the mapping. A device backend copies what it needs once (on a
// Jetson, streaming through a small staging buffer so the page cache does not hold a second
// copy); Release() then tells the kernel the mapped pages are not needed any more.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "runtime/gguf_fingerprint.h"
#include "frontends/gguf/mapped_file.h"

namespace jllm::runtime {

using gguf::MappedFile;

// Where a plan's weights live (the plan file's weight-source section).
struct WeightSourceInfo {
  std::string gguf_path;  // absolute
  GgufFingerprint fingerprint;
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

  absl::StatusOr<absl::Span<const uint8_t>> Bytes(const ir::WeightRef& w) const override;

  const std::string& path() const { return file_->path(); }
  absl::Span<const uint8_t> blob() const { return blob_; }
  // Advises the kernel that bytes [begin, end) of `w` may be dropped, mapping and page cache
  // alike (a device backend copied them).
  void Release(const ir::WeightRef& w, uint64_t begin, uint64_t end) const override;
  // The same for the whole file.
  void ReleasePages() const;

 private:
  PlanWeights(std::unique_ptr<MappedFile> file, uint64_t data_offset);
  std::unique_ptr<MappedFile> file_;
  absl::Span<const uint8_t> blob_;
  BlobWeightSource source_;
};

// The WeightSourceInfo of a GGUF file image at `path` (made absolute), for jllm-compile.
absl::StatusOr<WeightSourceInfo> DescribeGgufWeights(const std::string& path,
                                                     absl::Span<const uint8_t> file_bytes,
                                                     uint64_t data_offset);

}  // namespace jllm::runtime
