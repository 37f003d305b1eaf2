#include "frontends/gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "fileio/output_file.h"
#include "frontends/gguf/gguf_value_util.h"
#include "ir/status.h"

namespace jllm::gguf {
namespace {

// Appends little-endian fields to a byte string (the header is small enough to build whole).
class Encoder {
 public:
  template <typename T>
  void Put(T x) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &x, sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Checks that `x` fits the integer type `t` and appends it in that type's width.
absl::Status PutInt(ValueType t, std::variant<uint64_t, int64_t> x, Encoder& out) {
  auto in_range = [&](int64_t lo, uint64_t hi) {
    if (const auto* u = std::get_if<uint64_t>(&x)) return *u <= hi;
    const int64_t s = std::get<int64_t>(x);
    return s >= lo && (s < 0 || static_cast<uint64_t>(s) <= hi);
  };
  auto bits = [&] {
    if (const auto* u = std::get_if<uint64_t>(&x)) return *u;
    return static_cast<uint64_t>(std::get<int64_t>(x));
  };
  bool ok = true;
  switch (t) {
    case ValueType::kUint8: ok = in_range(0, 0xFF); if (ok) out.Put<uint8_t>(bits()); break;
    case ValueType::kBool: ok = in_range(0, 1); if (ok) out.Put<uint8_t>(bits()); break;
    case ValueType::kInt8: ok = in_range(-128, 127); if (ok) out.Put<int8_t>(bits()); break;
    case ValueType::kUint16: ok = in_range(0, 0xFFFF); if (ok) out.Put<uint16_t>(bits()); break;
    case ValueType::kInt16: ok = in_range(-32768, 32767); if (ok) out.Put<int16_t>(bits()); break;
    case ValueType::kUint32: ok = in_range(0, 0xFFFFFFFFu); if (ok) out.Put<uint32_t>(bits()); break;
    case ValueType::kInt32:
      ok = in_range(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      if (ok) out.Put<int32_t>(bits());
      break;
    // UINT64 takes any bit pattern, since arrays store its elements as int64_t.
    case ValueType::kUint64: out.Put<uint64_t>(bits()); break;
    case ValueType::kInt64:
      ok = in_range(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      if (ok) out.Put<int64_t>(static_cast<int64_t>(bits()));
      break;
    default: return absl::InvalidArgumentError("internal: PutInt on a non-integer type");
  }
  if (!ok) {
    const std::string shown = std::holds_alternative<uint64_t>(x)
                                  ? absl::StrCat(std::get<uint64_t>(x))
                                  : absl::StrCat(std::get<int64_t>(x));
    return absl::InvalidArgumentError(
        absl::StrCat("value ", shown, " does not fit in ", Sv(ValueTypeName(t))));
  }
  return absl::OkStatus();
}

absl::Status PutFloat(ValueType t, double x, Encoder& out) {
  if (t == ValueType::kFloat32) {
    out.Put<float>(static_cast<float>(x));
  } else {
    out.Put<double>(x);
  }
  return absl::OkStatus();
}

absl::Status PutScalar(const Value& v, Encoder& out) {
  const ValueType t = v.type;
  auto mismatch = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("scalar payload does not match the type ", Sv(ValueTypeName(t))));
  };
  if (t == ValueType::kString) {
    const auto* s = std::get_if<std::string>(&v.scalar);
    if (s == nullptr) return mismatch();
    out.PutString(*s);
    return absl::OkStatus();
  }
  if (IsFloatType(t)) {
    const auto* d = std::get_if<double>(&v.scalar);
    if (d == nullptr) return mismatch();
    return PutFloat(t, *d, out);
  }
  if (const auto* u = std::get_if<uint64_t>(&v.scalar)) return PutInt(t, *u, out);
  if (const auto* s = std::get_if<int64_t>(&v.scalar)) return PutInt(t, *s, out);
  return mismatch();
}

absl::Status PutArray(const Value& v, Encoder& out) {
  const ValueType e = v.array_type;
  if (e == ValueType::kArray) return absl::InvalidArgumentError("nested arrays are not supported");
  if (!IsKnownValueType(static_cast<uint32_t>(e))) {
    return absl::InvalidArgumentError("unknown array element type");
  }
  const bool strings = e == ValueType::kString, floats = IsFloatType(e);
  const bool ints = !strings && !floats;
  if ((!strings && !v.strings.empty()) || (!floats && !v.floats.empty()) ||
      (!ints && !v.ints.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array payload does not match the element type ", Sv(ValueTypeName(e))));
  }
  out.Put<uint32_t>(static_cast<uint32_t>(e));
  out.Put<uint64_t>(v.array_size());
  for (const std::string& s : v.strings) out.PutString(s);
  for (double d : v.floats) RETURN_IF_ERROR(PutFloat(e, d, out));
  for (size_t i = 0; i < v.ints.size(); ++i) {
    if (absl::Status s = PutInt(e, v.ints[i], out); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("element ", i, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status PutValue(const Value& v, Encoder& out) {
  if (!IsKnownValueType(static_cast<uint32_t>(v.type))) {
    return absl::InvalidArgumentError("unknown value type");
  }
  out.Put<uint32_t>(static_cast<uint32_t>(v.type));
  return v.type == ValueType::kArray ? PutArray(v, out) : PutScalar(v, out);
}

// Zero bytes up to the next alignment boundary.
absl::Status WriteZeros(fileio::OutputFile& out, uint64_t n) {
  static constexpr uint8_t kZeros[256] = {};
  while (n > 0) {
    const uint64_t k = n < sizeof(kZeros) ? n : sizeof(kZeros);
    RETURN_IF_ERROR(out.Write(kZeros, k));
    n -= k;
  }
  return absl::OkStatus();
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {}

namespace {
Value Scalar(ValueType t, std::variant<uint64_t, int64_t, double, std::string> x) {
  Value v;
  v.type = t;
  v.scalar = std::move(x);
  return v;
}
Value Array(ValueType elem) {
  Value v;
  v.type = ValueType::kArray;
  v.array_type = elem;
  return v;
}
}  // namespace

void GgufWriter::SetUint32(std::string key, uint32_t v) {
  SetValue(std::move(key), Scalar(ValueType::kUint32, uint64_t{v}));
}
void GgufWriter::SetInt32(std::string key, int32_t v) {
  SetValue(std::move(key), Scalar(ValueType::kInt32, int64_t{v}));
}
void GgufWriter::SetUint64(std::string key, uint64_t v) {
  SetValue(std::move(key), Scalar(ValueType::kUint64, v));
}
void GgufWriter::SetFloat32(std::string key, float v) {
  SetValue(std::move(key), Scalar(ValueType::kFloat32, double{v}));
}
void GgufWriter::SetBool(std::string key, bool v) {
  SetValue(std::move(key), Scalar(ValueType::kBool, uint64_t{v}));
}
void GgufWriter::SetString(std::string key, std::string v) {
  SetValue(std::move(key), Scalar(ValueType::kString, std::move(v)));
}
void GgufWriter::SetStringArray(std::string key, std::vector<std::string> v) {
  Value a = Array(ValueType::kString);
  a.strings = std::move(v);
  SetValue(std::move(key), std::move(a));
}
void GgufWriter::SetInt32Array(std::string key, std::vector<int32_t> v) {
  Value a = Array(ValueType::kInt32);
  a.ints.assign(v.begin(), v.end());
  SetValue(std::move(key), std::move(a));
}
void GgufWriter::SetFloat32Array(std::string key, std::vector<float> v) {
  Value a = Array(ValueType::kFloat32);
  a.floats.assign(v.begin(), v.end());
  SetValue(std::move(key), std::move(a));
}
void GgufWriter::SetValue(std::string key, Value v) {
  kvs_.push_back(KeyValue{std::move(key), std::move(v)});
}

absl::Status GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                                   Filler fill) {
  const std::string where = absl::StrCat("GgufWriter: tensor '", name, "'");
  if (name.size() > kMaxTensorNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": name is ", name.size(),
                                                   " bytes; the limit is ", kMaxTensorNameBytes));
  }
  for (const PendingTensor& t : tensors_) {
    if (t.info.name == name) return absl::InvalidArgumentError(absl::StrCat(where, ": duplicate"));
  }
  if (ne.empty() || ne.size() > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": needs 1 to ", kMaxDims, " dims, got ", ne.size()));
  }
  const std::optional<GgmlTypeTraits> traits = LookupGgmlType(static_cast<uint32_t>(type));
  if (!traits) return absl::InvalidArgumentError(absl::StrCat(where, ": unknown ggml type"));
  if (!fill) return absl::InvalidArgumentError(absl::StrCat(where, ": no data source"));

  TensorInfo info;
  info.name = std::move(name);
  info.type = type;
  for (size_t d = 0; d < ne.size(); ++d) {
    if (ne[d] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ne[", d, "] = ", ne[d], " < 0"));
    }
    info.ne[d] = ne[d];
  }
  if (info.ne[0] % traits->block_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ne[0] = ", info.ne[0],
                                                   " is not a multiple of the ", Sv(traits->name),
                                                   " block size ", traits->block_size));
  }
  // ggml_n_dims: trailing dimensions of size 1 are not written, but at least one is.
  info.n_dims = 4;
  while (info.n_dims > 1 && info.ne[info.n_dims - 1] == 1) --info.n_dims;
  uint64_t nbytes = static_cast<uint64_t>(info.ne[0] / traits->block_size);
  int64_t elements = 1;
  bool overflow = __builtin_mul_overflow(nbytes, static_cast<uint64_t>(traits->type_size), &nbytes);
  for (int d = 0; d < 4; ++d) {
    overflow |= __builtin_mul_overflow(elements, info.ne[d], &elements);
    if (d > 0) overflow |= __builtin_mul_overflow(nbytes, static_cast<uint64_t>(info.ne[d]), &nbytes);
  }
  if (overflow) return absl::InvalidArgumentError(absl::StrCat(where, ": shape overflows 64 bits"));
  info.nbytes = nbytes;
  tensors_.push_back(PendingTensor{std::move(info), std::move(fill)});
  return absl::OkStatus();
}

absl::Status GgufWriter::AddTensor(std::string name, GgmlType type, std::vector<int64_t> ne,
                                   std::vector<uint8_t> bytes) {
  const uint64_t have = bytes.size();
  auto fill = [data = std::move(bytes)](uint8_t* dst, uint64_t n) -> absl::Status {
    if (n != data.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor holds ", data.size(), " bytes but its shape needs ", n));
    }
    if (n > 0) std::memcpy(dst, data.data(), n);
    return absl::OkStatus();
  };
  const std::string shown = name;
  RETURN_IF_ERROR(AddTensor(std::move(name), type, std::move(ne), std::move(fill)));
  if (tensors_.back().info.nbytes != have) {
    const uint64_t need = tensors_.back().info.nbytes;
    tensors_.pop_back();
    return absl::InvalidArgumentError(absl::StrCat("GgufWriter: tensor '", shown, "': ", have,
                                                   " bytes given but its shape needs ", need));
  }
  return absl::OkStatus();
}

absl::Status GgufWriter::Write(const std::string& path, absl::Span<const std::string> inputs) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) {
    return error(absl::StrCat("alignment ", alignment_, " is not a power of two"));
  }

