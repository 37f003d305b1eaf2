// The op table (tests/backends/op_table.h) and the device sampler on the GPU.
#include <memory>

#include "backends/cuda/exec/cuda_backend.h"
#include "backends/cuda/lowering/lowering.h"
#include "tests/backends/op_table.h"
#include "tests/cuda/gpu_test_support.h"
#include "tests/cuda/op_variants.h"
#include "tests/cuda/sample_kernel_cases.h"

namespace jllm::testing {
namespace {

// A runner on GPU 0, with the switches of the environment as it is now (read at lowering).
BackendOpRunner GpuRunner() {
  return BackendOpRunner("cuda", [](const TestModel&) -> absl::StatusOr<std::unique_ptr<Backend>> {
    auto device = cuda::CudartDevice::Open(0, cuda::CubinCache::FromEnvironment());
    if (!device.ok()) return device.status();
    return cuda::CreateCudaBackendOn(*std::move(device), {});
  }, cuda::GemvActivationPlanes(), cuda::GemmTensorCores());
}

class GpuOpTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(GpuOpTest, MatchesDoubleReference) {
  JLLM_SKIP_WITHOUT_GPU();
  BackendOpRunner runner = GpuRunner();
  CheckOpCase(GetParam(), runner);
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuOpTest, ::testing::ValuesIn(AllOpCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

// The kernel variants on the hardware, the same (variant, case) list as the emulated op test.
class GpuVariantOpTest : public ::testing::TestWithParam<VariantCase> {};

TEST_P(GpuVariantOpTest, MatchesDoubleReference) {
  JLLM_SKIP_WITHOUT_GPU();
  ScopedEnv env(GetParam().variant.env);
  BackendOpRunner runner = GpuRunner();
  CheckOpCase(GetParam().op, runner);
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuVariantOpTest, ::testing::ValuesIn(CudaVariantCases()),
                         [](const ::testing::TestParamInfo<VariantCase>& info) { return VariantCaseName(info.param); });

TEST(GpuSampleKernel, MatchesTheReference) {
  JLLM_SKIP_WITHOUT_GPU();
  auto dev = cuda::testing::OpenDevice();
  ASSERT_NE(dev, nullptr);
  cuda::testing::CheckDeviceSamplerMatchesReference(*dev, 1000, 40);
  cuda::testing::CheckDeviceSamplerMatchesReference(*dev, 1001, 10);
  cuda::testing::CheckDeviceSamplerMatchesReference(*dev, 151936, 20);
}

}  // namespace
}  // namespace jllm::testing
