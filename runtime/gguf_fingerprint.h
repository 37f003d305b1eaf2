// A cheap identity check for the GGUF file a plan was compiled from: its size, its data-blob
// offset, a hash of every byte before the blob (header, metadata, tensor table) and a hash of
// a few fixed samples of the blob. It reads the header plus 64 KiB of data, never the whole
// file, so checking a 2.5 GB model at start-up costs milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace jllm::runtime {

inline constexpr int kFingerprintSamples = 16;
inline constexpr uint64_t kFingerprintSampleBytes = 4096;

struct GgufFingerprint {
  uint64_t file_size = 0;
  uint64_t data_offset = 0;  // start of the tensor-data blob in the file
  uint64_t header_hash = 0;  // StableHash64 of bytes [0, data_offset)
  uint64_t sample_hash = 0;  // StableHash64 of the sampled blob chunks, in order
  bool operator==(const GgufFingerprint&) const = default;
};

// The sampled byte ranges [begin, end) of a file: kFingerprintSamples chunks of
// kFingerprintSampleBytes whose starts are at fractions i/(n-1) of the blob's usable range, so
// the first starts at the blob and the last ends at the end of the file (a blob shorter than
// one chunk is sampled whole, once). Ranges may overlap in small files.
std::vector<std::pair<uint64_t, uint64_t>> FingerprintSampleRanges(uint64_t file_size,
                                                                   uint64_t data_offset);

// The fingerprint of a file image; `data_offset` must not exceed the image size.
absl::StatusOr<GgufFingerprint> ComputeGgufFingerprint(absl::Span<const uint8_t> file,
                                                       uint64_t data_offset);

// OK if `actual` equals `expected`; otherwise FailedPrecondition saying what changed in
// `gguf_path` and that `plan_path` must be recompiled. `compiled_from`, when not empty, is the
// path the plan recorded and `gguf_path` a replacement the user named (jllm-run --model): a
// mismatch then says that it is a different model, and never advises compiling it over the
// plan.
absl::Status CheckGgufFingerprint(const GgufFingerprint& expected, const GgufFingerprint& actual,
                                  const std::string& gguf_path, const std::string& plan_path,
                                  const std::string& compiled_from = "");

}  // namespace jllm::runtime
