// NVRTC path without a GPU: every GEMV kernel of the 4B shapes compiles to a CUBIN for the
// first targets (sm_87 Jetson Orin, sm_90 H200); compile errors come back with the NVRTC log.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "backends/cuda/nvrtc/kernel_sources.h"
#include "backends/cuda/nvrtc/nvrtc_compiler.h"
#include "backends/cuda/quant_gemv.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// e_machine of an ELF image (offset 18, little-endian u16); EM_CUDA is 190.
uint16_t ElfMachine(const std::string& image) {
  uint16_t machine = 0;
  if (image.size() >= 20) std::memcpy(&machine, image.data() + 18, sizeof(machine));
  return machine;
}

TEST(KernelSources, EmbeddedTextMatchesTheFilesOnDisk) {
  for (const char* name : {"q4_k_gemv.cu", "q6_k_gemv.cu", "read_bandwidth.cu", "jllm_common.cuh"}) {
    SCOPED_TRACE(name);
    auto text = FindKernelSource(name);
    ASSERT_TRUE(text.ok()) << text.status();
    const std::string on_disk =
        ReadFile(std::string(JLLM_SOURCE_DIR) + "/backends/cuda/kernels/" + name);
    ASSERT_FALSE(on_disk.empty());
    EXPECT_EQ(std::string(*text), on_disk);
  }
}

TEST(KernelSources, UnknownNameListsTheKnownOnes) {
  auto text = FindKernelSource("no_such_kernel.cu");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(text.status().message()), HasSubstr("q4_k_gemv.cu"));
}

TEST(Nvrtc, RejectsArchitecturesTheKernelsCannotUse) {
  EXPECT_TRUE(ValidateArch("sm_87").ok());
  EXPECT_TRUE(ValidateArch("sm_90").ok());
  EXPECT_TRUE(ValidateArch("sm_90a").ok());
  EXPECT_FALSE(ValidateArch("sm_75").ok());
  EXPECT_FALSE(ValidateArch("compute_90").ok());
  EXPECT_FALSE(ValidateArch("sm_9").ok());
  EXPECT_FALSE(ValidateArch("").ok());
}

TEST(Nvrtc, CompileErrorCarriesTheLog) {
  NvrtcOptions options;
  options.arch = "sm_90";
  auto compiled = CompileSource("broken.cu", "__global__ void k() { undeclared_name = 1; }\n", {},
                                options);
  ASSERT_FALSE(compiled.ok());
  const std::string message(compiled.status().message());
  EXPECT_THAT(message, HasSubstr("broken.cu"));
  EXPECT_THAT(message, HasSubstr("undeclared_name"));  // from the NVRTC log
}

TEST(Nvrtc, MissingShapeConstantIsACompileError) {
  NvrtcOptions options;
  options.arch = "sm_87";
  auto compiled = CompileKernel("q4_k_gemv.cu", options);  // no -DJLLM_ROWS etc.
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("JLLM_ROWS"));
}

TEST(Nvrtc, ReadBandwidthProbeCompiles) {
  NvrtcOptions options;
  options.arch = "sm_90";
  auto compiled = CompileKernel("read_bandwidth.cu", options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_TRUE(LooksLikeCubin(compiled->cubin));
}

struct GemvCase {
  GgmlType type;
  int64_t rows;
  int64_t cols;
  const char* arch;
};
void PrintTo(const GemvCase& c, std::ostream* os) {
  *os << GgmlTypeName(c.type) << " " << c.rows << "x" << c.cols << " " << c.arch;
}

class GemvCompiles : public ::testing::TestWithParam<GemvCase> {};

TEST_P(GemvCompiles, ToAnElfCubinForTheArch) {
  const GemvCase& c = GetParam();
  auto spec = QuantGemvSpec::Make(c.type, c.rows, c.cols);
  ASSERT_TRUE(spec.ok()) << spec.status();
  NvrtcOptions options = spec->CompileOptions(c.arch);
  options.ptxas_verbose = true;
  auto compiled = CompileKernel(spec->SourceName(), options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GT(compiled->cubin.size(), 1000u);
  EXPECT_TRUE(LooksLikeCubin(compiled->cubin));
  EXPECT_EQ(ElfMachine(compiled->cubin), 190) << "not a CUDA ELF (EM_CUDA)";
  // ptxas names the entry point it compiled in its report.
  EXPECT_THAT(compiled->log, HasSubstr(spec->KernelName()));
  std::cout << spec->ToString() << " " << c.arch << ":\n" << compiled->log << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Qwen3_4B, GemvCompiles,
    ::testing::Values(GemvCase{GgmlType::kQ4_K, 9728, 2560, "sm_87"},
                      GemvCase{GgmlType::kQ4_K, 9728, 2560, "sm_90"},
                      GemvCase{GgmlType::kQ4_K, 2560, 9728, "sm_87"},
                      GemvCase{GgmlType::kQ4_K, 2560, 9728, "sm_90"},
                      GemvCase{GgmlType::kQ6_K, 9728, 2560, "sm_87"},
                      GemvCase{GgmlType::kQ6_K, 9728, 2560, "sm_90"},
                      GemvCase{GgmlType::kQ6_K, 2560, 9728, "sm_87"},
                      GemvCase{GgmlType::kQ6_K, 2560, 9728, "sm_90"}),
    [](const ::testing::TestParamInfo<GemvCase>& info) {
      return std::string(info.param.type == GgmlType::kQ4_K ? "Q4_K_" : "Q6_K_") +
             std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols) + "_" +
             info.param.arch;
    });

}  // namespace
}  // namespace jllm::cuda
