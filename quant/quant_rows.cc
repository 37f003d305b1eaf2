// DequantizeRow / QuantizeRow: argument checks and dispatch to the per-type codecs. Blocks are
// read through aligned copies when the caller's pointer is not aligned for the block struct
// (GGUF data is 32-byte aligned, so this is the rare path).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "quant/quant.h"
#include "quant/row_codecs.h"

namespace jllm::quant {
namespace {

constexpr const char* kSupported = "f32, f16, bf16, q8_0, q4_K, q5_K, q6_K";

// The ggml type table (ir/ggml_type.cc) and the block layouts must agree on every block size.
constexpr bool TableMatchesLayouts() {
  return TypeSize(GgmlType::kQ8_0) == sizeof(BlockQ8_0) &&
         TypeSize(GgmlType::kQ4_K) == sizeof(BlockQ4_K) &&
         TypeSize(GgmlType::kQ5_K) == sizeof(BlockQ5_K) &&
         TypeSize(GgmlType::kQ6_K) == sizeof(BlockQ6_K) && BlockSize(GgmlType::kQ4_K) == kQK_K &&
         BlockSize(GgmlType::kQ8_0) == kQK8_0;
}
static_assert(TableMatchesLayouts(), "ir/ggml_type.cc disagrees with quant/block_layout.h");

// Debian's Abseil has its own string_view, so std::string_view does not convert to AlphaNum.
std::string TypeName(GgmlType type) { return std::string(GgmlTypeName(type)); }

absl::Status CheckArgs(const char* fn, GgmlType type, const void* src, const void* dst, int64_t n) {
  const auto& traits = TraitsOf(type);
  if (n < 0 || n % traits.block_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(fn, ": ", n, " elements of type ", std::string(traits.name),
                     " is not a multiple of its block size ", traits.block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return absl::InvalidArgumentError(absl::StrCat(fn, ": null buffer for ", n, " elements"));
  }
  return absl::OkStatus();
}

absl::Status Unsupported(const char* fn, GgmlType type) {
  return absl::UnimplementedError(absl::StrCat(fn, ": type ", TypeName(type), " (id ",
                                               static_cast<uint32_t>(type),
                                               ") is not supported; supported: ", kSupported));
}

bool IsAligned(const void* p, size_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

template <typename Block>
void DequantizeBlocks(void (*codec)(const Block*, float*, int64_t), const void* src, float* dst,
                      int64_t nblocks, int64_t block_elems) {
  if (IsAligned(src, alignof(Block))) {
    codec(static_cast<const Block*>(src), dst, nblocks);
    return;
  }
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t b = 0; b < nblocks; ++b) {
    Block tmp;
    std::memcpy(&tmp, bytes + b * sizeof(Block), sizeof(Block));
    codec(&tmp, dst + b * block_elems, 1);
  }
}

template <typename Block>
void QuantizeBlocks(void (*codec)(const float*, Block*, int64_t), const float* src, void* dst,
                    int64_t nblocks, int64_t block_elems) {
  if (IsAligned(dst, alignof(Block))) {
    codec(src, static_cast<Block*>(dst), nblocks);
    return;
  }
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < nblocks; ++b) {
    Block tmp;
    codec(src + b * block_elems, &tmp, 1);
    std::memcpy(bytes + b * sizeof(Block), &tmp, sizeof(Block));
  }
}

}  // namespace

absl::Status DequantizeRow(GgmlType type, const void* src, float* dst, int64_t n) {
  if (!LookupGgmlType(static_cast<uint32_t>(type))) {
    return absl::InvalidArgumentError(
        absl::StrCat("DequantizeRow: unknown ggml type id ", static_cast<uint32_t>(type)));
  }
  if (auto s = CheckArgs("DequantizeRow", type, src, dst, n); !s.ok()) return s;
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (type) {
    case GgmlType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return absl::OkStatus();
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      const bool f16 = type == GgmlType::kF16;
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, bytes + 2 * i, 2);
        dst[i] = f16 ? Fp16ToF32(h) : Bf16ToF32(h);
      }
      return absl::OkStatus();
    }
    case GgmlType::kQ8_0:
      DequantizeBlocks<BlockQ8_0>(internal::DequantizeQ8_0, src, dst, n / kQK8_0, kQK8_0);
      return absl::OkStatus();
    case GgmlType::kQ4_K:
      DequantizeBlocks<BlockQ4_K>(internal::DequantizeQ4_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    case GgmlType::kQ5_K:
      DequantizeBlocks<BlockQ5_K>(internal::DequantizeQ5_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    case GgmlType::kQ6_K:
      DequantizeBlocks<BlockQ6_K>(internal::DequantizeQ6_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    default:
      return Unsupported("DequantizeRow", type);
  }
}

absl::Status QuantizeRow(GgmlType type, const float* src, void* dst, int64_t n) {
  if (!LookupGgmlType(static_cast<uint32_t>(type))) {
    return absl::InvalidArgumentError(
        absl::StrCat("QuantizeRow: unknown ggml type id ", static_cast<uint32_t>(type)));
  }
  if (auto s = CheckArgs("QuantizeRow", type, src, dst, n); !s.ok()) return s;
  auto* bytes = static_cast<uint8_t*>(dst);
  const bool block_type = type == GgmlType::kQ8_0 || type == GgmlType::kQ4_K ||
                          type == GgmlType::kQ5_K || type == GgmlType::kQ6_K;
  if (block_type) {
    // The scale searches assume finite input; inf/NaN would make meaningless blocks.
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(src[i])) {
        return absl::InvalidArgumentError(absl::StrCat("QuantizeRow: element ", i, " is ", src[i],
                                                       "; ", TypeName(type),
                                                       " needs finite values"));
      }
    }
  }
  switch (type) {
    case GgmlType::kF32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return absl::OkStatus();
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      const bool f16 = type == GgmlType::kF16;
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = f16 ? F32ToFp16(src[i]) : F32ToBf16(src[i]);
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      return absl::OkStatus();
    }
    case GgmlType::kQ8_0:
      QuantizeBlocks<BlockQ8_0>(internal::QuantizeQ8_0, src, dst, n / kQK8_0, kQK8_0);
      return absl::OkStatus();
    case GgmlType::kQ4_K:
      QuantizeBlocks<BlockQ4_K>(internal::QuantizeQ4_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    case GgmlType::kQ5_K:
      QuantizeBlocks<BlockQ5_K>(internal::QuantizeQ5_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    case GgmlType::kQ6_K:
      QuantizeBlocks<BlockQ6_K>(internal::QuantizeQ6_K, src, dst, n / kQK_K, kQK_K);
      return absl::OkStatus();
    default:
      return Unsupported("QuantizeRow", type);
  }
}

}  // namespace jllm::quant
