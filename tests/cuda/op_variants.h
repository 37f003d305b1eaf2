// The kernel variants of tests/cuda/kernel_variants.h paired with the op-table cases each
// changes: the same (variant, case) list for the emulated op test (cpu label) and the GPU op
// test, so a variant checked on the CPU emulation is checked on the hardware by the same cases
// at the next GPU run.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tests/backends/op_table.h"
#include "tests/cuda/kernel_variants.h"

namespace jllm::testing {

struct VariantCase {
  OpVariant variant;
  OpCase op;
};

std::vector<VariantCase> CudaVariantCases();
std::string VariantCaseName(const VariantCase& c);
inline void PrintTo(const VariantCase& c, std::ostream* os) { *os << VariantCaseName(c); }

}  // namespace jllm::testing
