// What the gpu-labelled tests share: skipping (with the reason) where no GPU is usable, and
// opening the device.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "backends/cuda/cudart/cudart_backend.h"
#include "backends/cuda/cudart/cudart_device.h"
#include "gtest/gtest.h"

#define JLLM_SKIP_WITHOUT_GPU()                                               \
  do {                                                                        \
    const std::string reason = ::jllm::cuda::CudaUnavailableReason();         \
    if (!reason.empty()) GTEST_SKIP() << "no GPU: " << reason;                \
  } while (0)

namespace jllm::cuda::testing {

// A file of the source tree; $JLLM_SOURCE_DIR overrides where the tree is (the GPU machine runs
// binaries built elsewhere).
inline std::string SourcePath(const std::string& relative) {
  const char* env = std::getenv("JLLM_SOURCE_DIR");
  return std::string(env != nullptr && *env != '\0' ? env : JLLM_SOURCE_DIR) + "/" + relative;
}

inline std::unique_ptr<CudartDevice> OpenDevice() {
  auto d = CudartDevice::Open(0, CubinCache::FromEnvironment());
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *std::move(d) : nullptr;
}

}  // namespace jllm::cuda::testing
