// Element types and shapes of IR values, and the KV cache element type.
//
// Shapes list dimensions outermost first (row-major: the last dimension is contiguous), so an
// activation of T tokens with E features is [T, E]. This is the reverse of ggml's ne[] order,
// which only weight references (ir/graph.h) use. Two dimensions are symbolic, fixed per step
// at run time: T, the tokens processed in this step (1 in decode, n in prefill), and S, the
// positions held in the KV cache after this step's append (past + T).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jllm::ir {

enum class DType : uint8_t { kF32 = 0, kF16 = 1, kI32 = 2, kI8 = 3 };
inline constexpr int kNumDTypes = 4;

std::string_view DTypeName(DType t);                 // "f32", "f16", "i32", "i8"
std::optional<DType> ParseDType(std::string_view s);
int64_t DTypeBytes(DType t);

// The KV cache element type of one layer: the kv-dtype pass chooses it, the graph records it.
// int8 storage: each (position, kv head) row of D int8 values carries one f16 scale, for K and V
// alike; KvBytesPerToken (ir/model_config.h) counts exactly that.
// kF32 is exact storage for validation against float32 references; `auto` never picks it.
enum class KvDType : uint8_t { kF16 = 0, kInt8 = 1, kF32 = 2 };
std::string_view KvDTypeName(KvDType t);             // "f16", "int8", "f32"
std::optional<KvDType> ParseKvDType(std::string_view s);
DType KvValueDType(KvDType t);                       // the dtype of the cache value: f16, i8 or f32

inline constexpr int64_t kDimT = -1;  // tokens in this step
inline constexpr int64_t kDimS = -2;  // positions in the KV cache after this step
inline constexpr int kMaxRank = 4;

struct Shape {
  std::vector<int64_t> dims;  // each > 0, or kDimT / kDimS

  int rank() const { return static_cast<int>(dims.size()); }
  bool operator==(const Shape&) const = default;
};

// One dimension as text: "T", "S" or the number.
std::string DimToString(int64_t d);
std::string ShapeToString(const Shape& s);  // "[T,1024]"; "[]" for a scalar
// True if every dimension is a positive constant or a symbol, and rank <= kMaxRank.
bool IsValidShape(const Shape& s);

struct ValueType {
  DType dtype = DType::kF32;
  Shape shape;

  bool operator==(const ValueType&) const = default;
};
std::string ValueTypeToString(const ValueType& t);  // "f32[T,1024]"

}  // namespace jllm::ir
