#include "server/generation_params.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"
#include "ir/status.h"
#include "server/api_error.h"
#include "server/request_fields.h"

namespace jllm::server {
namespace {

// A number in [lo, hi] (either end open when the flag says so), as a float.
absl::StatusOr<std::optional<float>> NumberIn(const Json& body, std::string_view key, double lo,
                                              double hi, bool lo_open, std::string_view range) {
  ASSIGN_OR_RETURN(std::optional<double> v, GetNumber(body, key));
  if (!v) return std::nullopt;
  const bool ok = std::isfinite(*v) && (lo_open ? *v > lo : *v >= lo) && *v <= hi;
  if (!ok) return FieldError(key, absl::StrCat(Sv(key), " must be in ", Sv(range), ", not ", *v));
  return static_cast<float>(*v);
}

absl::StatusOr<std::vector<std::string>> ReadStop(const Json& body) {
  std::vector<std::string> stop;
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return stop;
  if (it->is_string()) {
    stop.push_back(it->get<std::string>());
    return stop;
  }
  if (!it->is_array()) {
    return FieldError("stop", absl::StrCat("stop must be a string or an array of strings, not ",
                                           Sv(JsonTypeName(*it))));
  }
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& s = (*it)[i];
    if (!s.is_string()) {
      const std::string path = absl::StrCat("stop[", i, "]");
      return FieldError(path, absl::StrCat(path, " must be a string, not ", Sv(JsonTypeName(s))));
    }
    stop.push_back(s.get<std::string>());
  }
  return stop;
}

absl::StatusOr<SamplingRequest> ReadSampling(const Json& body) {
  constexpr double kInf = INFINITY;
  SamplingRequest s;
  ASSIGN_OR_RETURN(s.temperature, NumberIn(body, "temperature", 0, kInf, false, "[0, inf) (0 = greedy)"));
  ASSIGN_OR_RETURN(s.top_p, NumberIn(body, "top_p", 0, 1, true, "(0, 1]"));
  ASSIGN_OR_RETURN(s.min_p, NumberIn(body, "min_p", 0, 1, false, "[0, 1]"));
  // OpenAI's range; applied over the server's --repeat-last-n window, as llama-server does.
  ASSIGN_OR_RETURN(s.presence_penalty, NumberIn(body, "presence_penalty", -2, 2, false, "[-2, 2] (0 = off)"));
  ASSIGN_OR_RETURN(s.frequency_penalty, NumberIn(body, "frequency_penalty", -2, 2, false, "[-2, 2] (0 = off)"));
  ASSIGN_OR_RETURN(s.repetition_penalty,
                   NumberIn(body, "repetition_penalty", 0, kInf, true, "(0, inf) (1 = off)"));
  ASSIGN_OR_RETURN(std::optional<int64_t> top_k, GetInteger(body, "top_k"));
  if (top_k) {
    if (*top_k < 0 || *top_k > INT32_MAX) {
      return FieldError("top_k", absl::StrCat("top_k must be >= 0 (0 = off), not ", *top_k));
    }
    s.top_k = static_cast<int32_t>(*top_k);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> seed, GetInteger(body, "seed"));
  if (seed && *seed != -1) s.seed = static_cast<uint64_t>(*seed);
  return s;
}

}  // namespace

absl::StatusOr<GenerationParams> ParseGenerationParams(const Json& body) {
  GenerationParams p;
  ASSIGN_OR_RETURN(std::optional<bool> stream, GetBool(body, "stream"));
  p.stream = stream.value_or(false);
  ASSIGN_OR_RETURN(const Json* stream_options, GetObject(body, "stream_options"));
  if (stream_options != nullptr) {
    ASSIGN_OR_RETURN(std::optional<bool> usage,
                     GetBool(*stream_options, "include_usage", "stream_options"));
    p.include_usage = usage.value_or(false);
  }

  ASSIGN_OR_RETURN(std::optional<int64_t> max_tokens, GetInteger(body, "max_tokens"));
  ASSIGN_OR_RETURN(std::optional<int64_t> max_completion, GetInteger(body, "max_completion_tokens"));
  const char* limit_key = max_completion ? "max_completion_tokens" : "max_tokens";
  p.max_tokens = max_completion ? max_completion : max_tokens;
  if (p.max_tokens && *p.max_tokens < -1) {
    return FieldError(limit_key, absl::StrCat(limit_key, " must be >= 0 (or -1: no limit), not ",
                                              *p.max_tokens));
  }
  ASSIGN_OR_RETURN(p.stop, ReadStop(body));
  ASSIGN_OR_RETURN(p.sampling, ReadSampling(body));

  ASSIGN_OR_RETURN(std::optional<int64_t> n, GetInteger(body, "n"));
  if (n && *n != 1) {
    return FieldError("n", absl::StrCat("n must be 1: jllm-server generates one choice per "
                                        "request, not ", *n));
  }
  ASSIGN_OR_RETURN(const Json* format, GetObject(body, "response_format"));
  if (format != nullptr) {
    ASSIGN_OR_RETURN(std::optional<std::string> type, GetString(*format, "type", "response_format"));
    if (type.value_or("text") != "text") {
      return FieldError("response_format.type",
                        absl::StrCat("response_format.type '", type.value_or(""),
                                     "' is not supported (jllm-server cannot constrain the "
                                     "output); use 'text'"));
    }
  }
  return p;
}

}  // namespace jllm::server
