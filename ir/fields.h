// One list of fields per struct, shared by the text printer/parser and the binary format.
//
// A struct that takes part declares its fields once:
//   template <class Self, class V> static void VisitFields(Self& self, V&& v) {
//     v("eps", self.eps);  v("layer", self.layer);
//   }
// Field types: int64_t, float, bool, std::string, std::optional<float>.
// Text form: "name=value" for each field in declaration order, separated by spaces; a bool is
// the bare name when true and absent when false; an unset optional is absent. Floats print in
// the shortest form that reads back to the same bits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "ir/absl_compat.h"
#include "ir/byte_io.h"

namespace jllm::ir::fields {

std::string FormatFloat(float v);
// Bare if made only of [A-Za-z0-9_.+-] and non-empty, else double-quoted with C escapes.
std::string FormatWord(absl::string_view s);

absl::Status ParseField(absl::string_view text, int64_t* out);
absl::Status ParseField(absl::string_view text, float* out);
absl::Status ParseField(absl::string_view text, std::string* out);
absl::Status ParseField(absl::string_view text, std::optional<float>* out);

// One "name=value" (value set) or "name" (value absent: a true bool) from the text form.
struct TextField {
  std::string name;
  std::optional<std::string> value;
};

template <class T>
std::string ToText(const T& obj) {
  std::vector<std::string> parts;
  auto emit = [&parts](absl::string_view name, const auto& field) {
    using F = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<F, bool>) {
      if (field) parts.emplace_back(name);
    } else if constexpr (std::is_same_v<F, std::optional<float>>) {
      if (field) parts.push_back(absl::StrCat(name, "=", FormatFloat(*field)));
    } else if constexpr (std::is_same_v<F, float>) {
      parts.push_back(absl::StrCat(name, "=", FormatFloat(field)));
    } else if constexpr (std::is_same_v<F, std::string>) {
      parts.push_back(absl::StrCat(name, "=", FormatWord(field)));
    } else {
      static_assert(std::is_same_v<F, int64_t>, "unsupported field type");
      parts.push_back(absl::StrCat(name, "=", field));
    }
  };
  T::VisitFields(obj, emit);
  std::string out;
  for (const auto& p : parts) absl::StrAppend(&out, out.empty() ? "" : " ", p);
  return out;
}

// Sets the fields of `*obj` (which starts from its defaults) from `text`. Unknown or repeated
// names, missing required fields (ints, floats, strings) and bad values are errors that name
// `context` and the field.
template <class T>
absl::Status FromText(const std::vector<TextField>& text, T* obj, absl::string_view context) {
  std::vector<bool> used(text.size(), false);
  absl::Status status;
  std::string known;
  auto take = [&](absl::string_view name, auto& field) {
    using F = std::decay_t<decltype(field)>;
    absl::StrAppend(&known, known.empty() ? "" : ", ", name);
    if (!status.ok()) return;
    int found = -1;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i].name != name) continue;
      if (found >= 0) {
        status = absl::InvalidArgumentError(
            absl::StrCat(context, ": attribute '", name, "' given twice"));
        return;
      }
      found = static_cast<int>(i);
      used[i] = true;
    }
    if constexpr (std::is_same_v<F, bool>) {
      if (found >= 0 && text[found].value) {
        status = absl::InvalidArgumentError(
            absl::StrCat(context, ": flag '", name, "' takes no value"));
        return;
      }
      field = found >= 0;
    } else {
      if (found < 0) {
        if constexpr (!std::is_same_v<F, std::optional<float>>) {
          status = absl::InvalidArgumentError(
              absl::StrCat(context, ": missing attribute '", name, "'"));
        }
        return;
      }
      if (!text[found].value) {
        status = absl::InvalidArgumentError(
            absl::StrCat(context, ": attribute '", name, "' needs a value"));
        return;
      }
      if (auto st = ParseField(*text[found].value, &field); !st.ok()) {
        status = absl::InvalidArgumentError(
            absl::StrCat(context, ": attribute '", name, "': ", st.message()));
      }
    }
  };
  T::VisitFields(*obj, take);
  if (!status.ok()) return status;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!used[i]) {
      return absl::InvalidArgumentError(absl::StrCat(context, ": unknown attribute '",
                                                     text[i].name, "' (valid: ",
                                                     known.empty() ? "none" : known, ")"));
    }
  }
  return absl::OkStatus();
}

template <class T>
void Write(const T& obj, ByteWriter& w) {
  auto emit = [&w](absl::string_view, const auto& field) {
    using F = std::decay_t<decltype(field)>;
    if constexpr (std::is_same_v<F, bool>) {
      w.U8(field ? 1 : 0);
    } else if constexpr (std::is_same_v<F, std::optional<float>>) {
      w.U8(field ? 1 : 0);
      w.F32(field.value_or(0.0f));
    } else if constexpr (std::is_same_v<F, float>) {
      w.F32(field);
    } else if constexpr (std::is_same_v<F, std::string>) {
      w.Str(field);
    } else {
      w.I64(field);
    }
  };
  T::VisitFields(obj, emit);
}

template <class T>
absl::Status Read(ByteReader& r, T* obj) {
  absl::Status status;
  auto take = [&](absl::string_view name, auto& field) {
    using F = std::decay_t<decltype(field)>;
    if (!status.ok()) return;
    auto fail = [&](absl::Status st) { status = std::move(st); };
    if constexpr (std::is_same_v<F, bool> || std::is_same_v<F, std::optional<float>>) {
      auto flag = r.U8(name);
      if (!flag.ok()) return fail(flag.status());
      if (*flag > 1) return fail(r.Error(absl::StrCat(name, ": flag byte ", *flag, " is not 0/1")));
      if constexpr (std::is_same_v<F, bool>) {
        field = *flag == 1;
      } else {
        auto v = r.F32(name);
        if (!v.ok()) return fail(v.status());
        field = *flag ? std::optional<float>(*v) : std::nullopt;
      }
    } else if constexpr (std::is_same_v<F, float>) {
      auto v = r.F32(name);
      if (!v.ok()) return fail(v.status());
      field = *v;
    } else if constexpr (std::is_same_v<F, std::string>) {
      auto v = r.Str(name, 4096);
      if (!v.ok()) return fail(v.status());
      field = std::move(*v);
    } else {
      auto v = r.I64(name);
      if (!v.ok()) return fail(v.status());
      field = *v;
    }
  };
  T::VisitFields(*obj, take);
  return status;
}

}  // namespace jllm::ir::fields
