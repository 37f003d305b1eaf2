#include "runtime/tokenizer/bpe_model.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "runtime/tokenizer/byte_level.h"

namespace jllm::runtime {
namespace {

// Words longer than this are rare and not worth keeping; the cache is dropped when it is full,
// which bounds its memory on adversarial input.
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCacheEntries = size_t{1} << 16;

struct Symbol {
  int32_t id;    // token id; -1 once merged into its left neighbour
  int32_t prev;  // index of the previous live symbol, or -1
  int32_t next;  // index of the next live symbol, or -1
};
struct Candidate {
  int32_t rank;
  int32_t left;    // index of the left symbol
  int32_t a, b;    // the pair's ids when queued; stale if either side changed since
  int32_t result;  // id of the merged token
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(const gguf::TokenizerData& data) {
  if (data.token_types.size() != data.tokens.size() || data.merges.size() > (size_t{1} << 30)) {
    return absl::InvalidArgumentError("tokenizer: token types do not match the tokens, or too many merges");
  }
  std::unique_ptr<BpeModel> model(new BpeModel());
  // Merges join ordinary vocabulary entries; added tokens (control, user-defined) never take part.
  absl::flat_hash_map<std::string_view, int32_t> id_of;
  id_of.reserve(data.tokens.size());
  for (size_t i = 0; i < data.tokens.size(); ++i) {
    const gguf::TokenType t = data.token_types[i];
    if (t == gguf::TokenType::kNormal || t == gguf::TokenType::kByte) {
      id_of.try_emplace(data.tokens[i], static_cast<int32_t>(i));
    }
  }
  for (int b = 0; b < 256; ++b) {
    auto it = id_of.find(ByteLevelSpelling(static_cast<uint8_t>(b)));
    if (it == id_of.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tokenizer.ggml.tokens: the byte-level vocabulary has no token for byte 0x",
          absl::Hex(b, absl::kZeroPad2), " ('", ByteLevelSpelling(static_cast<uint8_t>(b)), "')"));
    }
    model->byte_token_[b] = it->second;
  }

  model->merges_.reserve(data.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < data.merges.size(); ++rank) {
    const std::string& m = data.merges[rank];
    // "A B": the separator is the first space after the first character (A is never empty).
    const size_t space = m.find(' ', 1);
    const auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.merges[", rank, "] '", m, "': ", std::string(why)));
    };
    if (space == std::string::npos) return bad("not of the form \"A B\"");
    const std::string_view a(m.data(), space), b(m.data() + space + 1, m.size() - space - 1);
    auto ia = id_of.find(a), ib = id_of.find(b);
    if (ia == id_of.end() || ib == id_of.end()) return bad("a part is not in the vocabulary");
    joined.assign(a);
    joined.append(b);
    auto ij = id_of.find(joined);
    if (ij == id_of.end()) return bad("the joined token is not in the vocabulary");
    // The first listing of a pair gives its rank.
    model->merges_.try_emplace(PairKey(ia->second, ib->second),
                               Merge{static_cast<int32_t>(rank), ij->second});
  }
  return model;
}

void BpeModel::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    ids->push_back(byte_token_[static_cast<uint8_t>(word[0])]);
    return;
  }
  const bool cacheable = cache_enabled_ && word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = ids->size();
  MergeWord(word, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.try_emplace(std::string(word), ids->begin() + first, ids->end());
  }
}

void BpeModel::MergeWord(std::string_view word, std::vector<int32_t>* ids) const {
  // Symbols form a doubly linked list over the word's bytes; a merge folds the right symbol
  // into the left one. Candidate pairs wait in a min-heap ordered by (rank, position), which is
  // "lowest rank first, leftmost on ties" as Hugging Face does it. The buffers are reused
  // across calls on one thread.
  thread_local std::vector<Symbol> sym;
  thread_local std::vector<Candidate> heap;
  const int32_t n = static_cast<int32_t>(word.size());
  sym.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    sym[i] = {byte_token_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  const auto queue = [&](int32_t left) {
    const int32_t right = sym[left].next;
    if (right < 0) return;
    auto it = merges_.find(PairKey(sym[left].id, sym[right].id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, left, sym[left].id, sym[right].id, it->second.result});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < n; ++i) queue(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = sym[c.left];
    // A merged-away symbol has id -1; a symbol's id changes only when it absorbs its right
    // neighbour, so matching ids mean the queued pair is still there.
    if (left.id != c.a || left.next < 0 || sym[left.next].id != c.b) continue;
    const int32_t right = left.next;
    left.id = c.result;
    left.next = sym[right].next;
    if (left.next >= 0) sym[left.next].prev = c.left;
    sym[right].id = -1;
    if (left.prev >= 0) queue(left.prev);
    queue(c.left);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) ids->push_back(sym[i].id);
}

}  // namespace jllm::runtime
