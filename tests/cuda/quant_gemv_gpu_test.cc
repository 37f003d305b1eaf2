// Q4_K / Q6_K GEMV on the GPU against the CPU: dequantize each row with jllm::quant::DequantizeRow
// and dot it with x in double. Skips, with the reason, where no CUDA device is usable.
//
// Tolerance: |y_gpu - y_ref| <= 2e-5 * sum_i |w_i x_i| per row. The kernels accumulate in f32 and
// fold the zero point of the nibbles out of 8- to 16-element partial sums; a CPU emulation of the
// kernels on these shapes stayed below 2e-7 of that scale, while a wrong nibble, scale or column
// mapping moves a row by O(1e-2) or more.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/quant_gemv.h"
#include "backends/cuda/synthetic_blocks.h"
#include "quant/quant.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

constexpr double kRelTolerance = 2e-5;

struct Reference {
  std::vector<double> y;      // sum_i w_i x_i
  std::vector<double> scale;  // sum_i |w_i x_i|
};

Reference CpuReference(GgmlType type, const std::vector<uint8_t>& w, const std::vector<float>& x,
                       int64_t rows, int64_t cols) {
  Reference ref;
  ref.y.resize(static_cast<size_t>(rows));
  ref.scale.resize(static_cast<size_t>(rows));
  const int64_t row_bytes = RowBytes(type, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const absl::Status st = quant::DequantizeRow(type, w.data() + r * row_bytes, row.data(), cols);
    EXPECT_TRUE(st.ok()) << st;
    double dot = 0, scale = 0;
    for (int64_t i = 0; i < cols; ++i) {
      const double p = static_cast<double>(row[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
      dot += p;
      scale += std::fabs(p);
    }
    ref.y[static_cast<size_t>(r)] = dot;
    ref.scale[static_cast<size_t>(r)] = scale;
  }
  return ref;
}

struct GemvCase {
  GgmlType type;
  int64_t rows;
  int64_t cols;
  const char* config;  // "" = the shape's default
};
void PrintTo(const GemvCase& c, std::ostream* os) {
  *os << GgmlTypeName(c.type) << " " << c.rows << "x" << c.cols << " " << c.config;
}

std::string CaseName(const ::testing::TestParamInfo<GemvCase>& info) {
  std::string name = std::string(info.param.type == GgmlType::kQ4_K ? "Q4_K_" : "Q6_K_") +
                     std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
  std::string config = info.param.config;
  if (!config.empty()) name += "_";
  for (char ch : config) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

class QuantGemvGpu : public ::testing::TestWithParam<GemvCase> {
 protected:
  void SetUp() override {
    const DeviceAvailability devices = ProbeDevices();
    if (devices.count == 0) GTEST_SKIP() << "GPU test skipped: " << devices.reason;
    auto info = QueryDevice(0);
    ASSERT_TRUE(info.ok()) << info.status();
    device_ = *info;
  }
  DeviceInfo device_;
};

TEST_P(QuantGemvGpu, MatchesCpuDequantizeThenDot) {
  const GemvCase& c = GetParam();
  QuantGemvConfig config = QuantGemvSpec::DefaultConfig(c.type, c.rows, c.cols);
  if (*c.config != '\0') {
    auto parsed = QuantGemvConfig::Parse(c.config);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    config = *parsed;
  }
  auto spec = QuantGemvSpec::Make(c.type, c.rows, c.cols, config);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto gemv = QuantGemv::Load(*spec, device_, CubinCache::FromEnvironment());
  ASSERT_TRUE(gemv.ok()) << gemv.status();

  auto w = RandomQuantWeights(c.type, c.rows, c.cols, /*seed=*/c.rows * 31 + c.cols);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<float> x = RandomActivations(c.cols, /*seed=*/c.cols + 7);
  const Reference ref = CpuReference(c.type, *w, x, c.rows, c.cols);

  auto w_dev = DeviceBuffer::Allocate(w->size(), "weights");
  auto x_dev = DeviceBuffer::Allocate(x.size() * sizeof(float), "x");
  auto y_dev = DeviceBuffer::Allocate(static_cast<size_t>(c.rows) * sizeof(float), "y");
  ASSERT_TRUE(w_dev.ok() && x_dev.ok() && y_dev.ok());
  ASSERT_TRUE(w_dev->CopyFromHost(w->data(), w->size()).ok());
  ASSERT_TRUE(x_dev->CopyFromHost(x.data(), x.size() * sizeof(float)).ok());
  // Poison y with NaN bytes: a row the kernel fails to write cannot pass.
  ASSERT_TRUE(CudaStatus(cudaMemset(y_dev->data(), 0xFF, y_dev->size()), "poison y").ok());

  ASSERT_TRUE(gemv->Launch(w_dev->data(), x_dev->as<float>(), y_dev->as<float>(), nullptr).ok());
  const absl::Status synced = CudaStatus(cudaDeviceSynchronize(), spec->ToString());
  ASSERT_TRUE(synced.ok()) << synced;

  std::vector<float> y(static_cast<size_t>(c.rows));
  ASSERT_TRUE(y_dev->CopyToHost(y.data(), y.size() * sizeof(float)).ok());
  int bad = 0;
  double worst = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    const size_t i = static_cast<size_t>(r);
    const double err = std::fabs(static_cast<double>(y[i]) - ref.y[i]);
    const double rel = err / ref.scale[i];
    if (!(rel <= kRelTolerance)) {  // also catches NaN
      if (++bad <= 5) {
        ADD_FAILURE() << spec->ToString() << " row " << r << ": gpu " << y[i] << " cpu " << ref.y[i]
                      << " (|err| / sum|w x| = " << rel << ")";
      }
    }
    if (rel > worst || std::isnan(rel)) worst = rel;
  }
  EXPECT_EQ(bad, 0) << bad << " of " << c.rows << " rows out of tolerance";
  std::cout << spec->ToString() << ": worst |err| / sum|w x| = " << worst << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Qwen3_4B, QuantGemvGpu,
    ::testing::Values(
        // The shapes of Qwen3-4B's ffn_gate/up and ffn_down, with their default configs.
        GemvCase{GgmlType::kQ4_K, 9728, 2560, ""}, GemvCase{GgmlType::kQ4_K, 2560, 9728, ""},
        GemvCase{GgmlType::kQ6_K, 9728, 2560, ""}, GemvCase{GgmlType::kQ6_K, 2560, 9728, ""},
        // Other splits: columns across warps, one row per warp, a 2-deep ring, capped registers.
        GemvCase{GgmlType::kQ4_K, 9728, 2560, "R=2,NRG=8,KS=2"},
        GemvCase{GgmlType::kQ4_K, 2560, 9728, "R=1,NRG=4,KS=4,MINB=2"},
        GemvCase{GgmlType::kQ6_K, 2560, 9728, "R=4,NRG=1,KS=8,STAGES=2"},
        GemvCase{GgmlType::kQ6_K, 9728, 2560, "R=2,NRG=8,KS=1,STAGES=4"},
        // Ragged: rows not a multiple of the tile, so the last tile is partial (and, for Q6_K,
        // the tensor's byte size is not a multiple of 16).
        GemvCase{GgmlType::kQ4_K, 37, 2560, ""}, GemvCase{GgmlType::kQ6_K, 37, 2560, ""},
        GemvCase{GgmlType::kQ6_K, 101, 512, "R=2,NRG=2,KS=1,STAGES=2"}),
    CaseName);

}  // namespace
}  // namespace jllm::cuda
