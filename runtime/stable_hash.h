// A 64-bit hash whose value is fixed forever (it is stored in plan files), independent of
// absl::Hash, the compiler and the platform. Used for the plan checksum and the GGUF
// fingerprint: it detects corruption and changed files, it is not a cryptographic hash.
//
// Construction: little-endian 64-bit words, each absorbed by a step that is a bijection of the
// state for a fixed word and of the word for a fixed state (so any single changed word always
// changes the result), then a final avalanche (the MurmurHash3 fmix64 constants) mixing in the
// total length.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/types/span.h"

namespace jllm::runtime {

class StableHash64 {
 public:
  explicit StableHash64(uint64_t seed = 0);

  void Update(absl::Span<const uint8_t> bytes);
  void Update(std::string_view bytes) {
    Update(absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  void UpdateU64(uint64_t v);  // the 8 little-endian bytes of v

  // The hash of everything absorbed so far (the object can keep absorbing afterwards).
  uint64_t Digest() const;

 private:
  void AbsorbWord(uint64_t w);
  uint64_t state_;
  uint64_t length_ = 0;
  uint64_t pending_ = 0;  // bytes of a partial word, low byte first
  int n_pending_ = 0;
};

// One-shot convenience.
uint64_t Hash64(absl::Span<const uint8_t> bytes, uint64_t seed = 0);
uint64_t Hash64(std::string_view bytes, uint64_t seed = 0);

}  // namespace jllm::runtime
