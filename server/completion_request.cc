#include "server/completion_request.h"

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace jllm::server {
namespace {

absl::StatusOr<std::vector<int32_t>> ReadIds(const Json& array, const std::string& path) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < array.size(); ++i) {
    const Json& v = array[i];
    const std::string p = absl::StrCat(path, "[", i, "]");
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      return FieldError(p, absl::StrCat(p, " must be a token id (an integer >= 0), not ", Sv(v.dump())));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return ids;
}

absl::StatusOr<std::variant<std::string, std::vector<int32_t>>> ReadPrompt(const Json& body) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) {
    return FieldError("prompt", "prompt is missing (a string or an array of token ids)");
  }
  const Json* p = &*it;
  std::string path = "prompt";
  // The batch form with one element: ["text"] or [[ids]].
  if (p->is_array() && p->size() == 1 && ((*p)[0].is_string() || (*p)[0].is_array())) {
    p = &(*p)[0];
    path = "prompt[0]";
  } else if (p->is_array() && !p->empty() && ((*p)[0].is_string() || (*p)[0].is_array())) {
    return FieldError("prompt", absl::StrCat("prompt holds ", p->size(),
                                             " prompts; jllm-server takes one per request"));
  }
  if (p->is_string()) {
    if (p->get<std::string>().empty()) return FieldError(path, absl::StrCat(path, " is empty"));
    return p->get<std::string>();
  }
  if (p->is_array()) {
    if (p->empty()) return FieldError(path, absl::StrCat(path, " is empty"));
    ASSIGN_OR_RETURN(std::vector<int32_t> ids, ReadIds(*p, path));
    return ids;
  }
  return FieldError(path, absl::StrCat(path, " must be a string or an array of token ids, not ",
                                       Sv(JsonTypeName(*p))));
}

}  // namespace

absl::StatusOr<CompletionRequest> ParseCompletionRequest(const Json& body) {
  CompletionRequest r;
  ASSIGN_OR_RETURN(r.prompt, ReadPrompt(body));
  ASSIGN_OR_RETURN(std::optional<bool> echo, GetBool(body, "echo"));
  if (echo.value_or(false)) return FieldError("echo", "echo is not supported by jllm-server");
  ASSIGN_OR_RETURN(std::optional<std::string> suffix, GetString(body, "suffix"));
  if (suffix && !suffix->empty()) return FieldError("suffix", "suffix is not supported by jllm-server");
  ASSIGN_OR_RETURN(std::optional<int64_t> best_of, GetInteger(body, "best_of"));
  if (best_of && *best_of != 1) return FieldError("best_of", "best_of must be 1");
  ASSIGN_OR_RETURN(std::optional<int64_t> logprobs, GetInteger(body, "logprobs"));
  if (logprobs && *logprobs > 0) {
    return FieldError("logprobs", "logprobs are not supported by jllm-server; leave logprobs unset");
  }
  ASSIGN_OR_RETURN(r.generation, ParseGenerationParams(body));
  return r;
}

}  // namespace jllm::server
