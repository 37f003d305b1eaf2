#include "frontends/gguf/gguf_parser.h"

#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontends/gguf/gguf_value_util.h"
#include "ir/status.h"

namespace jllm::gguf {
namespace {

// The smallest encodings, used to reject counts that the remaining bytes cannot hold before
// anything is allocated for them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims = 0, type, offset

// Prefixes a cursor error with what was being read.
absl::Status Context(absl::string_view what, const absl::Status& cause) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", cause.message()));
}

std::string Quoted(std::string_view s) { return absl::StrCat("'", absl::CHexEscape(Sv(s)), "'"); }

}  // namespace

absl::Status GgufParser::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(f_.path_, ": ", what));
}

absl::Status GgufParser::Parse() {
  RETURN_IF_ERROR(ParseHeader());
  RETURN_IF_ERROR(CheckCountsFit());
  absl::flat_hash_set<std::string_view> keys;
  for (uint64_t i = 0; i < n_kv_; ++i) RETURN_IF_ERROR(ParseKv(i, keys));
  RETURN_IF_ERROR(ReadAlignment());
  absl::flat_hash_set<std::string_view> names;
  for (uint64_t i = 0; i < n_tensors_; ++i) RETURN_IF_ERROR(ParseTensorInfo(i, names));
  f_.data_offset_ = PadTo(cur_.pos(), f_.alignment_);
  return CheckTensorData();
}

absl::Status GgufParser::ParseHeader() {
  uint32_t magic = 0;
  if (!cur_.Read(&magic).ok()) {
    return Error(absl::StrCat("not a GGUF file: ", f_.size_, " bytes is too short for the magic"));
  }
  if (magic != kGgufMagic) {
    std::string seen(reinterpret_cast<const char*>(&magic), 4);
    return Error(absl::StrCat("not a GGUF file: starts with ", Quoted(seen),
                              " instead of the magic 'GGUF'"));
  }
  uint32_t version = 0;
  if (absl::Status s = cur_.Read(&version); !s.ok()) return Error(Context("version", s).message());
  if (version == 0) return Error("GGUF version 0 is invalid");
  if ((version & 0xFFFF) == 0) {
    return Error(absl::StrFormat(
        "version field reads 0x%08x: the file has the wrong endianness (big-endian GGUF is not "
        "supported)", version));
  }
  if (version == 1) {
    return Error("GGUF version 1 (32-bit counts) is no longer supported; convert it to version 3");
  }
  if (version > 3) {
    return Error(absl::StrCat("GGUF version ", version,
                              " is newer than this reader, which supports versions 2 and 3"));
  }
  f_.version_ = version;
  int64_t n_tensors = 0, n_kv = 0;
  if (absl::Status s = cur_.Read(&n_tensors); !s.ok()) {
    return Error(Context("tensor count", s).message());
  }
  if (absl::Status s = cur_.Read(&n_kv); !s.ok()) return Error(Context("KV count", s).message());
  if (n_tensors < 0) return Error(absl::StrCat("tensor count ", n_tensors, " is negative"));
  if (n_kv < 0) return Error(absl::StrCat("KV count ", n_kv, " is negative"));
  n_tensors_ = static_cast<uint64_t>(n_tensors);
  n_kv_ = static_cast<uint64_t>(n_kv);
  return absl::OkStatus();
}

absl::Status GgufParser::CheckCountsFit() {
  const uint64_t rem = cur_.remaining();
  if (n_kv_ > rem / kMinKvBytes) {
    return Error(absl::StrCat("KV count ", n_kv_, " cannot fit: each KV takes at least ",
                              kMinKvBytes, " bytes and only ", rem, " remain"));
  }
  const uint64_t rem_infos = rem - n_kv_ * kMinKvBytes;
  if (n_tensors_ > rem_infos / kMinTensorInfoBytes) {
    return Error(absl::StrCat("tensor count ", n_tensors_,
                              " cannot fit: each tensor info takes at least ", kMinTensorInfoBytes,
                              " bytes and at most ", rem_infos, " remain for them"));
  }
  return absl::OkStatus();
}

absl::Status GgufParser::ParseKv(uint64_t index, absl::flat_hash_set<std::string_view>& seen) {
  std::string_view key;
  if (absl::Status s = cur_.ReadString(&key); !s.ok()) {
    return Error(Context(absl::StrCat("KV #", index, ": key"), s).message());
  }
  if (!seen.insert(key).second) {
    return Error(absl::StrCat("key ", Quoted(key), ": duplicate key (KV #", index, ")"));
  }
  uint32_t type_id = 0;
  KeyValue kv;
  kv.key = std::string(key);
  absl::Status s = cur_.Read(&type_id);
  if (s.ok()) s = ReadValue(type_id, &kv.value);
  if (!s.ok()) return Error(Context(absl::StrCat("key ", Quoted(key)), s).message());
  f_.kvs_.push_back(std::move(kv));
  return absl::OkStatus();
}

