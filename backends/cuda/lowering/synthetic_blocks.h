// Random but valid quantized weights for kernel tests and benchmarks: random bytes everywhere
// (every nibble, scale and high-bit pattern occurs), with the fp16 block scales overwritten by
// finite values of a realistic size, so sums neither overflow nor vanish.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ggml_type.h"

namespace jllm::cuda {

// rows * RowBytes(type, cols) bytes in GGUF layout; Q4_K and Q6_K only.
// Q4_K: d in [2^-10, 2^-5), dmin in [2^-11, 2^-6), both positive (as llama-quantize writes them).
// Q6_K: d in ±[2^-12, 2^-7) (the quantizer's d carries the sign of the largest scale).
absl::StatusOr<std::vector<uint8_t>> RandomQuantWeights(GgmlType type, int64_t rows, int64_t cols,
                                                        uint64_t seed);

// n floats uniform in [-1, 1).
std::vector<float> RandomActivations(int64_t n, uint64_t seed);

}  // namespace jllm::cuda
