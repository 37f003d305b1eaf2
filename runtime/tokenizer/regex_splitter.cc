#include "runtime/tokenizer/regex_splitter.h"

#include <pcre2.h>

#include "absl/strings/str_cat.h"

namespace jllm::runtime {
namespace {

std::string Pcre2Message(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) return absl::StrCat("error ", code);
  return std::string(reinterpret_cast<const char*>(buffer));
}

struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

// Length of the UTF-8 character starting at s[i] (valid input assumed; 1 for safety otherwise).
size_t CharLength(std::string_view s, size_t i) {
  const uint8_t b = static_cast<uint8_t>(s[i]);
  const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
  return std::min(n, s.size() - i);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RegexSplitter>> RegexSplitter::Create(std::string pattern) {
  std::unique_ptr<RegexSplitter> splitter(new RegexSplitter());
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("pre-tokenizer regex does not compile at offset ",
                                                   offset, ": ", Pcre2Message(error)));
  }
  splitter->code_ = code;
  splitter->pattern_ = std::move(pattern);
  // Without JIT (a platform PCRE2 lacks it for) the interpreter gives the same answers, slower.
  splitter->jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return splitter;
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(code_); }

absl::Status RegexSplitter::Split(std::string_view text, absl::FunctionRef<void(std::string_view)> emit) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> match(
      pcre2_match_data_create_from_pattern(code_, nullptr));
  if (match == nullptr) return absl::ResourceExhaustedError("cannot allocate PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;   // where the next search starts
  size_t done = 0;  // text before this is already in `pieces`
  while (pos < text.size()) {
    int rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // A pathological input outgrew the JIT's stack: the interpreter keeps its frames on the heap.
      rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                       match.get(), nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat("pre-tokenizer regex failed at byte ", pos, ": ", Pcre2Message(rc)));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
    const size_t start = ovector[0], end = ovector[1];
    if (start > done) emit(text.substr(done, start - done));
    if (end > start) emit(text.substr(start, end - start));
    done = end;
    // An empty match isolates nothing; step over one character so the search moves on.
    pos = end > start ? end : end + (end < text.size() ? CharLength(text, end) : 1);
  }
  if (done < text.size()) emit(text.substr(done));
  return absl::OkStatus();
}

}  // namespace jllm::runtime
