// The op table (tests/backends/op_table.h) on the CUDA backend over the CPU emulation: the real
// lowering, executor and kernel sources, run by g++-compiled kernels on the host.
#include <cstdlib>
#include <memory>
#include <vector>

#include "backends/cuda/exec/cuda_backend.h"
#include "backends/cuda/lowering/lowering.h"
#include "gtest/gtest.h"
#include "tests/backends/op_table.h"
#include "tests/cuda/emu/emu_device.h"
#include "tests/cuda/op_variants.h"

namespace jllm::testing {
namespace {

std::unique_ptr<OpRunner> EmulatedCuda() {
  return std::make_unique<BackendOpRunner>("cuda (emulated)", [](const TestModel&) -> absl::StatusOr<std::unique_ptr<Backend>> {
    return cuda::CreateCudaBackendOn(std::make_unique<cuda::emu::EmuDevice>(), {});
  }, cuda::GemvActivationPlanes(), cuda::GemmTensorCores());
}

class EmuCudaOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(EmuCudaOpTest, MatchesDoubleReference) {
  auto runner = EmulatedCuda();
  CheckOpCase(GetParam(), *runner);
}

INSTANTIATE_TEST_SUITE_P(AllOps, EmuCudaOpTest, ::testing::ValuesIn(AllOpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

// The one-token matmul cases of the types with a quantized-x dot again with the GEMV's other
// activation modes (the default, i16, runs above): JLLM_GEMV_X=i8 and f32, each held to its bound.
class EmuCudaQuantizedXOpTest : public ::testing::TestWithParam<OpCase> {
 protected:
  void RunWith(const char* mode, int planes) {
    setenv("JLLM_GEMV_X", mode, 1);
    ASSERT_EQ(cuda::GemvActivationPlanes(), planes);
    auto runner = EmulatedCuda();
    ASSERT_EQ(runner->DecodeActivationPlanes(), planes);
    CheckOpCase(GetParam(), *runner);
  }
  void TearDown() override { unsetenv("JLLM_GEMV_X"); }
};

TEST_P(EmuCudaQuantizedXOpTest, Int8MatchesDoubleReference) { RunWith("i8", 1); }
TEST_P(EmuCudaQuantizedXOpTest, F32MatchesDoubleReference) { RunWith("f32", 0); }

std::vector<OpCase> QuantizedXCases() {
  std::vector<OpCase> out;
  for (OpCase& c : AllOpCases()) {
    if (c.max_nmse_x8 > 0 && c.max_nmse_x16 > 0) out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(OtherActivationModes, EmuCudaQuantizedXOpTest, ::testing::ValuesIn(QuantizedXCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

// The kernel variants (tests/cuda/op_variants.h: the decode GEMV's ring, rows and spread, the
// prefill GEMM on the tensor cores), each over the op cases it changes; the tf32 bound applies
// where the runner says its prefill is tf32.
class EmuCudaVariantOpTest : public ::testing::TestWithParam<VariantCase> {};

TEST_P(EmuCudaVariantOpTest, MatchesDoubleReference) {
  ScopedEnv env(GetParam().variant.env);
  auto runner = EmulatedCuda();
  CheckOpCase(GetParam().op, *runner);
}

INSTANTIATE_TEST_SUITE_P(Variants, EmuCudaVariantOpTest, ::testing::ValuesIn(CudaVariantCases()),
                         [](const ::testing::TestParamInfo<VariantCase>& info) { return VariantCaseName(info.param); });

}  // namespace
}  // namespace jllm::testing
