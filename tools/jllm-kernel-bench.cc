// jllm-kernel-bench: times the quantized GEMV kernels on the GPU and reports achieved bandwidth.
//
// For each kernel, shape and config: compile (NVRTC, cached), check the first rows against the
// CPU dequantize-then-dot, then time back-to-back launches with CUDA events, both from the stream
// and replayed from a CUDA graph (how decode runs). Launches rotate over enough copies of the
// weights that their total is several times the L2, so every launch reads from DRAM. A read-only
// streaming kernel measures the ceiling the GEMVs are compared with.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_library.h"
#include "backends/cuda/cuda_status.h"
#include "backends/cuda/device.h"
#include "backends/cuda/device_buffer.h"
#include "backends/cuda/quant_gemv.h"
#include "backends/cuda/synthetic_blocks.h"
#include "quant/quant.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

struct BenchOptions {
  int iters = 200;
  int reps = 7;
  int warmup = 20;
  int check_rows = 256;
  double l2_multiple = 4.0;
  bool sweep = false;
  bool ptxas = false;
  std::string json_path;
  std::string cubin_dir;
  std::vector<std::string> cases;  // "q4_k:9728x2560[:R=..,NRG=..]"
};

struct BenchCase {
  GgmlType type;
  int64_t rows;
  int64_t cols;
  QuantGemvConfig config;
  bool is_default;
};

