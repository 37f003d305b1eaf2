#include "ir/types.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jllm::ir {

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (DTypeName(static_cast<DType>(i)) == s) return static_cast<DType>(i);
  }
  return std::nullopt;
}

int64_t DTypeBytes(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kI32: return 4;
    case DType::kI8: return 1;
  }
  return 0;
}

std::string_view KvDTypeName(KvDType t) {
  switch (t) {
    case KvDType::kF16: return "f16";
    case KvDType::kInt8: return "int8";
    case KvDType::kF32: return "f32";
  }
  return "?";
}

std::optional<KvDType> ParseKvDType(std::string_view s) {
  if (s == "f16") return KvDType::kF16;
  if (s == "int8") return KvDType::kInt8;
  if (s == "f32") return KvDType::kF32;
  return std::nullopt;
}

DType KvValueDType(KvDType t) {
  switch (t) {
    case KvDType::kF16: return DType::kF16;
    case KvDType::kInt8: return DType::kI8;
    case KvDType::kF32: return DType::kF32;
  }
  return DType::kF16;
}

std::string DimToString(int64_t d) {
  if (d == kDimT) return "T";
  if (d == kDimS) return "S";
  return absl::StrCat(d);
}

std::string ShapeToString(const Shape& s) {
  return absl::StrCat("[", absl::StrJoin(s.dims, ",", [](std::string* out, int64_t d) {
                        out->append(DimToString(d));
                      }),
                      "]");
}

bool IsValidShape(const Shape& s) {
  if (s.rank() > kMaxRank) return false;
  for (int64_t d : s.dims) {
    if (d <= 0 && d != kDimT && d != kDimS) return false;
  }
  return true;
}

std::string ValueTypeToString(const ValueType& t) {
  return std::string(DTypeName(t.dtype)) + ShapeToString(t.shape);
}

}  // namespace jllm::ir
