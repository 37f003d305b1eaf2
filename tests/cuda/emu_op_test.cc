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

namespace jllm::testing {
namespace {

std::unique_ptr<OpRunner> EmulatedCuda() {
  return std::make_unique<BackendOpRunner>("cuda (emulated)", [](const TestModel&) -> absl::StatusOr<std::unique_ptr<Backend>> {
    return cuda::CreateCudaBackendOn(std::make_unique<cuda::emu::EmuDevice>(), {});
  }, cuda::GemvInt8Activations());
}

class EmuCudaOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(EmuCudaOpTest, MatchesDoubleReference) {
  auto runner = EmulatedCuda();
  CheckOpCase(GetParam(), *runner);
}

INSTANTIATE_TEST_SUITE_P(AllOps, EmuCudaOpTest, ::testing::ValuesIn(AllOpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

// The one-token matmul cases again with the GEMV's int8-activation path (JLLM_GEMV_X8=1), held
// to their x8 bounds.
class EmuCudaX8OpTest : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override { setenv("JLLM_GEMV_X8", "1", 1); }
  void TearDown() override { unsetenv("JLLM_GEMV_X8"); }
};

TEST_P(EmuCudaX8OpTest, MatchesDoubleReference) {
  ASSERT_TRUE(cuda::GemvInt8Activations());
  auto runner = EmulatedCuda();
  ASSERT_TRUE(runner->Int8DecodeActivations());
  CheckOpCase(GetParam(), *runner);
}

std::vector<OpCase> X8Cases() {
  std::vector<OpCase> out;
  for (OpCase& c : AllOpCases()) {
    if (c.max_nmse_x8 > 0) out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Int8Activations, EmuCudaX8OpTest, ::testing::ValuesIn(X8Cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

}  // namespace
}  // namespace jllm::testing
