#include "server/api_error.h"

#include "absl/strings/cord.h"
#include "ir/absl_compat.h"

namespace jllm::server {
namespace {

constexpr std::string_view kParamPayload = "jllm.server/param";
constexpr std::string_view kCodePayload = "jllm.server/code";

std::optional<std::string> Payload(const absl::Status& status, std::string_view key) {
  const auto p = status.GetPayload(Sv(key));  // absl::optional in Debian's Abseil
  if (!p || p->empty()) return std::nullopt;
  return std::string(*p);
}

std::string_view TypeFor(int http_status) {
  switch (http_status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 503: return "unavailable_error";
    default: return "server_error";
  }
}

}  // namespace

absl::Status FieldError(std::string_view param, std::string_view message) {
  absl::Status s = absl::InvalidArgumentError(Sv(message));
  s.SetPayload(Sv(kParamPayload), absl::Cord(Sv(param)));
  return s;
}

absl::Status ContextLengthError(std::string_view param, std::string_view message) {
  absl::Status s = FieldError(param, message);
  s.SetPayload(Sv(kCodePayload), absl::Cord("context_length_exceeded"));
  return s;
}

std::optional<std::string> ErrorParam(const absl::Status& status) {
  return Payload(status, kParamPayload);
}

std::optional<std::string> ErrorCode(const absl::Status& status) {
  return Payload(status, kCodePayload);
}

ErrorResponse MakeErrorResponse(int http_status, std::string_view message,
                                std::optional<std::string> param,
                                std::optional<std::string> code) {
  ErrorResponse r;
  r.http_status = http_status;
  Json error = Json::object();
  error["message"] = std::string(message);
  error["type"] = std::string(TypeFor(http_status));
  error["param"] = param ? Json(*param) : Json(nullptr);
  error["code"] = code ? Json(*code) : Json(nullptr);
  r.body = Json::object();
  r.body["error"] = std::move(error);
  return r;
}

ErrorResponse ToErrorResponse(const absl::Status& status) {
  int http = 500;
  std::optional<std::string> code = ErrorCode(status);
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnimplemented:
      http = 400;
      break;
    case absl::StatusCode::kResourceExhausted:
      http = 400;
      if (!code) code = "context_length_exceeded";
      break;
    case absl::StatusCode::kUnauthenticated:
      http = 401;
      if (!code) code = "invalid_api_key";
      break;
    case absl::StatusCode::kNotFound:
      http = 404;
      break;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kCancelled:
      http = 503;
      break;
    default:
      http = 500;
  }
  return MakeErrorResponse(http, std::string(status.message()), ErrorParam(status), code);
}

}  // namespace jllm::server
