// The device sampler on the CPU emulation against the host reference (sample_kernel_cases.h).
#include "gtest/gtest.h"
#include "tests/cuda/emu/emu_device.h"
#include "tests/cuda/sample_kernel_cases.h"

namespace jllm::cuda::testing {
namespace {

TEST(EmuSampleKernel, MatchesTheReferenceSmallVocabulary) {
  emu::EmuDevice dev;
  CheckDeviceSamplerMatchesReference(dev, 1000, 6);
}

TEST(EmuSampleKernel, MatchesTheReferenceQwenVocabulary) {
  emu::EmuDevice dev;
  CheckDeviceSamplerMatchesReference(dev, 151936, 1);
}

}  // namespace
}  // namespace jllm::cuda::testing
