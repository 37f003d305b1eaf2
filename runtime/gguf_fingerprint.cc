#include "runtime/gguf_fingerprint.h"

#include "absl/strings/str_cat.h"
#include "runtime/stable_hash.h"

namespace jllm::runtime {

std::vector<std::pair<uint64_t, uint64_t>> FingerprintSampleRanges(uint64_t file_size,
                                                                   uint64_t data_offset) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (data_offset >= file_size) return ranges;
  const uint64_t blob = file_size - data_offset;
  if (blob <= kFingerprintSampleBytes) {
    ranges.emplace_back(data_offset, file_size);
    return ranges;
  }
  const uint64_t span = blob - kFingerprintSampleBytes;  // usable start positions: [0, span]
  for (int i = 0; i < kFingerprintSamples; ++i) {
    // span * i / (n-1) without overflow: span < 2^63 and i < 16 would overflow for huge files,
    // so split the division.
    const uint64_t n1 = kFingerprintSamples - 1;
    const uint64_t start = (span / n1) * i + (span % n1) * i / n1;
    ranges.emplace_back(data_offset + start, data_offset + start + kFingerprintSampleBytes);
  }
  return ranges;
}

absl::StatusOr<GgufFingerprint> ComputeGgufFingerprint(absl::Span<const uint8_t> file,
                                                       uint64_t data_offset) {
  if (data_offset > file.size()) {
    return absl::InvalidArgumentError(absl::StrCat("data offset ", data_offset,
                                                   " lies past the end of the ", file.size(),
                                                   "-byte file"));
  }
  GgufFingerprint fp;
  fp.file_size = file.size();
  fp.data_offset = data_offset;
  fp.header_hash = Hash64(file.subspan(0, data_offset));
  StableHash64 samples;
  for (const auto& [begin, end] : FingerprintSampleRanges(file.size(), data_offset)) {
    samples.UpdateU64(begin);
    samples.Update(file.subspan(begin, end - begin));
  }
  fp.sample_hash = samples.Digest();
  return fp;
}

absl::Status CheckGgufFingerprint(const GgufFingerprint& expected, const GgufFingerprint& actual,
                                  const std::string& gguf_path, const std::string& plan_path,
                                  const std::string& compiled_from) {
  std::string what;
  if (actual.file_size != expected.file_size) {
    what = absl::StrCat("its size was ", expected.file_size, " bytes, now ", actual.file_size);
  } else if (actual.data_offset != expected.data_offset ||
             actual.header_hash != expected.header_hash) {
    what = "its header, metadata or tensor table differ";
  } else if (actual.sample_hash != expected.sample_hash) {
    what = "its tensor data differ";
  } else {
    return absl::OkStatus();
  }
  if (!compiled_from.empty()) {
    std::string differs =
        actual.file_size != expected.file_size
            ? absl::StrCat("it is ", actual.file_size, " bytes, the compiled model ",
                           expected.file_size)
            : what;
    return absl::FailedPreconditionError(absl::StrCat(
        gguf_path, " is a different model from the one ", plan_path, " was compiled from (",
        compiled_from, "): ", differs, ". Use the model it was compiled from, or compile this one "
        "into a plan of its own: `jllm-compile ", gguf_path, " -o NEW.plan`"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      plan_path, ": the model file ", gguf_path, " has changed since the plan was compiled (",
      what, "). Re-run `jllm-compile ", gguf_path, " -o ", plan_path, "`"));
}

}  // namespace jllm::runtime
