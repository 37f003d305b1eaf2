#include "frontends/gguf/safetensors_file.h"


#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "quant/quant.h"
#include "ir/status.h"
#include "nlohmann/json.hpp"

namespace jllm::gguf {
namespace {

using json = nlohmann::json;

struct DTypeRow {
  SafetensorsDType dtype;
  const char* name;
  int size;
};

constexpr DTypeRow kDTypes[] = {
    {SafetensorsDType::kBool, "BOOL", 1},     {SafetensorsDType::kU8, "U8", 1},
    {SafetensorsDType::kI8, "I8", 1},         {SafetensorsDType::kF8E4M3, "F8_E4M3", 1},
    {SafetensorsDType::kF8E5M2, "F8_E5M2", 1}, {SafetensorsDType::kI16, "I16", 2},
    {SafetensorsDType::kU16, "U16", 2},       {SafetensorsDType::kF16, "F16", 2},
    {SafetensorsDType::kBF16, "BF16", 2},     {SafetensorsDType::kI32, "I32", 4},
    {SafetensorsDType::kU32, "U32", 4},       {SafetensorsDType::kF32, "F32", 4},
    {SafetensorsDType::kI64, "I64", 8},       {SafetensorsDType::kU64, "U64", 8},
    {SafetensorsDType::kF64, "F64", 8},
};

// A real header nests three deep (header object, tensor object, shape array). Deeper input is
// refused before nlohmann parses it, so no pathological nesting reaches the parser.
constexpr int kMaxJsonDepth = 8;
constexpr size_t kMaxRank = 8;

bool NestsTooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

// Reads a JSON integer that must be >= 0 and fit in u64.
bool AsUnsigned(const json& v, uint64_t* out) {
  if (!v.is_number_unsigned()) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0) {
      *out = static_cast<uint64_t>(v.get<int64_t>());
      return true;
    }
    return false;
  }
  *out = v.get<uint64_t>();
  return true;
}

}  // namespace

std::string_view SafetensorsDTypeName(SafetensorsDType t) {
  for (const auto& r : kDTypes) {
    if (r.dtype == t) return r.name;
  }
  return "UNKNOWN";
}

int SafetensorsDTypeSize(SafetensorsDType t) {
  for (const auto& r : kDTypes) {
    if (r.dtype == t) return r.size;
  }
  return 0;
}

int64_t SafetensorsTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // bounded at parse time: n * dtype size <= the file size
  return n;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path));
  f->path_ = path;
  f->map_ = f->file_->bytes().data();
  f->size_ = f->file_->bytes().size();
  RETURN_IF_ERROR(f->Parse());
  return f;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::OpenBuffer(
    std::string name, std::vector<uint8_t> bytes) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = std::move(name);
  f->owned_ = std::move(bytes);
  f->map_ = f->owned_.data();
  f->size_ = f->owned_.size();
  RETURN_IF_ERROR(f->Parse());
  return f;
}

SafetensorsFile::~SafetensorsFile() = default;