struct BenchResult {
  std::string kernel, shape, config;
  bool is_default = false;
  std::string error;  // non-empty: the case did not run
  int64_t bytes = 0;
  int copies = 0;
  unsigned grid = 0;
  int threads = 0;
  double stream_us = 0, graph_us = 0, gbps = 0, ceiling_fraction = 0;
  double check_rel_err = -1;  // max |err| / sum|w x| over the checked rows
  bool check_ok = false;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Both shapes of each kernel that Qwen3-4B decode runs, or the given ones.
absl::StatusOr<std::vector<BenchCase>> Cases(const BenchOptions& options) {
  std::vector<BenchCase> cases;
  auto add = [&](GgmlType type, int64_t rows, int64_t cols, const std::vector<const char*>& extra) {
    cases.push_back({type, rows, cols, QuantGemvSpec::DefaultConfig(type, rows, cols), true});
    if (!options.sweep) return absl::OkStatus();
    for (const char* text : extra) {
      ASSIGN_OR_RETURN(QuantGemvConfig config, QuantGemvConfig::Parse(text));
      cases.push_back({type, rows, cols, config, false});
    }
    return absl::OkStatus();
  };
  if (options.cases.empty()) {
    RETURN_IF_ERROR(add(GgmlType::kQ4_K, 9728, 2560,
                        {"R=2,NRG=8,KS=1", "R=2,NRG=4,KS=1", "R=4,NRG=2,KS=1", "R=4,NRG=8,KS=1",
                         "R=8,NRG=2,KS=1", "R=2,NRG=4,KS=2"}));
    RETURN_IF_ERROR(add(GgmlType::kQ4_K, 2560, 9728,
                        {"R=2,NRG=4,KS=2", "R=2,NRG=2,KS=4", "R=4,NRG=2,KS=4", "R=4,NRG=1,KS=4",
                         "R=1,NRG=4,KS=4", "R=4,NRG=4,KS=1"}));
    RETURN_IF_ERROR(add(GgmlType::kQ6_K, 9728, 2560,
                        {"R=2,NRG=4,KS=2,STAGES=2", "R=2,NRG=8,KS=1,STAGES=3",
                         "R=4,NRG=2,KS=2,STAGES=3", "R=4,NRG=4,KS=1,STAGES=2",
                         "R=2,NRG=2,KS=3,STAGES=4"}));
    RETURN_IF_ERROR(add(GgmlType::kQ6_K, 2560, 9728,
                        {"R=2,NRG=2,KS=5,STAGES=2", "R=4,NRG=1,KS=8,STAGES=3",
                         "R=4,NRG=1,KS=5,STAGES=3", "R=2,NRG=2,KS=4,STAGES=2",
                         "R=2,NRG=4,KS=3,STAGES=2"}));
    return cases;
  }
  for (const std::string& text : options.cases) {
    // TYPE:ROWSxCOLS[:CONFIG]
    const size_t c1 = text.find(':');
    const size_t x = text.find('x', c1 == std::string::npos ? 0 : c1);
    const size_t c2 = text.find(':', c1 == std::string::npos ? 0 : c1 + 1);
    if (c1 == std::string::npos || x == std::string::npos || (c2 != std::string::npos && c2 < x)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--case '", text, "': expected TYPE:ROWSxCOLS[:CONFIG], e.g. q4_k:9728x2560"));
    }
    const std::string type_name = text.substr(0, c1);
    GgmlType type;
    if (type_name == "q4_k" || type_name == "q4_K") {
      type = GgmlType::kQ4_K;
    } else if (type_name == "q6_k" || type_name == "q6_K") {
      type = GgmlType::kQ6_K;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--case '", text, "': type must be q4_k or q6_k"));
    }
    int64_t rows = 0, cols = 0;
    try {
      rows = std::stoll(text.substr(c1 + 1, x - c1 - 1));
      cols = std::stoll(text.substr(x + 1, c2 == std::string::npos ? std::string::npos : c2 - x - 1));
    } catch (const std::exception&) {
      return absl::InvalidArgumentError(absl::StrCat("--case '", text, "': bad ROWSxCOLS"));
    }
    QuantGemvConfig config = QuantGemvSpec::DefaultConfig(type, rows, cols);
    const bool is_default = c2 == std::string::npos;
    if (!is_default) {
      ASSIGN_OR_RETURN(config, QuantGemvConfig::Parse(text.substr(c2 + 1)));
    }
    cases.push_back({type, rows, cols, config, is_default});
  }
  return cases;
}

// Times `launch` as `iters` back-to-back calls between two events, `reps` times; returns the
// median microseconds per call.
template <typename Launch>
absl::StatusOr<double> TimeStream(const BenchOptions& options, cudaStream_t stream, Launch launch) {
  for (int i = 0; i < options.warmup; ++i) RETURN_IF_ERROR(launch(i));
  cudaEvent_t start, stop;
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start), "event");
  JLLM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop), "event");
  std::vector<double> samples;
  absl::Status status;
  for (int rep = 0; rep < options.reps && status.ok(); ++rep) {
    status = CudaStatus(cudaEventRecord(start, stream), "record");
    for (int i = 0; i < options.iters && status.ok(); ++i) status = launch(i);
    if (status.ok()) status = CudaStatus(cudaEventRecord(stop, stream), "record");
    if (status.ok()) status = CudaStatus(cudaEventSynchronize(stop), "kernel run");
    float ms = 0;
    if (status.ok()) status = CudaStatus(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    samples.push_back(1000.0 * ms / options.iters);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  RETURN_IF_ERROR(status);
  return Median(samples);
}

// The same `iters` launches captured once into a CUDA graph and replayed.
template <typename Launch>
absl::StatusOr<double> TimeGraph(const BenchOptions& options, cudaStream_t stream, Launch launch) {
  cudaGraph_t graph = nullptr;
  JLLM_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                            "begin capture");
  absl::Status captured;
  for (int i = 0; i < options.iters && captured.ok(); ++i) captured = launch(i);
  const absl::Status ended = CudaStatus(cudaStreamEndCapture(stream, &graph), "end capture");
  RETURN_IF_ERROR(captured);
  RETURN_IF_ERROR(ended);
  cudaGraphExec_t exec = nullptr;
  absl::Status status = CudaStatus(cudaGraphInstantiate(&exec, graph, 0), "instantiate graph");
  cudaGraphDestroy(graph);
  RETURN_IF_ERROR(status);
  BenchOptions one = options;
  one.iters = 1;  // TimeStream divides by iters: one replay = options.iters launches
  one.warmup = 2;
  auto replay = [&](int) { return CudaStatus(cudaGraphLaunch(exec, stream), "graph launch"); };
  absl::StatusOr<double> us = TimeStream(one, stream, replay);
  cudaGraphExecDestroy(exec);
  if (!us.ok()) return us.status();
  return *us / options.iters;
}

