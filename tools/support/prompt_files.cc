#include "tools/support/prompt_files.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "fileio/read_file.h"

namespace jllm::tools {

absl::StatusOr<std::string> ReadPromptText(const std::string& path) {
  auto text = path == "-" ? fileio::ReadStdin("prompt", kMaxPromptBytes)
                          : fileio::ReadFile(path, "prompt file", kMaxPromptBytes);
  if (!text.ok()) return text.status();
  if (text->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path == "-" ? "standard input" : path, ": the prompt file is empty"));
  }
  return text;
}

absl::StatusOr<std::vector<int32_t>> ReadPromptIds(const std::string& path) {
  auto text = fileio::ReadFile(path, "--prompt-ids file", kMaxPromptBytes);
  if (!text.ok()) return text.status();
  std::vector<int32_t> ids;
  for (absl::string_view word :
       absl::StrSplit(*text, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
    int32_t id;
    if (!absl::SimpleAtoi(word, &id)) {
      const std::string shown(word.substr(0, 40));
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": '", shown, word.size() > 40 ? "...": "",
          "' is not a token id (expected whitespace-separated integers)"));
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no token ids"));
  return ids;
}

}  // namespace jllm::tools
