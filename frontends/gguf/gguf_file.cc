#include "frontends/gguf/gguf_file.h"


#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/gguf_parser.h"
#include "frontends/gguf/gguf_value_util.h"
#include "ir/status.h"

namespace jllm::gguf {

std::string_view ValueTypeName(ValueType t) {
  switch (t) {
    case ValueType::kUint8: return "UINT8";
    case ValueType::kInt8: return "INT8";
    case ValueType::kUint16: return "UINT16";
    case ValueType::kInt16: return "INT16";
    case ValueType::kUint32: return "UINT32";
    case ValueType::kInt32: return "INT32";
    case ValueType::kFloat32: return "FLOAT32";
    case ValueType::kBool: return "BOOL";
    case ValueType::kString: return "STRING";
    case ValueType::kArray: return "ARRAY";
    case ValueType::kUint64: return "UINT64";
    case ValueType::kInt64: return "INT64";
    case ValueType::kFloat64: return "FLOAT64";
  }
  return "UNKNOWN";
}

uint64_t Value::array_size() const {
  if (type != ValueType::kArray) return 0;
  return ints.size() + floats.size() + strings.size();
}

namespace {

// "UINT32" or "ARRAY[STRING]", for type-mismatch messages.
std::string TypeDescription(const Value& v) {
  if (v.type != ValueType::kArray) return std::string(Sv(ValueTypeName(v.type)));
  return absl::StrCat("ARRAY[", Sv(ValueTypeName(v.array_type)), "]");
}

}  // namespace

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path));
  f->path_ = path;
  f->map_ = f->file_->bytes().data();
  f->size_ = f->file_->bytes().size();
  RETURN_IF_ERROR(GgufParser(*f).Parse());
  return f;
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::OpenBuffer(std::string name,
                                                               std::vector<uint8_t> bytes) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = std::move(name);
  f->owned_ = std::move(bytes);
  f->map_ = f->owned_.data();
  f->size_ = f->owned_.size();
  RETURN_IF_ERROR(GgufParser(*f).Parse());
  return f;
}

GgufFile::~GgufFile() = default;

const Value* GgufFile::Find(std::string_view key) const {
  for (const KeyValue& kv : kvs_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

namespace {

// The value at `key` if it has exactly the type `want` (and element type `elem` for arrays).
absl::StatusOr<const Value*> FindTyped(const GgufFile& f, std::string_view key, ValueType want,
                                       ValueType elem = ValueType::kUint8) {
  const Value* v = f.Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(f.path(), ": key '", Sv(key), "' not found"));
  Value expected;
  expected.type = want;
  expected.array_type = elem;
  if (v->type != want || (want == ValueType::kArray && v->array_type != elem)) {
    return absl::InvalidArgumentError(absl::StrCat(f.path(), ": key '", Sv(key), "' has type ",
                                                   TypeDescription(*v), ", expected ",
                                                   TypeDescription(expected)));
  }
  return v;
}

}  // namespace

absl::StatusOr<uint32_t> GgufFile::GetUint32(std::string_view key) const {
  ASSIGN_OR_RETURN(const Value* v, FindTyped(*this, key, ValueType::kUint32));
  return static_cast<uint32_t>(std::get<uint64_t>(v->scalar));
}

absl::StatusOr<float> GgufFile::GetFloat32(std::string_view key) const {
  ASSIGN_OR_RETURN(const Value* v, FindTyped(*this, key, ValueType::kFloat32));
  return static_cast<float>(std::get<double>(v->scalar));
}

absl::StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  ASSIGN_OR_RETURN(const Value* v, FindTyped(*this, key, ValueType::kBool));
  return std::get<uint64_t>(v->scalar) != 0;
}

absl::StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  ASSIGN_OR_RETURN(const Value* v, FindTyped(*this, key, ValueType::kString));
  return std::get<std::string>(v->scalar);
}

absl::StatusOr<const std::vector<std::string>*> GgufFile::GetStringArray(
    std::string_view key) const {
  ASSIGN_OR_RETURN(const Value* v, FindTyped(*this, key, ValueType::kArray, ValueType::kString));
  return &v->strings;
}

absl::StatusOr<const std::vector<int64_t>*> GgufFile::GetIntArray(std::string_view key) const {
  const Value* v = Find(key);
  if (v == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": key '", Sv(key), "' not found"));
  const bool int_elems = v->type == ValueType::kArray &&
                         (IsSignedIntType(v->array_type) ||
                          (IsUnsignedIntType(v->array_type) && v->array_type != ValueType::kBool));
  if (!int_elems) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": key '", Sv(key), "' has type ",
                                                   TypeDescription(*v),
                                                   ", expected an array of integers"));
  }
  return &v->ints;
}

const TensorInfo* GgufFile::FindTensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

absl::Span<const uint8_t> GgufFile::TensorData(const TensorInfo& t) const {
  if (t.nbytes == 0) return {};
  return absl::Span<const uint8_t>(map_ + data_offset_ + t.offset, t.nbytes);
}

absl::Span<const uint8_t> GgufFile::bytes() const { return absl::Span<const uint8_t>(map_, size_); }

}  // namespace jllm::gguf