absl::Status SafetensorsFile::Parse() {
  auto error = [this](auto&&... what) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", what...));
  };
  if (size_ < 8) {
    return error("not a safetensors file: ", size_, " bytes is too short for the 8-byte header length");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, map_, 8);  // little-endian on every target jllm builds for
  if (header_len > size_ - 8) {
    return error("header length ", header_len, " exceeds the ", size_ - 8,
                 " bytes after the length field (truncated or not a safetensors file)");
  }
  if (header_len > kMaxSafetensorsHeaderBytes) {
    return error("header length ", header_len, " exceeds the limit of ",
                 kMaxSafetensorsHeaderBytes, " bytes");
  }
  if (header_len < 2 || map_[8] != '{') {
    return error("header does not start with '{' (not a safetensors file)");
  }
  data_offset_ = 8 + header_len;
  const uint64_t data_size = size_ - data_offset_;
  const std::string_view text(reinterpret_cast<const char*>(map_ + 8), header_len);
  if (NestsTooDeep(text)) return error("header JSON nests deeper than ", kMaxJsonDepth, " levels");

  // Duplicate tensor names would silently shadow each other in the parsed object: catch them.
  std::set<std::string> seen;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  json header = json::parse(text.begin(), text.end(), on_event, /*allow_exceptions=*/false);
  if (header.is_discarded()) return error("header is not valid JSON");
  if (!header.is_object()) return error("header is not a JSON object");
  if (!duplicate.empty()) return error("tensor '", duplicate, "' appears twice in the header");

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return error("__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) return error("__metadata__ '", k, "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](auto&&... what) { return error("tensor '", name, "': ", what...); };
    if (!entry.is_object()) return bad("entry is not an object");
    SafetensorsTensor t;
    t.name = name;

    auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) return bad("no \"dtype\" string");
    const std::string dtype = dtype_it->get<std::string>();
    const DTypeRow* row = nullptr;
    for (const auto& r : kDTypes) {
      if (dtype == r.name) row = &r;
    }
    if (row == nullptr) return bad("unknown dtype '", dtype, "'");
    t.dtype = row->dtype;

    auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) return bad("no \"shape\" array");
    if (shape_it->size() > kMaxRank) return bad("shape has ", shape_it->size(), " dimensions (at most ", kMaxRank, ")");
    // Elements times dtype size must equal the byte range, which is at most the data size:
    // checking the running product against that bound also rules out overflow.
    uint64_t bytes = static_cast<uint64_t>(row->size);
    bool zero = false;
    for (const json& d : *shape_it) {
      uint64_t dim = 0;
      if (!AsUnsigned(d, &dim)) return bad("shape ", shape_it->dump(), " has an entry that is not a non-negative integer");
      if (dim == 0) zero = true;
      if (!zero && dim > data_size / std::max<uint64_t>(bytes, 1)) {
        return bad("shape ", shape_it->dump(), " needs more bytes than the ", data_size,
                   "-byte data section holds");
      }
      if (!zero) bytes *= dim;
      t.shape.push_back(static_cast<int64_t>(dim));
    }
    if (zero) bytes = 0;

    auto off_it = entry.find("data_offsets");
    if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2 ||
        !AsUnsigned((*off_it)[0], &t.begin) || !AsUnsigned((*off_it)[1], &t.end)) {
      return bad("\"data_offsets\" is not a pair of non-negative integers");
    }
    if (t.begin > t.end) return bad("data_offsets [", t.begin, ", ", t.end, "] run backwards");
    if (t.end > data_size) {
      return bad("data_offsets [", t.begin, ", ", t.end, "] go past the end of the ", data_size,
                 "-byte data section (truncated file?)");
    }
    if (t.end - t.begin != bytes) {
      return bad("data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin,
                 " bytes but shape ", shape_it->dump(), " of ", dtype, " needs ", bytes);
    }
    tensors_.push_back(std::move(t));
  }

  // The byte ranges must tile the data section: sorted by offset, each starts where the last
  // ended, and the last ends at the end of the file.
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t expected = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor* t : by_offset) {
    if (t->begin < expected) {
      return error("tensors '", previous->name, "' and '", t->name, "' overlap (bytes ", t->begin,
                   "..", expected, " of the data section)");
    }
    if (t->begin > expected) {
      return error("bytes ", expected, "..", t->begin, " of the data section belong to no tensor (before '",
                   t->name, "')");
    }
    expected = t->end;
    previous = t;
  }
  if (expected != data_size) {
    return error("the data section has ", data_size, " bytes but the tensors cover ", expected);
  }
  std::sort(tensors_.begin(), tensors_.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return absl::OkStatus();
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name,
                             [](const SafetensorsTensor& t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

absl::Span<const uint8_t> SafetensorsFile::Data(const SafetensorsTensor& t) const {
  return absl::Span<const uint8_t>(map_ + data_offset_ + t.begin, t.end - t.begin);
}

absl::Status SafetensorsFile::ReadF32(const SafetensorsTensor& t, int64_t first, int64_t count,
                                      float* dst) const {
  const int64_t n = t.n_elements();
  if (first < 0 || count < 0 || first > n || count > n - first) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": tensor '", t.name, "': elements [", first,
                                              ", ", first + count, ") are outside its ", n));
  }
  const uint8_t* src = Data(t).data();
  switch (t.dtype) {
    case SafetensorsDType::kF32:
      std::memcpy(dst, src + first * 4, static_cast<size_t>(count) * 4);
      return absl::OkStatus();
    case SafetensorsDType::kF16:
    case SafetensorsDType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t h = 0;
        std::memcpy(&h, src + (first + i) * 2, 2);
        dst[i] = t.dtype == SafetensorsDType::kF16 ? quant::Fp16ToF32(h) : quant::Bf16ToF32(h);
      }
      return absl::OkStatus();
    default:
      return absl::UnimplementedError(absl::StrCat(path_, ": tensor '", t.name, "' has dtype ",
                                                   std::string(SafetensorsDTypeName(t.dtype)),
                                                   "; jllm converts F32, F16 and BF16 only"));
  }
}

}  // namespace jllm::gguf