absl::Status GgufParser::ReadValue(uint32_t type_id, Value* v) {
  if (!IsKnownValueType(type_id)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown value type id ", type_id));
  }
  v->type = static_cast<ValueType>(type_id);
  if (v->type == ValueType::kArray) return ReadArray(v);
  return ReadScalar(v->type, v);
}

absl::Status GgufParser::ReadScalar(ValueType t, Value* v) {
  // Reads one fixed-size value of type T into v->scalar widened to W.
  auto read = [&]<typename T, typename W>(T, W) -> absl::Status {
    T x{};
    RETURN_IF_ERROR(cur_.Read(&x));
    v->scalar = static_cast<W>(x);
    return absl::OkStatus();
  };
  switch (t) {
    case ValueType::kUint8: return read(uint8_t{}, uint64_t{});
    case ValueType::kInt8: return read(int8_t{}, int64_t{});
    case ValueType::kUint16: return read(uint16_t{}, uint64_t{});
    case ValueType::kInt16: return read(int16_t{}, int64_t{});
    case ValueType::kUint32: return read(uint32_t{}, uint64_t{});
    case ValueType::kInt32: return read(int32_t{}, int64_t{});
    case ValueType::kFloat32: return read(float{}, double{});
    case ValueType::kUint64: return read(uint64_t{}, uint64_t{});
    case ValueType::kInt64: return read(int64_t{}, int64_t{});
    case ValueType::kFloat64: return read(double{}, double{});
    case ValueType::kBool: {
      const uint64_t at = cur_.pos();
      uint8_t b = 0;
      RETURN_IF_ERROR(cur_.Read(&b));
      if (b > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("bool at offset ", at, " is ", static_cast<int>(b), ", not 0 or 1"));
      }
      v->scalar = uint64_t{b};
      return absl::OkStatus();
    }
    case ValueType::kString: {
      std::string_view s;
      RETURN_IF_ERROR(cur_.ReadString(&s));
      v->scalar = std::string(s);
      return absl::OkStatus();
    }
    case ValueType::kArray: break;
  }
  return absl::InvalidArgumentError("internal: ReadScalar called on an array");
}

