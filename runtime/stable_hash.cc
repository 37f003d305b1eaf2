#include "runtime/stable_hash.h"

#include <bit>
#include <cstring>

namespace jllm::runtime {
namespace {

static_assert(std::endian::native == std::endian::little, "words are read little-endian");

constexpr uint64_t kInit = 0x9E3779B97F4A7C15ull;   // golden-ratio constant
constexpr uint64_t kWordMul = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kStateMul = 0x9FB21C651E98DF25ull;

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDull;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ull;
  k ^= k >> 33;
  return k;
}

}  // namespace

StableHash64::StableHash64(uint64_t seed) : state_(kInit ^ Fmix64(seed)) {}

void StableHash64::AbsorbWord(uint64_t w) {
  // Odd multipliers and rotations are bijections, so (state, w) -> state' is one-to-one in each.
  state_ ^= Rotl(w * kWordMul, 31);
  state_ = Rotl(state_, 27) * kStateMul + 0x52DCE729;
}

void StableHash64::Update(absl::Span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  size_t n = bytes.size();
  length_ += n;
  while (n > 0 && n_pending_ > 0) {  // finish a partial word first
    pending_ |= static_cast<uint64_t>(*p++) << (8 * n_pending_);
    --n;
    if (++n_pending_ == 8) {
      AbsorbWord(pending_);
      pending_ = 0;
      n_pending_ = 0;
    }
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    AbsorbWord(w);
  }
  for (; n > 0; --n) pending_ |= static_cast<uint64_t>(*p++) << (8 * n_pending_++);
}

void StableHash64::UpdateU64(uint64_t v) {
  uint8_t b[8];
  std::memcpy(b, &v, 8);
  Update(absl::Span<const uint8_t>(b, 8));
}

uint64_t StableHash64::Digest() const {
  uint64_t s = state_;
  // The tail word carries its byte count in its top byte (a partial word has at most 7 bytes),
  // so "ab" and "ab\0" differ even before the length is mixed in.
  const uint64_t tail = pending_ | (static_cast<uint64_t>(n_pending_) << 56);
  s ^= Rotl(tail * kWordMul, 31);
  s = Rotl(s, 27) * kStateMul;
  return Fmix64(s ^ length_);
}

uint64_t Hash64(absl::Span<const uint8_t> bytes, uint64_t seed) {
  StableHash64 h(seed);
  h.Update(bytes);
  return h.Digest();
}

uint64_t Hash64(std::string_view bytes, uint64_t seed) {
  StableHash64 h(seed);
  h.Update(bytes);
  return h.Digest();
}

}  // namespace jllm::runtime
