#include "runtime/tokenizer/added_token_matcher.h"

#include <algorithm>

namespace jllm::runtime {

AddedTokenMatcher::AddedTokenMatcher(std::vector<Token> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].text.empty()) continue;  // an empty token would match everywhere
    by_first_byte_[static_cast<uint8_t>(tokens_[i].text[0])].push_back(static_cast<int32_t>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [this](int32_t a, int32_t b) {
      return tokens_[a].text.size() > tokens_[b].text.size();
    });
  }
}

std::vector<AddedTokenMatcher::Fragment> AddedTokenMatcher::Split(std::string_view text,
                                                                  bool parse_special) const {
  std::vector<Fragment> out;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    const Token* hit = nullptr;
    for (int32_t k : by_first_byte_[static_cast<uint8_t>(text[i])]) {
      const Token& t = tokens_[k];
      if (t.control && !parse_special) continue;
      if (text.compare(i, t.text.size(), t.text) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) out.push_back({text.substr(plain_start, i - plain_start), -1});
    out.push_back({text.substr(i, hit->text.size()), hit->id});
    i += hit->text.size();
    plain_start = i;
  }
  if (plain_start < text.size()) out.push_back({text.substr(plain_start), -1});
  return out;
}

}  // namespace jllm::runtime
