// Byte-level BPE: a word's bytes become their byte-level tokens, then adjacent pairs are merged
// by merge rank (lowest first, leftmost on ties) until no pair has a merge. Results for short
// words are cached, since text repeats its words.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "frontends/gguf/tokenizer_data.h"
#include "runtime/tokenizer/string_key.h"

namespace jllm::runtime {

class BpeModel {
 public:
  // Needs every byte's stand-in in the vocabulary and every merge "A B" to join two vocabulary
  // entries into a third: then every word has an encoding.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Create(const gguf::TokenizerData& data);

  // Appends the ids of `word` (raw bytes, one pre-tokenizer piece). Thread-safe.
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;

  void set_cache_enabled(bool enabled) { cache_enabled_ = enabled; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // id of the joined token
  };
  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void MergeWord(std::string_view word, std::vector<int32_t>* ids) const;

  std::array<int32_t, 256> byte_token_{};
  absl::flat_hash_map<uint64_t, Merge> merges_;
  bool cache_enabled_ = true;
  mutable std::mutex cache_mu_;
  mutable absl::flat_hash_map<std::string, std::vector<int32_t>, StringKeyHash, StringKeyEq> cache_;
};

}  // namespace jllm::runtime
