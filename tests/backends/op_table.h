// The op table every backend is held to, in the manner of ggml's test-backend-ops: one row per
// (op, shape, types), each run on a backend under test and compared with an independent
// double-precision formula (tests/cpu_ref/test_support.h) under an NMSE bound reasoned in
// op_table.cc. A backend is a column: tests/cpu_ref/op_test.cc (cpu_ref),
// tests/cuda/emu_op_test.cc (the CUDA kernels on the CPU emulation, in CI),
// tests/cuda/gpu_op_test.cc (the CUDA kernels on a GPU).
#pragma once

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend.h"
#include "tests/cpu_ref/test_support.h"

namespace jllm::testing {

using cpu_ref::testing::TestModel;

// A backend under test.
class OpRunner {
 public:
  virtual ~OpRunner() = default;
  virtual std::string name() const = 0;
  // Loads `model`'s graph (its outputs are the values a case reads).
  virtual absl::Status Load(const TestModel& model, int64_t max_context) = 0;
  // One step (Backend::Evaluate semantics); returns the graph outputs' values, in order.
  virtual absl::StatusOr<std::vector<std::vector<float>>> Run(int64_t n_tokens, int64_t pos0,
                                                              std::vector<NamedInput> inputs) = 0;
  // Row `pos` of layer `layer`'s K (which = 0) or V cache as f32; Unimplemented where the
  // backend does not expose it (its appends are then checked through attention).
  virtual absl::StatusOr<std::vector<float>> ReadKvRow(int64_t layer, int which, int64_t pos) = 0;
  // How the backend's one-token matmuls read x (the CUDA GEMV's dp4a paths): 0 f32, 1 int8
  // (cases held to OpCase::max_nmse_x8), 2 int16 as two int8 planes (OpCase::max_nmse_x16).
  virtual int DecodeActivationPlanes() const { return 0; }
  // Whether the backend's prefill matmuls round their operands to tf32 (the CUDA GEMM on the
  // tensor cores; cases held to OpCase::max_nmse_tf32).
  virtual bool PrefillTf32() const { return false; }
};

struct Comparison {
  std::vector<float> got;
  std::vector<double> want;
  std::string skipped;  // why the backend could not run the case (reported, not failed)
};

struct OpCase {
  std::string name;
  double max_nmse;
  std::function<Comparison(std::mt19937&, OpRunner&)> run;
  double max_nmse_x8 = 0;   // > 0: the bound on runners whose decode matmuls quantize x to int8
  double max_nmse_x16 = 0;  // > 0: the same for int16 x
  double max_nmse_tf32 = 0;  // > 0: the bound on runners whose prefill matmuls are tf32
};

std::vector<OpCase> AllOpCases();

// Runs `c` on `runner` and checks it (gtest assertions); a skip is reported with GTEST_SKIP.
void CheckOpCase(const OpCase& c, OpRunner& runner);

// gtest parameter naming and printing.
std::string OpCaseName(const OpCase& c);
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// A runner over any Backend (the kv rows unavailable), for backends without a test hook.
class BackendOpRunner : public OpRunner {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Backend>>(const TestModel&)>;
  BackendOpRunner(std::string name, Factory factory, int decode_activation_planes = 0, bool prefill_tf32 = false)
      : name_(std::move(name)),
        factory_(std::move(factory)),
        x_planes_(decode_activation_planes),
        prefill_tf32_(prefill_tf32) {}
  std::string name() const override { return name_; }
  int DecodeActivationPlanes() const override { return x_planes_; }
  bool PrefillTf32() const override { return prefill_tf32_; }
  absl::Status Load(const TestModel& model, int64_t max_context) override;
  absl::StatusOr<std::vector<std::vector<float>>> Run(int64_t n_tokens, int64_t pos0,
                                                      std::vector<NamedInput> inputs) override;
  absl::StatusOr<std::vector<float>> ReadKvRow(int64_t, int, int64_t) override {
    return absl::UnimplementedError(name_ + " does not expose its KV cache");
  }

 private:
  std::string name_;
  Factory factory_;
  int x_planes_;
  bool prefill_tf32_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<BlobWeightSource> source_;
  std::vector<std::string> outputs_;
};

}  // namespace jllm::testing
