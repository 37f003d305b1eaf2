// OpenAI-style errors. Library code returns absl::Status; the request field at fault and an
// error code travel with it as payloads, and ToErrorResponse turns it into the HTTP status and
// the body {"error": {"message", "type", "param", "code"}} that OpenAI clients parse.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "server/json.h"

namespace jllm::server {

// InvalidArgument naming the request field (`param`, e.g. "messages[2].role"; empty: the
// request as a whole).
absl::Status FieldError(std::string_view param, std::string_view message);
// The same for a prompt that does not fit the context (code "context_length_exceeded").
absl::Status ContextLengthError(std::string_view param, std::string_view message);

std::optional<std::string> ErrorParam(const absl::Status& status);
std::optional<std::string> ErrorCode(const absl::Status& status);

struct ErrorResponse {
  int http_status = 500;
  Json body;
};

// The error object for an HTTP status: type from the status (400 invalid_request_error, 401
// authentication_error, 404 not_found_error, 413 request_too_large, 503 unavailable_error,
// otherwise server_error).
ErrorResponse MakeErrorResponse(int http_status, std::string_view message,
                                std::optional<std::string> param = std::nullopt,
                                std::optional<std::string> code = std::nullopt);

// InvalidArgument, OutOfRange, Unimplemented, ResourceExhausted (a prompt too long): 400;
// Unauthenticated: 401; NotFound: 404; Unavailable, Cancelled: 503; anything else: 500.
ErrorResponse ToErrorResponse(const absl::Status& status);

}  // namespace jllm::server
