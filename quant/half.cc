// fp16 and bf16 conversions (FORMATS.md §1), done on bit patterns so results do not depend on
// the host's half-precision hardware or the compiler's rounding mode.
#include <bit>
#include <cstdint>

#include "quant/quant.h"

namespace jllm::quant {

float Fp16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24 is exact in f32.
    const float mag = static_cast<float>(man) * 0x1p-24f;
    return sign ? -mag : mag;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (man << 13));  // inf / NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t F32ToFp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u;  // NaN -> quiet NaN (as ggml's software path)
  // 65520 = 0x477FF000 is halfway between 65504 (the largest half) and 2^16: ties go to the
  // even neighbour, which is infinity.
  if (abs >= 0x477FF000u) return sign | 0x7C00u;
  const uint32_t exp = abs >> 23;
  if (abs < 0x38800000u) {                // below 2^-14: a half subnormal or zero
    if (abs <= 0x33000000u) return sign;  // <= 2^-25 rounds to zero (2^-25 is a tie to even 0)
    const uint32_t man = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14..24 for exp 102..112
    uint32_t h = man >> shift;
    const uint32_t rem = man & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) ++h;  // may carry into the smallest normal
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t h = ((exp - 112) << 10) | ((abs >> 13) & 0x3FFu);
  const uint32_t rem = abs & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

float Bf16ToF32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t F32ToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 64);
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace jllm::quant
