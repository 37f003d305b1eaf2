#include "backends/cuda/lowering/synthetic_blocks.h"

#include <cstring>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/absl_compat.h"

namespace jllm::cuda {
namespace {

// An fp16 bit pattern with a random mantissa and a biased exponent in [lo, hi], i.e. a value in
// [2^(lo-15), 2^(hi-14)); never zero, subnormal, infinite or NaN.
uint16_t RandomFp16(std::mt19937_64& rng, int lo, int hi, bool negative) {
  const int exponent = lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
  const uint16_t mantissa = static_cast<uint16_t>(rng() & 0x3FF);
  return static_cast<uint16_t>((negative ? 0x8000 : 0) | (exponent << 10) | mantissa);
}

void Put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, sizeof(v)); }

}  // namespace

absl::StatusOr<std::vector<uint8_t>> RandomQuantWeights(GgmlType type, int64_t rows, int64_t cols,
                                                        uint64_t seed) {
  if (type != GgmlType::kQ4_K && type != GgmlType::kQ6_K) {
    return absl::UnimplementedError(
        absl::StrCat("random weights: type ", Sv(GgmlTypeName(type)), " not supported"));
  }
  const int64_t row_bytes = RowBytes(type, cols);
  if (rows <= 0 || row_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("random weights: bad shape ", rows, "x", cols));
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * row_bytes));
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const uint64_t r = rng();
    std::memcpy(bytes.data() + i, &r, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(rng());

  const int64_t block_bytes = TraitsOf(type).type_size;
  const int64_t blocks = rows * (cols / kQK_K);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = bytes.data() + b * block_bytes;
    if (type == GgmlType::kQ4_K) {
      Put16(block + 0, RandomFp16(rng, 5, 9, false));  // d
      Put16(block + 2, RandomFp16(rng, 4, 8, false));  // dmin
    } else {
      Put16(block + 208, RandomFp16(rng, 3, 7, (rng() & 1) != 0));  // d
    }
  }
  return bytes;
}

std::vector<float> RandomActivations(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = uniform(rng);
  return x;
}

}  // namespace jllm::cuda