// GB/s of the read-only streaming kernel over a buffer far larger than the L2.
absl::StatusOr<double> MeasureReadCeiling(const DeviceInfo& device, const CubinCache& cache,
                                          const BenchOptions& options, cudaStream_t stream) {
  NvrtcOptions compile;
  compile.arch = device.Arch();
  ASSIGN_OR_RETURN(std::string cubin, cache.GetOrCompile("read_bandwidth.cu", compile));
  ASSIGN_OR_RETURN(CudaLibrary library, CudaLibrary::Load(cubin, "read_bandwidth"));
  ASSIGN_OR_RETURN(cudaKernel_t kernel, library.Kernel("read_bandwidth"));
  const size_t bytes = std::min<size_t>(size_t{1} << 30, static_cast<size_t>(device.global_bytes / 8)) /
                       16 * 16;
  ASSIGN_OR_RETURN(DeviceBuffer src, DeviceBuffer::Allocate(bytes, "read-bandwidth source"));
  JLLM_CUDA_RETURN_IF_ERROR(cudaMemset(src.data(), 0x5A, bytes), "fill");
  JLLM_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "fill");
  const unsigned grid = static_cast<unsigned>(device.sm_count * 8);
  ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(grid * sizeof(uint32_t), "sink"));
  const void* src_ptr = src.data();
  unsigned long long n16 = bytes / 16;
  void* out_ptr = out.data();
  void* args[] = {&src_ptr, &n16, &out_ptr};
  BenchOptions timing = options;
  timing.iters = 10;
  timing.warmup = 2;
  auto launch = [&](int) {
    return LaunchKernel(kernel, dim3(grid), dim3(256), 0, stream, args, "read_bandwidth");
  };
  ASSIGN_OR_RETURN(double us, TimeStream(timing, stream, launch));
  return static_cast<double>(bytes) / us / 1e3;
}

