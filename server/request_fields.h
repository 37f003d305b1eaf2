// Typed access to the fields of a JSON request. A field that is absent or null (clients send
// null for "not set") reads as nullopt; a field of the wrong type is a FieldError naming its
// path ("stream_options.include_usage": "must be a boolean, not a string").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/json.h"

namespace jllm::server {

// "prefix.key", or "key" when the prefix is empty.
std::string FieldPath(std::string_view prefix, std::string_view key);
// "number", "string", ...: how an error names a JSON value's type.
std::string_view JsonTypeName(const Json& value);

// Parses a request body; its top level must be an object.
absl::StatusOr<Json> ParseRequestBody(std::string_view body);

absl::StatusOr<std::optional<bool>> GetBool(const Json& object, std::string_view key,
                                            std::string_view prefix = "");
absl::StatusOr<std::optional<double>> GetNumber(const Json& object, std::string_view key,
                                                std::string_view prefix = "");
// An integer (a number with a fraction is refused).
absl::StatusOr<std::optional<int64_t>> GetInteger(const Json& object, std::string_view key,
                                                  std::string_view prefix = "");
absl::StatusOr<std::optional<std::string>> GetString(const Json& object, std::string_view key,
                                                     std::string_view prefix = "");
// An object or an array (checked by `want_array`), returned by pointer into `object`.
absl::StatusOr<const Json*> GetObject(const Json& object, std::string_view key,
                                      std::string_view prefix = "");
absl::StatusOr<const Json*> GetArray(const Json& object, std::string_view key,
                                     std::string_view prefix = "");

}  // namespace jllm::server
