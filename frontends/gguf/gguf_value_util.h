// Facts about GGUF value types shared by the reader and the writer (FORMATS.md §1).
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/strings/string_view.h"

#include "frontends/gguf/gguf_file.h"
#include "ir/absl_compat.h"  // Sv()

namespace jllm::gguf {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint64_t kMaxTensorNameBytes = 63;  // GGML_MAX_NAME (64) counts the NUL
inline constexpr uint32_t kMaxDims = 4;

inline bool IsKnownValueType(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::kFloat64); }

// Encoded size of a fixed-size value type; 0 for STRING and ARRAY.
inline uint64_t FixedValueSize(ValueType t) {
  switch (t) {
    case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
    case ValueType::kUint16: case ValueType::kInt16: return 2;
    case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
    case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
    case ValueType::kString: case ValueType::kArray: return 0;
  }
  return 0;
}

inline bool IsFloatType(ValueType t) { return t == ValueType::kFloat32 || t == ValueType::kFloat64; }
inline bool IsSignedIntType(ValueType t) {
  return t == ValueType::kInt8 || t == ValueType::kInt16 || t == ValueType::kInt32 ||
         t == ValueType::kInt64;
}
// Unsigned integers and BOOL: the types whose scalar payload is uint64_t.
inline bool IsUnsignedIntType(ValueType t) {
  return t == ValueType::kUint8 || t == ValueType::kUint16 || t == ValueType::kUint32 ||
         t == ValueType::kUint64 || t == ValueType::kBool;
}

// PAD(x, n) of FORMATS.md §1; `align` must be a power of two.
inline uint64_t PadTo(uint64_t x, uint64_t align) { return (x + align - 1) & ~(align - 1); }

}  // namespace jllm::gguf