BenchResult RunCase(const BenchCase& c, const DeviceInfo& device, const CubinCache& cache,
                    const BenchOptions& options, double ceiling_gbps, cudaStream_t stream,
                    std::map<std::pair<int, int64_t>, std::vector<uint8_t>>& weights_by_shape) {
  BenchResult result;
  result.kernel = c.type == GgmlType::kQ4_K ? "q4_k_gemv" : "q6_k_gemv";
  result.shape = absl::StrCat(c.rows, "x", c.cols);
  result.config = c.config.ToString();
  result.is_default = c.is_default;
  auto fail = [&](const absl::Status& status) {
    result.error = std::string(status.message());
    return result;
  };

  absl::StatusOr<QuantGemvSpec> spec = QuantGemvSpec::Make(c.type, c.rows, c.cols, c.config);
  if (!spec.ok()) return fail(spec.status());
  if (options.ptxas) {
    NvrtcOptions verbose = spec->CompileOptions(device.Arch());
    verbose.ptxas_verbose = true;
    absl::StatusOr<CompiledCubin> compiled = CompileKernel(spec->SourceName(), verbose);
    if (compiled.ok()) std::cout << spec->ToString() << ":\n" << compiled->log;
  }
  absl::StatusOr<QuantGemv> gemv = QuantGemv::Load(*spec, device, cache);
  if (!gemv.ok()) return fail(gemv.status());
  result.grid = gemv->grid().x;
  result.threads = spec->Threads();
  if (!options.cubin_dir.empty()) {
    absl::StatusOr<std::string> cubin =
        cache.GetOrCompile(spec->SourceName(), spec->CompileOptions(device.Arch()));
    if (cubin.ok()) {
      // File names of letters, digits and '_' only: q4_k_gemv_9728x2560_R4_NRG4_KS1_....cubin
      std::string base;
      for (char ch : absl::StrCat(result.kernel, "_", result.shape, "_", result.config)) {
        if (ch == '=') continue;
        base += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      }
      std::ofstream(absl::StrCat(options.cubin_dir, "/", base, ".cubin"), std::ios::binary)
          .write(cubin->data(), static_cast<long>(cubin->size()));
    }
  }

  // Host weights, shared by every config of a shape.
  std::vector<uint8_t>& w = weights_by_shape[{static_cast<int>(c.type), c.rows * 1000003 + c.cols}];
  if (w.empty()) {
    absl::StatusOr<std::vector<uint8_t>> random = RandomQuantWeights(c.type, c.rows, c.cols, 1234);
    if (!random.ok()) return fail(random.status());
    w = std::move(*random);
  }
  const std::vector<float> x = RandomActivations(c.cols, 99);
  const size_t w_bytes = w.size();
  // Round each copy up to 256 bytes so every copy starts aligned.
  const size_t w_stride = (w_bytes + 255) / 256 * 256;
  const double l2_target = options.l2_multiple * static_cast<double>(device.l2_bytes);
  int copies = std::max(1, static_cast<int>(std::ceil(l2_target / static_cast<double>(w_bytes))));
  copies = std::min<int>(copies, static_cast<int>(std::max<int64_t>(1, (int64_t{2} << 30) / w_stride)));
  result.copies = copies;

  absl::StatusOr<DeviceBuffer> w_dev = DeviceBuffer::Allocate(w_stride * copies, "weight copies");
  absl::StatusOr<DeviceBuffer> x_dev = DeviceBuffer::Allocate(x.size() * sizeof(float), "x");
  absl::StatusOr<DeviceBuffer> y_dev = DeviceBuffer::Allocate(c.rows * sizeof(float), "y");
  if (!w_dev.ok()) return fail(w_dev.status());
  if (!x_dev.ok()) return fail(x_dev.status());
  if (!y_dev.ok()) return fail(y_dev.status());
  for (int k = 0; k < copies; ++k) {
    absl::Status st = w_dev->CopyFromHost(w.data(), w_bytes, k * w_stride);
    if (!st.ok()) return fail(st);
  }
  if (absl::Status st = x_dev->CopyFromHost(x.data(), x.size() * sizeof(float)); !st.ok()) return fail(st);

  // Correctness of the first rows against the CPU (the gpu test checks all rows).
  // The uploads ran on the legacy stream, which a non-blocking stream does not wait for.
  if (absl::Status st = CudaStatus(cudaDeviceSynchronize(), "uploads"); !st.ok()) return fail(st);
  if (absl::Status st =
          CudaStatus(cudaMemsetAsync(y_dev->data(), 0xFF, y_dev->size(), stream), "poison y");
      !st.ok()) {
    return fail(st);
  }
  if (absl::Status st = gemv->Launch(w_dev->data(), x_dev->as<float>(), y_dev->as<float>(), stream);
      !st.ok()) {
    return fail(st);
  }
  if (absl::Status st = CudaStatus(cudaStreamSynchronize(stream), spec->ToString()); !st.ok()) {
    return fail(st);
  }
  const int64_t check_rows = std::min<int64_t>(c.rows, options.check_rows);
  std::vector<float> y(static_cast<size_t>(check_rows)), row(static_cast<size_t>(c.cols));
  if (absl::Status st = y_dev->CopyToHost(y.data(), y.size() * sizeof(float)); !st.ok()) return fail(st);
  const int64_t row_bytes = RowBytes(c.type, c.cols);
  double worst = 0;
  for (int64_t r = 0; r < check_rows; ++r) {
    if (absl::Status st = quant::DequantizeRow(c.type, w.data() + r * row_bytes, row.data(), c.cols);
        !st.ok()) {
      return fail(st);
    }
    double dot = 0, scale = 0;
    for (int64_t i = 0; i < c.cols; ++i) {
      const double p = static_cast<double>(row[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
      dot += p;
      scale += std::fabs(p);
    }
    const double rel = std::fabs(y[static_cast<size_t>(r)] - dot) / scale;
    worst = std::isnan(rel) ? INFINITY : std::max(worst, rel);
  }
  result.check_rel_err = worst;
  result.check_ok = worst <= 2e-5;  // as the gpu test

  const char* w_base = static_cast<const char*>(w_dev->data());
  auto launch = [&](int i) {
    return gemv->Launch(w_base + static_cast<size_t>(i % copies) * w_stride, x_dev->as<float>(),
                        y_dev->as<float>(), stream);
  };
  absl::StatusOr<double> stream_us = TimeStream(options, stream, launch);
  if (!stream_us.ok()) return fail(stream_us.status());
  absl::StatusOr<double> graph_us = TimeGraph(options, stream, launch);
  if (!graph_us.ok()) return fail(graph_us.status());
  result.bytes = static_cast<int64_t>(w_bytes) + c.cols * 4 + c.rows * 4;
  result.stream_us = *stream_us;
  result.graph_us = *graph_us;
  result.gbps = static_cast<double>(result.bytes) / result.graph_us / 1e3;
  result.ceiling_fraction = ceiling_gbps > 0 ? result.gbps / ceiling_gbps : 0;
  return result;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<int>(ch));
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

void WriteJson(const std::string& path, const DeviceInfo& device, double ceiling_gbps,
               const std::vector<BenchResult>& results) {
  std::ofstream out(path);
  out << "{\n  \"device\": " << JsonString(device.name) << ",\n  \"arch\": "
      << JsonString(device.Arch()) << ",\n  \"sm_count\": " << device.sm_count
      << ",\n  \"l2_bytes\": " << device.l2_bytes
      << ",\n  \"read_ceiling_gbps\": " << absl::StrFormat("%.1f", ceiling_gbps)
      << ",\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    out << "    {\"kernel\": " << JsonString(r.kernel) << ", \"shape\": " << JsonString(r.shape)
        << ", \"config\": " << JsonString(r.config)
        << ", \"default\": " << (r.is_default ? "true" : "false");
    if (!r.error.empty()) {
      out << ", \"error\": " << JsonString(r.error);
    } else {
      out << absl::StrFormat(
          ", \"bytes\": %d, \"copies\": %d, \"grid\": %u, \"threads\": %d, \"stream_us\": %.3f, "
          "\"graph_us\": %.3f, \"gbps\": %.1f, \"ceiling_fraction\": %.3f, \"check_rel_err\": %.3g, "
          "\"check_ok\": %s",
          r.bytes, r.copies, r.grid, r.threads, r.stream_us, r.graph_us, r.gbps, r.ceiling_fraction,
          r.check_rel_err, r.check_ok ? "true" : "false");
    }
    out << "}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

int Main(const BenchOptions& options) {
  const DeviceAvailability devices = ProbeDevices();
  if (devices.count == 0) {
    std::cerr << "jllm-kernel-bench: " << devices.reason << "\n";
    return 1;
  }
  absl::StatusOr<DeviceInfo> device = QueryDevice(0);
  if (!device.ok()) {
    std::cerr << "jllm-kernel-bench: " << device.status() << "\n";
    return 1;
  }
  const CubinCache cache = CubinCache::FromEnvironment();
  std::cout << device->ToString() << "\nNVRTC " << NvrtcVersionString() << ", CUBIN cache "
            << (cache.enabled() ? cache.dir() : std::string("off")) << "\n";
  absl::StatusOr<std::vector<BenchCase>> cases = Cases(options);
  if (!cases.ok()) {
    std::cerr << "jllm-kernel-bench: " << cases.status() << "\n";
    return 1;
  }
  cudaStream_t stream = nullptr;
  if (absl::Status st = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
      !st.ok()) {
    std::cerr << "jllm-kernel-bench: " << st << "\n";
    return 1;
  }
  absl::StatusOr<double> ceiling = MeasureReadCeiling(*device, cache, options, stream);
  const double ceiling_gbps = ceiling.ok() ? *ceiling : 0;
  if (ceiling.ok()) {
    std::cout << absl::StrFormat("read ceiling (16-byte streaming loads, 1 GiB): %.0f GB/s\n",
                                 ceiling_gbps);
  } else {
    std::cout << "read ceiling: failed: " << ceiling.status() << "\n";
  }

  std::map<std::pair<int, int64_t>, std::vector<uint8_t>> weights;
  std::vector<BenchResult> results;
  for (const BenchCase& c : *cases) {
    results.push_back(RunCase(c, *device, cache, options, ceiling_gbps, stream, weights));
    const BenchResult& r = results.back();
    if (!r.error.empty()) {
      std::cout << r.kernel << " " << r.shape << " " << r.config << ": ERROR " << r.error << "\n";
    }
  }

  // The table: '*' marks the fastest config of each kernel and shape, 'd' the default.
  std::map<std::string, double> best;
  for (const BenchResult& r : results) {
    if (r.error.empty() && r.check_ok) {
      double& b = best[r.kernel + r.shape];
      if (b == 0 || r.graph_us < b) b = r.graph_us;
    }
  }
  std::cout << "\n"
            << absl::StrFormat("%-10s %-10s %-32s %7s %4s %5s %9s %9s %8s %6s %9s\n", "kernel",
                               "shape", "config", "MB", "cp", "grid", "stream_us", "graph_us",
                               "GB/s", "%ceil", "check");
  bool all_ok = true;
  for (const BenchResult& r : results) {
    const std::string mark = std::string(r.is_default ? "d" : " ") +
                             (r.error.empty() && r.graph_us == best[r.kernel + r.shape] ? "*" : " ");
    if (!r.error.empty()) {
      all_ok = false;
      std::cout << absl::StrFormat("%-10s %-10s %-32s %s ERROR (see above)\n", r.kernel, r.shape,
                                   r.config, mark);
      continue;
    }
    all_ok = all_ok && r.check_ok;
    std::cout << absl::StrFormat("%-10s %-10s %-32s %7.2f %4d %5u %9.2f %9.2f %8.0f %5.0f%% %s %.1e\n",
                                 r.kernel, r.shape, r.config + " " + mark,
                                 static_cast<double>(r.bytes) / 1e6, r.copies, r.grid, r.stream_us,
                                 r.graph_us, r.gbps, 100 * r.ceiling_fraction,
                                 r.check_ok ? "ok" : "BAD", r.check_rel_err);
  }
  std::cout << "MB = bytes read per call (weights + x) and written (y); GB/s from graph_us;\n"
               "%ceil = share of the read ceiling above; cp = weight copies rotated (> L2).\n";
  if (!options.json_path.empty()) {
    WriteJson(options.json_path, *device, ceiling_gbps, results);
    std::cout << "wrote " << options.json_path << "\n";
  }
  cudaStreamDestroy(stream);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace jllm::cuda

int main(int argc, char** argv) {
  jllm::cuda::BenchOptions options;
  CLI::App app{"Times the quantized GEMV kernels on the GPU (achieved GB/s vs a read ceiling)."};
  app.add_option("--iters", options.iters, "launches per timed sample")->check(CLI::Range(1, 100000));
  app.add_option("--reps", options.reps, "timed samples (median reported)")->check(CLI::Range(1, 1000));
  app.add_option("--warmup", options.warmup, "untimed launches first")->check(CLI::Range(0, 100000));
  app.add_option("--check-rows", options.check_rows, "rows checked against the CPU")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--l2-multiple", options.l2_multiple,
                 "weight copies rotated so their total is this many times the L2")
      ->check(CLI::Range(0.0, 64.0));
  app.add_flag("--sweep", options.sweep, "also time alternative launch configs of each kernel");
  app.add_flag("--ptxas", options.ptxas, "print ptxas register / spill report of each config");
  app.add_option("--case", options.cases,
                 "TYPE:ROWSxCOLS[:CONFIG], e.g. q6_k:2560x9728:R=2,NRG=2,KS=5,STAGES=3 (repeatable)");
  app.add_option("--json", options.json_path, "write the results as JSON to this file");
  app.add_option("--dump-cubin", options.cubin_dir, "write each kernel's CUBIN into this directory");
  CLI11_PARSE(app, argc, argv);
  return jllm::cuda::Main(options);
}
