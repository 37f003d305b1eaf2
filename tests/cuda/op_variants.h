// The CUDA backend's kernel variants (the switches of backends/cuda/lowering, docs/PERF.md) that
// the op table runs besides the defaults: the same (variant, case) list for the emulated op test
// (cpu label) and the GPU op test, so a variant checked on the CPU emulation is checked on the
// hardware by the same cases at the next GPU run.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tests/backends/op_table.h"

namespace jllm::testing {

struct OpVariant {
  std::string name;                                       // test-name prefix, e.g. "ring3_r2_spread"
  std::vector<std::pair<std::string, std::string>> env;  // the switches, read at lowering
};

struct VariantCase {
  OpVariant variant;
  OpCase op;
};

// Every variant with the op cases it changes: the decode GEMV variants with the one-token matmul,
// group and logits cases (or the group cases only), the tensor-core GEMM with the prefill matmuls.
std::vector<VariantCase> CudaVariantCases();
std::string VariantCaseName(const VariantCase& c);
inline void PrintTo(const VariantCase& c, std::ostream* os) { *os << VariantCaseName(c); }

// Sets environment variables for its lifetime, then unsets them (the tests' switches are never
// set outside such a scope).
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& env);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::string> names_;
};

}  // namespace jllm::testing
