// Bounds-checked little-endian reader over an in-memory byte range. Every read checks the
// bytes left first, so a corrupt length or count in a file can never read past its end.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace jllm::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian; jllm reads it with plain loads");

class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  uint64_t size() const { return size_; }
  uint64_t remaining() const { return size_ - pos_; }

  // OK when `n` more bytes are present; the error says where and how many were missing.
  absl::Status Need(uint64_t n) const {
    if (n <= remaining()) return absl::OkStatus();
    return absl::OutOfRangeError(absl::StrCat("need ", n, " bytes at offset ", pos_, " but only ",
                                              remaining(), " remain"));
  }

  template <typename T>
  absl::Status Read(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (absl::Status s = Need(sizeof(T)); !s.ok()) return s;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return absl::OkStatus();
  }

  // A GGUF string: u64 length, then that many bytes. The view points into the buffer.
  absl::Status ReadString(std::string_view* out) {
    uint64_t len = 0;
    const uint64_t at = pos_;
    if (absl::Status s = Read(&len); !s.ok()) return s;
    if (len > remaining()) {
      pos_ = at;
      return absl::OutOfRangeError(absl::StrCat("string length ", len, " at offset ", at,
                                                " exceeds the ", remaining(),
                                                " bytes left in the file"));
    }
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return absl::OkStatus();
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace jllm::gguf
