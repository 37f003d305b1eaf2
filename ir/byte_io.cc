#include "ir/byte_io.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace jllm::ir {

static_assert(std::endian::native == std::endian::little, "jllm files are little-endian");

void ByteWriter::Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }

void ByteWriter::Str(std::string_view s) {
  U32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

absl::Status ByteReader::Error(absl::string_view msg) const {
  return absl::InvalidArgumentError(absl::StrCat(source_, ": ", msg, " (at byte ", pos_, ")"));
}

absl::Status ByteReader::Need(uint64_t n, absl::string_view what) const {
  if (n > remaining()) {
    return Error(absl::StrCat("truncated: ", what, " needs ", n, " bytes, ", remaining(),
                              " left"));
  }
  return absl::OkStatus();
}

namespace {
template <class T>
absl::StatusOr<T> ReadPod(absl::Span<const uint8_t> bytes, uint64_t& pos) {
  T v;
  std::memcpy(&v, bytes.data() + pos, sizeof(T));
  pos += sizeof(T);
  return v;
}
}  // namespace

#define JLLM_READ_POD_(T, what)                          \
  if (auto st = Need(sizeof(T), what); !st.ok()) return st; \
  return ReadPod<T>(bytes_, pos_)

absl::StatusOr<uint8_t> ByteReader::U8(absl::string_view what) { JLLM_READ_POD_(uint8_t, what); }
absl::StatusOr<uint16_t> ByteReader::U16(absl::string_view what) { JLLM_READ_POD_(uint16_t, what); }
absl::StatusOr<uint32_t> ByteReader::U32(absl::string_view what) { JLLM_READ_POD_(uint32_t, what); }
absl::StatusOr<uint64_t> ByteReader::U64(absl::string_view what) { JLLM_READ_POD_(uint64_t, what); }
absl::StatusOr<int64_t> ByteReader::I64(absl::string_view what) { JLLM_READ_POD_(int64_t, what); }
absl::StatusOr<float> ByteReader::F32(absl::string_view what) { JLLM_READ_POD_(float, what); }

#undef JLLM_READ_POD_

absl::StatusOr<std::string> ByteReader::Str(absl::string_view what, uint32_t max_len) {
  auto len = U32(what);
  if (!len.ok()) return len.status();
  if (*len > max_len) {
    return Error(absl::StrCat(what, ": length ", *len, " exceeds the limit ", max_len));
  }
  if (auto st = Need(*len, what); !st.ok()) return st;
  std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), *len);
  pos_ += *len;
  return s;
}

absl::StatusOr<absl::Span<const uint8_t>> ByteReader::Bytes(uint64_t n, absl::string_view what) {
  if (auto st = Need(n, what); !st.ok()) return st;
  auto span = bytes_.subspan(pos_, n);
  pos_ += n;
  return span;
}

absl::StatusOr<uint32_t> ByteReader::Count(absl::string_view what, uint64_t min_item_bytes) {
  auto n = U32(what);
  if (!n.ok()) return n.status();
  if (min_item_bytes > 0 && *n > remaining() / min_item_bytes) {
    return Error(absl::StrCat(what, ": count ", *n, " cannot fit in the ", remaining(),
                              " bytes left"));
  }
  return *n;
}

}  // namespace jllm::ir
