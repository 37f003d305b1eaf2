#include "server/request_fields.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "server/api_error.h"

namespace jllm::server {
namespace {

const Json* Find(const Json& object, std::string_view key) {
  const auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status WrongType(std::string_view path, std::string_view want, const Json& got) {
  return FieldError(path, absl::StrCat(Sv(path), " must be ", Sv(want), ", not ",
                                       Sv(JsonTypeName(got))));
}

}  // namespace

std::string FieldPath(std::string_view prefix, std::string_view key) {
  if (prefix.empty()) return std::string(key);
  return absl::StrCat(Sv(prefix), ".", Sv(key));
}

std::string_view JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

absl::StatusOr<Json> ParseRequestBody(std::string_view body) {
  Json j;
  try {
    j = Json::parse(body.begin(), body.end());
  } catch (const Json::parse_error& e) {  // its message names the byte offset
    return FieldError("", absl::StrCat("the request body is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) {
    return FieldError("", absl::StrCat("the request body must be a JSON object, not ",
                                       Sv(JsonTypeName(j))));
  }
  return j;
}

absl::StatusOr<std::optional<bool>> GetBool(const Json& object, std::string_view key,
                                            std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return WrongType(FieldPath(prefix, key), "a boolean", *v);
  return v->get<bool>();
}

absl::StatusOr<std::optional<double>> GetNumber(const Json& object, std::string_view key,
                                                std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return WrongType(FieldPath(prefix, key), "a number", *v);
  return v->get<double>();
}

absl::StatusOr<std::optional<int64_t>> GetInteger(const Json& object, std::string_view key,
                                                  std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return FieldError(FieldPath(prefix, key),
                      absl::StrCat(FieldPath(prefix, key), " is too large (at most 2^63 - 1)"));
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  return WrongType(FieldPath(prefix, key), "an integer", *v);
}

absl::StatusOr<std::optional<std::string>> GetString(const Json& object, std::string_view key,
                                                     std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return WrongType(FieldPath(prefix, key), "a string", *v);
  return v->get<std::string>();
}

absl::StatusOr<const Json*> GetObject(const Json& object, std::string_view key,
                                      std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v != nullptr && !v->is_object()) return WrongType(FieldPath(prefix, key), "an object", *v);
  return v;
}

absl::StatusOr<const Json*> GetArray(const Json& object, std::string_view key,
                                     std::string_view prefix) {
  const Json* v = Find(object, key);
  if (v != nullptr && !v->is_array()) return WrongType(FieldPath(prefix, key), "an array", *v);
  return v;
}

}  // namespace jllm::server
