#include "frontends/gguf/gguf_format.h"

#include <charconv>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/gguf/gguf_value_util.h"

namespace jllm::gguf {
namespace {

// Shortest text that reads back as the same float (or double).
std::string FloatText(ValueType t, double d) {
  char buf[64];
  std::to_chars_result r = t == ValueType::kFloat32
                               ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(d))
                               : std::to_chars(buf, buf + sizeof(buf), d);
  return std::string(buf, r.ptr);
}

std::string IntText(ValueType t, int64_t bits) {
  if (t == ValueType::kBool) return bits != 0 ? "true" : "false";
  if (t == ValueType::kUint64) return absl::StrCat(static_cast<uint64_t>(bits));
  return absl::StrCat(bits);
}

}  // namespace

std::string QuoteString(std::string_view s, size_t max_chars) {
  const bool cut = s.size() > max_chars;
  std::string out = "\"";
  for (unsigned char c : s.substr(0, cut ? max_chars : s.size())) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  out += cut ? "...\"" : "\"";
  if (cut) absl::StrAppend(&out, " (", s.size(), " bytes)");
  return out;
}

std::string ValueTypeLabel(const Value& v) {
  if (v.type != ValueType::kArray) return std::string(Sv(ValueTypeName(v.type)));
  return absl::StrCat("[", Sv(ValueTypeName(v.array_type)), "]");
}

std::string FormatValue(const Value& v, size_t max_items) {
  if (v.type != ValueType::kArray) {
    if (const auto* s = std::get_if<std::string>(&v.scalar)) return QuoteString(*s);
    if (const auto* d = std::get_if<double>(&v.scalar)) return FloatText(v.type, *d);
    if (const auto* i = std::get_if<int64_t>(&v.scalar)) return absl::StrCat(*i);
    const uint64_t u = std::get<uint64_t>(v.scalar);
    return v.type == ValueType::kBool ? (u != 0 ? "true" : "false") : absl::StrCat(u);
  }
  const uint64_t n = v.array_size();
  std::vector<std::string> items;
  for (size_t i = 0; i < n && i < max_items; ++i) {
    if (!v.strings.empty()) {
      items.push_back(QuoteString(v.strings[i], 24));
    } else if (!v.floats.empty()) {
      items.push_back(FloatText(v.array_type, v.floats[i]));
    } else {
      items.push_back(IntText(v.array_type, v.ints[i]));
    }
  }
  if (n > max_items) items.push_back("...");
  return absl::StrCat(n, n == 1 ? " item: [" : " items: [", absl::StrJoin(items, ", "), "]");
}

std::string ShapeString(const TensorInfo& t) {
  const uint32_t dims = t.n_dims == 0 ? 1 : t.n_dims;
  std::vector<int64_t> ne(t.ne, t.ne + dims);
  return absl::StrCat("[", absl::StrJoin(ne, ", "), "]");
}

}  // namespace jllm::gguf
