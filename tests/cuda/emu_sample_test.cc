// The device sampler on the CPU emulation against the host reference (sample_kernel_cases.h).
#include <vector>

#include "gtest/gtest.h"
#include "tests/cuda/emu/emu_device.h"
#include "tests/cuda/sample_kernel_cases.h"

namespace jllm::cuda::testing {
namespace {

TEST(EmuSampleKernel, MatchesTheReferenceSmallVocabulary) {
  emu::EmuDevice dev;
  CheckDeviceSamplerMatchesReference(dev, 1000, 6);
}

// A vocabulary that is no multiple of 4: the greedy scan's float4 loads end early and the last
// logit is read alone; the arg-max at the first id, the last float4's last and the lone one.
TEST(EmuSampleKernel, MatchesTheReferenceOddVocabulary) {
  emu::EmuDevice dev;
  CheckDeviceSamplerMatchesReference(dev, 1001, 3);
  DeviceSampler sampler(dev, 1001, 256);
  SamplingParams greedy;
  greedy.temperature = 0;
  for (int32_t top : {0, 999, 1000}) {
    std::vector<float> logits(1001, 0.5f);
    logits[top] = 7.0f;
    EXPECT_EQ(sampler.Draw(logits, std::vector<int32_t>{5}, greedy), top);
  }
}

// Greedy draws scan the row with every CTA of the launch (the last to finish takes the best
// key): with one CTA (JLLM_SAMPLE_CTAS=1) and with three, whose slices end mid-row, as with the
// default sixteen; the other draws run in the first CTA whatever the grid.
TEST(EmuSampleKernel, MatchesTheReferenceWithOneAndThreeCtas) {
  emu::EmuDevice dev;
  for (unsigned ctas : {1u, 3u}) {
    SCOPED_TRACE(ctas);
    CheckDeviceSamplerMatchesReference(dev, 1001, 3, ctas);
  }
}

TEST(EmuSampleKernel, MatchesTheReferenceQwenVocabulary) {
  emu::EmuDevice dev;
  CheckDeviceSamplerMatchesReference(dev, 151936, 1);
}

}  // namespace
}  // namespace jllm::cuda::testing
