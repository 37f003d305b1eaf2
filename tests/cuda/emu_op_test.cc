// The op table (tests/backends/op_table.h) on the CUDA backend over the CPU emulation: the real
// lowering, executor and kernel sources, run by g++-compiled kernels on the host.
#include <memory>

#include "backends/cuda/exec/cuda_backend.h"
#include "gtest/gtest.h"
#include "tests/backends/op_table.h"
#include "tests/cuda/emu/emu_device.h"

namespace jllm::testing {
namespace {

std::unique_ptr<OpRunner> EmulatedCuda() {
  return std::make_unique<BackendOpRunner>("cuda (emulated)", [](const TestModel&) -> absl::StatusOr<std::unique_ptr<Backend>> {
    return cuda::CreateCudaBackendOn(std::make_unique<cuda::emu::EmuDevice>(), {});
  });
}

class EmuCudaOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(EmuCudaOpTest, MatchesDoubleReference) {
  auto runner = EmulatedCuda();
  CheckOpCase(GetParam(), *runner);
}

INSTANTIATE_TEST_SUITE_P(AllOps, EmuCudaOpTest, ::testing::ValuesIn(AllOpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

}  // namespace
}  // namespace jllm::testing
