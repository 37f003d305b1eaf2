// Read-only view of a GGUF file (versions 2 and 3), memory-mapped. Every count, length,
// offset and size is validated against the file before use; tensor data are zero-copy spans.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "frontends/gguf/mapped_file.h"
#include "ir/ggml_type.h"

namespace jllm::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
std::string_view ValueTypeName(ValueType t);

// One metadata value. Scalars keep their exact GGUF type; arrays hold one element type.
struct Value {
  ValueType type = ValueType::kUint8;
  ValueType array_type = ValueType::kUint8;  // element type when type == kArray
  // Scalar payload, widened: uint64_t for UINT8/16/32/64 and BOOL, int64_t for INT8/16/32/64,
  // double for FLOAT32/64, std::string for STRING.
  std::variant<uint64_t, int64_t, double, std::string> scalar;
  // Array payloads: exactly one is filled, by element type.
  std::vector<int64_t> ints;        // every integer type and bool (UINT64 as its bit pattern)
  std::vector<double> floats;       // f32, f64
  std::vector<std::string> strings;
  uint64_t array_size() const;      // 0 for scalars
};

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the contiguous row
  GgmlType type = GgmlType::kF32;
  uint64_t offset = 0;   // relative to the data blob
  uint64_t nbytes = 0;
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Maps and parses `path`. Errors name the file and the key or tensor at fault.
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses a file image held in memory; `name` stands for the path in messages. Used by tests
  // and fuzzing (an exact-size heap buffer lets AddressSanitizer see any overread).
  static absl::StatusOr<std::unique_ptr<GgufFile>> OpenBuffer(std::string name,
                                                              std::vector<uint8_t> bytes);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t file_size() const { return size_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the blob in the file

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const Value* Find(std::string_view key) const;  // nullptr if absent

  // Typed getters: NotFound if absent, InvalidArgument (naming the key and both types) if the
  // stored type differs. GetUint32 accepts only UINT32, GetFloat32 only FLOAT32 (as llama.cpp).
  absl::StatusOr<uint32_t> GetUint32(std::string_view key) const;
  absl::StatusOr<float> GetFloat32(std::string_view key) const;
  absl::StatusOr<bool> GetBool(std::string_view key) const;
  absl::StatusOr<std::string> GetString(std::string_view key) const;
  absl::StatusOr<const std::vector<std::string>*> GetStringArray(std::string_view key) const;
  absl::StatusOr<const std::vector<int64_t>*> GetIntArray(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* FindTensor(std::string_view name) const;  // nullptr if absent
  absl::Span<const uint8_t> TensorData(const TensorInfo& t) const;
  // The whole mapped file, for fingerprinting.
  absl::Span<const uint8_t> bytes() const;

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  const uint8_t* map_ = nullptr;  // the mapping, or owned_.data()
  uint64_t size_ = 0;
  std::unique_ptr<MappedFile> file_;  // the mapping, for Open
  std::vector<uint8_t> owned_;    // the image, for OpenBuffer
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  friend class GgufParser;
};

}  // namespace jllm::gguf