  // general.alignment, if given, must agree with the alignment the data are laid out with;
  // if absent and not the default, it is added so that readers find the data.
  std::vector<const KeyValue*> kvs;
  absl::flat_hash_set<std::string_view> keys;
  for (const KeyValue& kv : kvs_) {
    if (!keys.insert(kv.key).second) return error(absl::StrCat("key '", kv.key, "': duplicate key"));
    if (kv.key == "general.alignment") {
      const auto* a = std::get_if<uint64_t>(&kv.value.scalar);
      if (kv.value.type != ValueType::kUint32 || a == nullptr || *a != alignment_) {
        return error(absl::StrCat("key 'general.alignment' must be UINT32 ", alignment_,
                                  ", the writer's alignment"));
      }
    }
    kvs.push_back(&kv);
  }
  KeyValue implicit_alignment{"general.alignment", Value{}};
  if (alignment_ != kDefaultAlignment && !keys.contains("general.alignment")) {
    implicit_alignment.value.type = ValueType::kUint32;
    implicit_alignment.value.scalar = uint64_t{alignment_};
    kvs.insert(kvs.begin(), &implicit_alignment);
  }

  Encoder header;
  header.Put<uint32_t>(kGgufMagic);
  header.Put<uint32_t>(3);
  header.Put<int64_t>(static_cast<int64_t>(tensors_.size()));
  header.Put<int64_t>(static_cast<int64_t>(kvs.size()));
  for (const KeyValue* kv : kvs) {
    header.PutString(kv->key);
    if (absl::Status s = PutValue(kv->value, header); !s.ok()) {
      return error(absl::StrCat("key '", kv->key, "': ", s.message()));
    }
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    header.PutString(t.info.name);
    header.Put<uint32_t>(t.info.n_dims);
    for (uint32_t d = 0; d < t.info.n_dims; ++d) header.Put<int64_t>(t.info.ne[d]);
    header.Put<uint32_t>(static_cast<uint32_t>(t.info.type));
    header.Put<uint64_t>(offset);
    if (__builtin_add_overflow(offset, PadTo(t.info.nbytes, alignment_), &offset)) {
      return error("total tensor data overflows 64 bits");
    }
  }
  std::string& head = header.bytes();
  head.resize(PadTo(head.size(), alignment_), '\0');

  ASSIGN_OR_RETURN(std::unique_ptr<fileio::OutputFile> file, fileio::OutputFile::Create(path, inputs));
  fileio::OutputFile& out = *file;
  RETURN_IF_ERROR(out.Write(head.data(), head.size()));
  head.clear();
  head.shrink_to_fit();
  // One buffer reused for all tensors: peak memory is the largest tensor, not the model.
  std::vector<uint8_t> buffer;
  for (const PendingTensor& t : tensors_) {
    if (buffer.size() < t.info.nbytes) buffer.resize(t.info.nbytes);
    if (absl::Status s = t.fill(buffer.data(), t.info.nbytes); !s.ok()) {
      return error(absl::StrCat("tensor '", t.info.name, "': ", s.message()));
    }
    RETURN_IF_ERROR(out.Write(buffer.data(), t.info.nbytes));
    RETURN_IF_ERROR(WriteZeros(out, PadTo(t.info.nbytes, alignment_) - t.info.nbytes));
  }
  return out.Commit();
}

}  // namespace jllm::gguf
