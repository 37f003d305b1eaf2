#include "runtime/tokenizer/pre_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "ir/status.h"
#include "runtime/tokenizer/regex_splitter.h"

namespace jllm::runtime {
namespace {

// A pre-tokenizer that is one regex split.
class RegexPreTokenizer : public PreTokenizer {
 public:
  explicit RegexPreTokenizer(std::unique_ptr<RegexSplitter> splitter) : splitter_(std::move(splitter)) {}
  absl::Status Split(std::string_view text, absl::FunctionRef<void(std::string_view)> emit) const override {
    return splitter_->Split(text, emit);
  }

 private:
  std::unique_ptr<RegexSplitter> splitter_;
};

// Qwen2/Qwen3 (tokenizer.json's Split regex). Hugging Face runs it with Oniguruma, whose \s is
// the Unicode White_Space property; PCRE2's \s differs (it adds U+180E), so the property is
// spelled out. PCRE2 handles the lookahead (?!\S) directly.
absl::StatusOr<std::unique_ptr<PreTokenizer>> MakeQwen2() {
  ASSIGN_OR_RETURN(auto splitter, RegexSplitter::Create(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d))"
      R"(|[^\r\n\p{L}\p{N}]?\p{L}+)"
      R"(|\p{N})"
      R"(| ?[^\p{White_Space}\p{L}\p{N}]+[\r\n]*)"
      R"(|\p{White_Space}*[\r\n]+)"
      R"(|\p{White_Space}+(?!\P{White_Space}))"
      R"(|\p{White_Space}+)"));
  return std::unique_ptr<PreTokenizer>(new RegexPreTokenizer(std::move(splitter)));
}

struct PreTokenizerEntry {
  std::string_view name;  // tokenizer.ggml.pre
  absl::StatusOr<std::unique_ptr<PreTokenizer>> (*make)();
};
constexpr PreTokenizerEntry kPreTokenizers[] = {
    {"qwen2", &MakeQwen2},
};

}  // namespace

std::string SupportedPreTokenizers() {
  std::string names;
  for (const PreTokenizerEntry& e : kPreTokenizers) absl::StrAppend(&names, names.empty() ? "" : ", ", std::string(e.name));
  return names;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> MakePreTokenizer(std::string_view pre) {
  for (const PreTokenizerEntry& e : kPreTokenizers) {
    if (e.name == pre) return e.make();
  }
  return absl::UnimplementedError(absl::StrCat("tokenizer.ggml.pre '", std::string(pre),
                                               "' is not supported (supported: ", SupportedPreTokenizers(), ")"));
}

}  // namespace jllm::runtime
