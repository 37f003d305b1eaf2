// Read-only view of a safetensors file (the Hugging Face checkpoint format), memory-mapped:
//   u64 little-endian header length N, N bytes of JSON header, then the data section.
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
// relative to the data section) and may hold "__metadata__" (string -> string). Everything is
// validated before use, as the safetensors library does: the header fits the file, every
// tensor's byte range lies inside the data section and equals shape × dtype size, and the
// ranges tile the data section exactly (no overlap, no hole, nothing after the last one).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontends/gguf/mapped_file.h"

namespace jllm::gguf {

// The dtypes safetensors defines. jllm converts only F32, F16 and BF16; the others are parsed
// (so their byte ranges can be checked) and refused when their values are asked for.
enum class SafetensorsDType {
  kBool, kU8, kI8, kF8E4M3, kF8E5M2, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kI64, kU64, kF64,
};
std::string_view SafetensorsDTypeName(SafetensorsDType t);  // "F32", "BF16", ...
int SafetensorsDTypeSize(SafetensorsDType t);              // bytes per element

struct SafetensorsTensor {
  std::string name;
  SafetensorsDType dtype = SafetensorsDType::kF32;
  std::vector<int64_t> shape;  // PyTorch order: outermost first, the contiguous row last
  uint64_t begin = 0;          // data_offsets, relative to the data section
  uint64_t end = 0;
  int64_t n_elements() const;  // 1 for a scalar (empty shape)
};

class SafetensorsFile {
 public:
  // Maps and parses `path`. Errors name the file, and the tensor or header key at fault.
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an image held in memory; `name` stands for the path in messages (tests, fuzzing).
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> OpenBuffer(std::string name,
                                                                     std::vector<uint8_t> bytes);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section in the file

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // sorted by name
  const SafetensorsTensor* Find(std::string_view name) const;  // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The raw bytes of `t` (exactly end - begin; not necessarily aligned).
  absl::Span<const uint8_t> Data(const SafetensorsTensor& t) const;
  // Elements [first, first + count) of `t` as f32 (row-major in shape order). F32, F16 and BF16
  // only; anything else, or a range outside the tensor, is an error naming file and tensor.
  absl::Status ReadF32(const SafetensorsTensor& t, int64_t first, int64_t count,
                       float* dst) const;

 private:
  SafetensorsFile() = default;
  absl::Status Parse();

  std::string path_;
  const uint8_t* map_ = nullptr;
  uint64_t size_ = 0;
  std::unique_ptr<MappedFile> file_;  // the mapping, for Open
  std::vector<uint8_t> owned_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Largest header accepted (the safetensors library's own limit): a header length above it is
// a corrupt or hostile file, refused before anything is allocated.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100u << 20;

}  // namespace jllm::gguf
