// Little-endian binary writing and bounds-checked reading, for the graph serialization and the
// plan file. The reader never reads past its span; every failure is a Status naming the source
// (e.g. the file), the offset and what was being read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace jllm::ir {

class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Raw(&v, 2); }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void I64(int64_t v) { Raw(&v, 8); }
  void F32(float v) { Raw(&v, 4); }
  void Str(std::string_view s);  // u32 length, then the bytes
  void Bytes(std::string_view b) { out_.append(b); }

  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Raw(const void* p, size_t n);  // little-endian hosts only (static_assert in the .cc)
  std::string out_;
};

class ByteReader {
 public:
  // `source` names the input in messages ("plan.bin", "graph section").
  ByteReader(absl::Span<const uint8_t> bytes, std::string source)
      : bytes_(bytes), source_(std::move(source)) {}
  ByteReader(std::string_view bytes, std::string source)
      : ByteReader(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             bytes.size()),
                   std::move(source)) {}

  // `what` names the field in the error message.
  absl::StatusOr<uint8_t> U8(absl::string_view what);
  absl::StatusOr<uint16_t> U16(absl::string_view what);
  absl::StatusOr<uint32_t> U32(absl::string_view what);
  absl::StatusOr<uint64_t> U64(absl::string_view what);
  absl::StatusOr<int64_t> I64(absl::string_view what);
  absl::StatusOr<float> F32(absl::string_view what);
  // A u32-length-prefixed string; lengths above `max_len` are an error (no huge allocations).
  absl::StatusOr<std::string> Str(absl::string_view what, uint32_t max_len = 1u << 20);
  absl::StatusOr<absl::Span<const uint8_t>> Bytes(uint64_t n, absl::string_view what);
  // A count of items each at least `min_item_bytes` long; error if the rest cannot hold them,
  // so a corrupt count never drives a large allocation.
  absl::StatusOr<uint32_t> Count(absl::string_view what, uint64_t min_item_bytes);

  uint64_t offset() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }
  // An InvalidArgument error "<source>: <msg> (at byte <offset>)".
  absl::Status Error(absl::string_view msg) const;

 private:
  absl::Status Need(uint64_t n, absl::string_view what) const;
  absl::Span<const uint8_t> bytes_;
  std::string source_;
  uint64_t pos_ = 0;
};

}  // namespace jllm::ir
