// The op table (tests/backends/op_table.h) on the CUDA backend over the CPU emulation: the real
// lowering, executor and kernel sources, run by g++-compiled kernels on the host.
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/match.h"

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

// The cases that run the decode GEMV (one-token matmuls and groups, logits) again with its
// other variants (the default — one row per item, two steps ahead in registers, whole items
// dealt to a CTA's warps round-robin — runs above): the configuration measured fastest on the
// H200 (docs/PERF.md) — a ring of three shared-memory slots per warp filled by bulk copies
// (which the emulation has, as sm_90 does), two rows per item, each warp an equal range of its
// CTA's steps; and for the groups: two slots with three rows per item and every matrix split in
// two along K, so a slot holds several rows and a warp's stream crosses splits and members; the
// ring filled by 16-byte cp.async (JLLM_GEMV_BULK=0, the path before sm_90); and equal step
// ranges with the steps ahead in registers.
class EmuCudaGemvVariantOpTest : public ::testing::TestWithParam<OpCase> {
 protected:
  void RunWith(const std::vector<std::pair<const char*, const char*>>& env) {
    for (const auto& [name, value] : env) setenv(name, value, 1);
    auto runner = EmulatedCuda();
    CheckOpCase(GetParam(), *runner);
  }
  void TearDown() override {
    for (const char* name :
         {"JLLM_GEMV_RING", "JLLM_GEMV_R", "JLLM_GEMV_MINB", "JLLM_GEMV_KSPLIT", "JLLM_GEMV_BULK", "JLLM_GEMV_SPREAD"}) {
      unsetenv(name);
    }
  }
};
class EmuCudaGemvGroupVariantOpTest : public EmuCudaGemvVariantOpTest {};

TEST_P(EmuCudaGemvVariantOpTest, RingTwoRowsSpreadMatchesDoubleReference) {
  RunWith({{"JLLM_GEMV_RING", "3"}, {"JLLM_GEMV_R", "2"}, {"JLLM_GEMV_MINB", "2"}, {"JLLM_GEMV_SPREAD", "1"}});
}
TEST_P(EmuCudaGemvGroupVariantOpTest, RingOfTwoSlotsThreeRowsSplitMatchesDoubleReference) {
  RunWith({{"JLLM_GEMV_RING", "2"}, {"JLLM_GEMV_R", "3"}, {"JLLM_GEMV_KSPLIT", "2"}});
}
TEST_P(EmuCudaGemvGroupVariantOpTest, CpAsyncRingOfThreeSlotsMatchesDoubleReference) {
  RunWith({{"JLLM_GEMV_RING", "3"}, {"JLLM_GEMV_BULK", "0"}});
}
TEST_P(EmuCudaGemvGroupVariantOpTest, RegistersSpreadMatchDoubleReference) { RunWith({{"JLLM_GEMV_SPREAD", "1"}}); }

// The prefill matmuls (T > 1) again on the tensor cores (JLLM_GEMM_MMA=1: tf32 mma.sync, the
// emulation gathering the warp's fragments as the hardware does), held to the tf32 bound.
class EmuCudaGemmMmaOpTest : public ::testing::TestWithParam<OpCase> {
 protected:
  void TearDown() override { unsetenv("JLLM_GEMM_MMA"); }
};

TEST_P(EmuCudaGemmMmaOpTest, Tf32MatchesDoubleReference) {
  setenv("JLLM_GEMM_MMA", "1", 1);
  ASSERT_TRUE(cuda::GemmTensorCores());
  auto runner = EmulatedCuda();
  ASSERT_TRUE(runner->PrefillTf32());
  CheckOpCase(GetParam(), *runner);
}

std::vector<OpCase> PrefillMatMulCases() {
  std::vector<OpCase> out;
  for (OpCase& c : AllOpCases()) {
    if (c.max_nmse_tf32 > 0) out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(GemmMma, EmuCudaGemmMmaOpTest, ::testing::ValuesIn(PrefillMatMulCases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

std::vector<OpCase> GemvCases(bool groups_only) {
  std::vector<OpCase> out;
  for (OpCase& c : AllOpCases()) {
    const bool one_token = absl::StrContains(c.name, "_T1_") || absl::EndsWith(c.name, "_T1");
    const bool gemv = absl::StartsWith(c.name, "logits") || (absl::StartsWith(c.name, "matmul") && one_token);
    if (gemv && (!groups_only || absl::StartsWith(c.name, "matmul_group"))) out.push_back(std::move(c));
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(GemvVariants, EmuCudaGemvVariantOpTest, ::testing::ValuesIn(GemvCases(false)),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });
INSTANTIATE_TEST_SUITE_P(GemvVariants, EmuCudaGemvGroupVariantOpTest, ::testing::ValuesIn(GemvCases(true)),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return OpCaseName(info.param); });

}  // namespace
}  // namespace jllm::testing
