// Per-type row codecs behind DequantizeRow / QuantizeRow. Private to quant/: callers outside go
// through quant.h, which checks the type and the element count first.
#pragma once

#include <cstdint>

#include "quant/block_layout.h"

namespace jllm::quant::internal {

void DequantizeQ8_0(const BlockQ8_0* x, float* y, int64_t nblocks);
void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t nblocks);
void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t nblocks);
void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t nblocks);

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t nblocks);
void QuantizeQ4_K(const float* x, BlockQ4_K* y, int64_t nblocks);
void QuantizeQ5_K(const float* x, BlockQ5_K* y, int64_t nblocks);
void QuantizeQ6_K(const float* x, BlockQ6_K* y, int64_t nblocks);

}  // namespace jllm::quant::internal
