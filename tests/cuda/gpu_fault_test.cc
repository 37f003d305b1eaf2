// Faults on the GPU: a kernel that touches memory it must not is an error naming what ran (not a
// crash or a hang), an NVRTC failure names the spec, CUBINs for another architecture fall back
// to NVRTC with a notice. Each TEST runs in its own process (ctest), so the first one's broken
// context does not reach the others.
#include <map>
#include <string>

#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/lowering/kernel_spec.h"
#include "gmock/gmock.h"
#include "tests/cuda/gpu_test_support.h"

namespace jllm::cuda::testing {
namespace {

using ::testing::HasSubstr;

KernelSpec RmsNormSpec(int64_t width) {
  KernelSpec s;
  s.label = "rms_norm test kernel";
  s.source = "rms_norm.cu";
  s.kernel = "rms_norm";
  s.defines = "JLLM_E=" + std::to_string(width);
  s.threads = 256;
  return s;
}

TEST(GpuFault, IllegalAddressIsAnErrorNamingTheStep) {
  JLLM_SKIP_WITHOUT_GPU();
  auto dev = OpenDevice();
  ASSERT_NE(dev, nullptr);
  auto k = dev->LoadKernel(RmsNormSpec(1024), "");
  ASSERT_TRUE(k.ok()) << k.status();
  RmsNormArgs bad{};
  bad.x = reinterpret_cast<const float*>(uintptr_t{16});  // a corrupted launch: no such memory
  bad.gamma = bad.x;
  bad.y = reinterpret_cast<float*>(uintptr_t{64});
  bad.n_tokens = 1;
  ASSERT_TRUE(dev->Launch(*k, {1, 1, 1}, {256, 1, 1}, 0, &bad, sizeof(bad)).ok());
  const absl::Status st = dev->Synchronize("the corrupted rms_norm launch", 30);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("the corrupted rms_norm launch"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("cudaError"));
}

TEST(GpuFault, NvrtcFailureNamesTheSpec) {
  JLLM_SKIP_WITHOUT_GPU();
  auto dev = OpenDevice();
  ASSERT_NE(dev, nullptr);
  KernelSpec broken = RmsNormSpec(1024);
  broken.defines = "";  // JLLM_E missing
  broken.label = "a spec without its constants";
  auto k = dev->LoadKernel(broken, "");
  ASSERT_FALSE(k.ok());
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("a spec without its constants"));
  EXPECT_THAT(std::string(k.status().message()), HasSubstr("JLLM_E"));
}

TEST(GpuFault, CubinsForAnotherArchitectureFallBackToNvrtc) {
  JLLM_SKIP_WITHOUT_GPU();
  std::map<std::string, std::map<std::string, std::string>> cubins = {{"sm_80", {{"x", "not a cubin"}}}};
  CudaOpenOptions o;
  o.plan_cubins = &cubins;
  auto opened = OpenCudaBackend(o);
  ASSERT_TRUE(opened.ok()) << opened.status();
  if (opened->arch == "sm_80") GTEST_SKIP() << "this GPU is the plan's architecture";
  EXPECT_THAT(opened->notice, HasSubstr("sm_80"));
  EXPECT_THAT(opened->notice, HasSubstr("NVRTC"));
}

TEST(GpuFault, CubinForThisArchitectureIsUsed) {
  JLLM_SKIP_WITHOUT_GPU();
  auto dev = OpenDevice();
  ASSERT_NE(dev, nullptr);
  NvrtcOptions o;
  o.arch = dev->properties().arch;
  o.defines = RmsNormSpec(512).DefineList();
  auto compiled = CompileKernel("rms_norm.cu", o);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto k = dev->LoadKernel(RmsNormSpec(512), compiled->cubin);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(dev->from_plan(), 1);
}

}  // namespace
}  // namespace jllm::cuda::testing