absl::Status GgufParser::ReadArray(Value* v) {
  uint32_t elem_id = 0;
  uint64_t n = 0;
  RETURN_IF_ERROR(cur_.Read(&elem_id));
  if (!IsKnownValueType(elem_id)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown array element type id ", elem_id));
  }
  const auto elem = static_cast<ValueType>(elem_id);
  if (elem == ValueType::kArray) {
    return absl::InvalidArgumentError("nested arrays are not supported");
  }
  v->array_type = elem;
  RETURN_IF_ERROR(cur_.Read(&n));
  const uint64_t min_elem = elem == ValueType::kString ? 8 : FixedValueSize(elem);
  if (n > cur_.remaining() / min_elem) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array of ", n, " ", Sv(ValueTypeName(elem)), " elements cannot fit: each takes at least ",
        min_elem, " bytes and only ", cur_.remaining(), " remain"));
  }
  // `n` is now bounded by the file size, so reserving for it is safe.
  Value elem_value;
  if (elem == ValueType::kString) {
    v->strings.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      std::string_view s;
      if (absl::Status st = cur_.ReadString(&s); !st.ok()) {
        return Context(absl::StrCat("element ", i), st);
      }
      v->strings.emplace_back(s);
    }
  } else if (IsFloatType(elem)) {
    v->floats.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      RETURN_IF_ERROR(ReadScalar(elem, &elem_value));
      v->floats.push_back(std::get<double>(elem_value.scalar));
    }
  } else {
    v->ints.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
      if (absl::Status st = ReadScalar(elem, &elem_value); !st.ok()) {
        return Context(absl::StrCat("element ", i), st);
      }
      if (const auto* u = std::get_if<uint64_t>(&elem_value.scalar)) {
        v->ints.push_back(static_cast<int64_t>(*u));
      } else {
        v->ints.push_back(std::get<int64_t>(elem_value.scalar));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status GgufParser::ReadAlignment() {
  const Value* a = f_.Find("general.alignment");
  if (a == nullptr) return absl::OkStatus();
  if (a->type != ValueType::kUint32) {
    return Error(absl::StrCat("key 'general.alignment' must be UINT32, not ",
                              Sv(ValueTypeName(a->type))));
  }
  const uint64_t align = std::get<uint64_t>(a->scalar);
  if (align == 0 || (align & (align - 1)) != 0) {
    return Error(absl::StrCat("key 'general.alignment' is ", align, ", not a power of two"));
  }
  f_.alignment_ = static_cast<uint32_t>(align);
  return absl::OkStatus();
}

absl::Status GgufParser::ParseTensorInfo(uint64_t index,
                                         absl::flat_hash_set<std::string_view>& seen) {
  std::string_view name;
  if (absl::Status s = cur_.ReadString(&name); !s.ok()) {
    return Error(Context(absl::StrCat("tensor info #", index, ": name"), s).message());
  }
  if (name.size() > kMaxTensorNameBytes) {
    return Error(absl::StrCat("tensor info #", index, ": name ", Quoted(name.substr(0, 40)),
                              "... is ", name.size(), " bytes; the limit is ",
                              kMaxTensorNameBytes));
  }
  const std::string where = absl::StrCat("tensor ", Quoted(name));
  if (!seen.insert(name).second) return Error(absl::StrCat(where, ": duplicate tensor name"));

  TensorInfo t;
  t.name = std::string(name);
  uint32_t type_id = 0;
  absl::Status s = cur_.Read(&t.n_dims);
  if (s.ok() && t.n_dims > kMaxDims) {
    return Error(absl::StrCat(where, ": n_dims is ", t.n_dims, "; at most ", kMaxDims));
  }
  for (uint32_t d = 0; s.ok() && d < t.n_dims; ++d) s = cur_.Read(&t.ne[d]);
  if (s.ok()) s = cur_.Read(&type_id);
  if (s.ok()) s = cur_.Read(&t.offset);
  if (!s.ok()) return Error(Context(where, s).message());

  for (uint32_t d = 0; d < t.n_dims; ++d) {
    if (t.ne[d] < 0) return Error(absl::StrCat(where, ": ne[", d, "] = ", t.ne[d], " is negative"));
  }
  const std::optional<GgmlTypeTraits> traits = LookupGgmlType(type_id);
  if (!traits) return Error(absl::StrCat(where, ": unknown or retired ggml type id ", type_id));
  t.type = traits->type;
  if (t.ne[0] % traits->block_size != 0) {
    return Error(absl::StrCat(where, ": ne[0] = ", t.ne[0], " is not a multiple of the ",
                              Sv(traits->name), " block size ", traits->block_size));
  }
  int64_t elements = 1;
  uint64_t nbytes = static_cast<uint64_t>(t.ne[0] / traits->block_size);
  bool overflow = __builtin_mul_overflow(nbytes, static_cast<uint64_t>(traits->type_size), &nbytes);
  for (int d = 0; d < 4; ++d) {
    overflow |= __builtin_mul_overflow(elements, t.ne[d], &elements);
    if (d > 0) overflow |= __builtin_mul_overflow(nbytes, static_cast<uint64_t>(t.ne[d]), &nbytes);
  }
  if (overflow) {
    return Error(absl::StrCat(where, ": shape [", t.ne[0], ", ", t.ne[1], ", ", t.ne[2], ", ",
                              t.ne[3], "] overflows 64 bits"));
  }
  t.nbytes = nbytes;
  f_.tensors_.push_back(std::move(t));
  return absl::OkStatus();
}

absl::Status GgufParser::CheckTensorData() {
  const uint64_t align = f_.alignment_;
  uint64_t expected = 0;  // Σ PAD(nbytes_j, align) over the tensors before this one
  for (const TensorInfo& t : f_.tensors_) {
    const std::string where = absl::StrCat("tensor ", Quoted(t.name));
    if (t.offset % align != 0) {
      return Error(absl::StrCat(where, ": offset ", t.offset,
                                " is not a multiple of the alignment ", align));
    }
    if (t.offset != expected) {
      return Error(absl::StrCat(where, ": offset ", t.offset, " but ", expected,
                                " expected: tensor data must be contiguous in info order, each "
                                "padded to the alignment ", align));
    }
    if (t.nbytes == 0) continue;
    // `expected` never exceeds the file size plus one alignment, so this cannot wrap.
    const uint64_t begin = f_.data_offset_ + t.offset;
    if (begin > f_.size_ || t.nbytes > f_.size_ - begin) {
      uint64_t end = 0;
      const std::string shown_end = __builtin_add_overflow(begin, t.nbytes, &end)
                                        ? absl::StrCat(begin, " + ", t.nbytes)
                                        : absl::StrCat(end);
      return Error(absl::StrCat(where, ": data [", begin, ", ", shown_end,
                                ") lies past the end of the file (size ", f_.size_, ")"));
    }
    expected += PadTo(t.nbytes, align);
  }
  return absl::OkStatus();
}

}  // namespace jllm::gguf
