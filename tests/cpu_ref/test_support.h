// Shared pieces of the cpu_ref tests: a graph under construction together with the blob of its
// (quantized) weights, random data, the independent double-precision reference formulas, and
// the NMSE the comparisons use.
//
// The references are written from ir/ops.h and FORMATS.md §5 alone, in double, with naive
// loops; weights enter them through jllm::quant::DequantizeRow (the quant library, tested on
// its own), never through cpu_ref.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu_ref/graph_executor.h"
#include "quant/quant.h"
#include "gtest/gtest.h"
#include "ir/graph.h"

namespace jllm::cpu_ref::testing {

using Matrix = std::vector<double>;  // row-major

// Σ(got − want)² / Σ want²: the normalized mean squared error, as ggml's test-backend-ops.
inline double Nmse(const std::vector<float>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    ref += want[i] * want[i];
  }
  return ref == 0 ? err : err / ref;
}
inline double Nmse(const std::vector<float>& got, const std::vector<float>& want) {
  return Nmse(got, std::vector<double>(want.begin(), want.end()));
}

inline std::vector<float> Random(std::mt19937& rng, size_t n, float stddev = 1.0f,
                                 float mean = 0.0f) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<double> ToDouble(absl::Span<const float> v) {
  return std::vector<double>(v.begin(), v.end());
}

// A graph and its weight blob. Weights are quantized with QuantizeRow at 32-byte aligned
// offsets; Dequantized() gives back what the blob holds, in double, for the references.
class TestModel {
 public:
  explicit TestModel(int64_t n_layer = 1, ir::KvDType kv = ir::KvDType::kF16) {
    ir::ModelConfig& c = graph.config;
    c.n_embd = 256, c.n_layer = n_layer, c.n_head = 4, c.n_head_kv = 2, c.head_dim = 64;
    c.n_ff = 768, c.n_vocab = 1000, c.context_length = 1 << 16;
    graph.kv_dtypes.assign(n_layer, kv);
  }

  ir::WeightId AddWeight(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                         const std::vector<float>& values) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    EXPECT_EQ(static_cast<int64_t>(values.size()), n) << name;
    const int64_t bytes = ir::WeightBytes(type, ne);
    EXPECT_GT(bytes, 0) << name;
    const uint64_t offset = (blob.size() + 31) / 32 * 32;
    blob.resize(offset + bytes);
    EXPECT_TRUE(quant::QuantizeRow(type, values.data(), blob.data() + offset, n).ok()) << name;
    auto id = graph.AddWeight({name, type, std::move(ne), offset, static_cast<uint64_t>(bytes)});
    EXPECT_TRUE(id.ok()) << id.status();
    return id.value_or(-1);
  }
  // A weight of random N(mean, stddev) values.
  ir::WeightId AddRandomWeight(const std::string& name, GgmlType type, std::vector<int64_t> ne,
                               std::mt19937& rng, float stddev = 1.0f, float mean = 0.0f) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return AddWeight(name, type, std::move(ne), Random(rng, n, stddev, mean));
  }

  // The weight's elements as stored (ggml order: row o of a {K, N} matrix is [o·K, o·K+K)).
  Matrix Dequantized(ir::WeightId w) const {
    const ir::WeightRef& ref = graph.weights[w];
    int64_t n = 1;
    for (int64_t d : ref.ne) n *= d;
    std::vector<float> f(n);
    EXPECT_TRUE(quant::DequantizeRow(ref.type, blob.data() + ref.offset, f.data(), n).ok());
    return Matrix(f.begin(), f.end());
  }

  ir::ValueId Input(const std::string& name, ir::DType dtype, std::vector<int64_t> dims) {
    auto v = graph.AddInput(name, {dtype, {std::move(dims)}});
    EXPECT_TRUE(v.ok()) << v.status();
    return v.value_or(-1);
  }
  std::vector<ir::ValueId> Node(ir::OpKind op, std::vector<ir::ValueId> in,
                                std::vector<ir::WeightId> w, ir::Attrs attrs,
                                std::vector<std::string> names) {
    auto out = graph.AddNode(op, std::move(in), std::move(w), std::move(attrs), std::move(names));
    EXPECT_TRUE(out.ok()) << out.status();
    return out.value_or(std::vector<ir::ValueId>(names.size(), -1));
  }
  ir::ValueId Node1(ir::OpKind op, std::vector<ir::ValueId> in, std::vector<ir::WeightId> w,
                    ir::Attrs attrs, const std::string& name) {
    return Node(op, std::move(in), std::move(w), std::move(attrs), {name})[0];
  }

  BlobWeightSource source() const { return BlobWeightSource(blob); }

  std::unique_ptr<GraphExecutor> Executor(int64_t max_context = 256, int n_threads = 2) const {
    auto exec = GraphExecutor::Create(graph, source(), {max_context, n_threads});
    EXPECT_TRUE(exec.ok()) << exec.status();
    return exec.ok() ? std::move(exec).value() : nullptr;
  }

  ir::Graph graph;
  std::vector<uint8_t> blob;
};

inline std::vector<int32_t> Positions(int64_t pos0, int64_t n) {
  std::vector<int32_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(pos0 + i);
  return p;
}

inline std::vector<float> Values(const GraphExecutor& exec, ir::ValueId v) {
  auto s = exec.f32(v);
  return std::vector<float>(s.begin(), s.end());
}

// ---- reference formulas, in double -------------------------------------------------------

// y = x / sqrt(mean(x²) + eps) · gamma, per row of `width`.
inline Matrix RefRmsNorm(const Matrix& x, const Matrix& gamma, double eps, int64_t width) {
  Matrix y(x.size());
  for (size_t r = 0; r < x.size() / width; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < width; ++i) ss += x[r * width + i] * x[r * width + i];
    const double scale = 1.0 / std::sqrt(ss / width + eps);
    for (int64_t i = 0; i < width; ++i) y[r * width + i] = x[r * width + i] * scale * gamma[i];
  }
  return y;
}

// y[t, o] = Σ_i W[o·K + i] · x[t, i].
inline Matrix RefMatMul(const Matrix& w, const Matrix& x, int64_t k, int64_t n) {
  const size_t rows = x.size() / k;
  Matrix y(rows * n, 0.0);
  for (size_t t = 0; t < rows; ++t) {
    for (int64_t o = 0; o < n; ++o) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += w[o * k + i] * x[t * k + i];
      y[t * n + o] = s;
    }
  }
  return y;
}

inline double RefSilu(double g) { return g / (1.0 + std::exp(-g)); }

// NEOX RoPE of every head of every row. The angle of pair i is built as FORMATS.md §5 and ggml
// specify it, in float: θ = p, stepped by powf(base, −2/n_rot) per pair, times freq_scale;
// the rotation itself is done in double.
inline Matrix RefRope(const Matrix& x, const std::vector<int32_t>& pos, int64_t n_head,
                      int64_t head_dim, int64_t n_rot, float base, float freq_scale) {
  Matrix y = x;
  const float step = std::pow(base, -2.0f / static_cast<float>(n_rot));
  for (size_t t = 0; t < pos.size(); ++t) {
    float theta = static_cast<float>(pos[t]);
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const double angle = static_cast<double>(freq_scale * theta);
      theta *= step;
      for (int64_t h = 0; h < n_head; ++h) {
        const size_t base_idx = t * n_head * head_dim + h * head_dim;
        const double a = x[base_idx + i], b = x[base_idx + i + n_rot / 2];
        y[base_idx + i] = a * std::cos(angle) - b * std::sin(angle);
        y[base_idx + i + n_rot / 2] = a * std::sin(angle) + b * std::cos(angle);
      }
    }
  }
  return y;
}

// Causal GQA attention of queries at `pos` over cache rows keys/values [S, Hkv·D].
inline Matrix RefAttention(const Matrix& q, const Matrix& keys, const Matrix& values,
                           const std::vector<int32_t>& pos, int64_t n_head, int64_t n_head_kv,
                           int64_t d, double scale) {
  Matrix out(q.size(), 0.0);
  const int64_t kvw = n_head_kv * d;
  for (size_t t = 0; t < pos.size(); ++t) {
    for (int64_t h = 0; h < n_head; ++h) {
      const int64_t g = h / (n_head / n_head_kv);
      std::vector<double> s(pos[t] + 1);
      double max = -INFINITY;
      for (int64_t j = 0; j <= pos[t]; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < d; ++i) dot += q[t * n_head * d + h * d + i] * keys[j * kvw + g * d + i];
        s[j] = dot * scale;
        max = std::max(max, s[j]);
      }
      double sum = 0;
      for (double& v : s) sum += (v = std::exp(v - max));
      for (int64_t j = 0; j <= pos[t]; ++j) {
        for (int64_t i = 0; i < d; ++i) {
          out[t * n_head * d + h * d + i] += s[j] / sum * values[j * kvw + g * d + i];
        }
      }
    }
  }
  return out;
}

// What the cache holds for rows x [rows, Hkv·D] (ir/types.h): f16 values, or per (row, head)
// int8 with scale d = max|x|/127 stored in f16, q = round(x/d).
inline Matrix RefKvStore(const std::vector<float>& x, ir::KvDType type, int64_t head_dim) {
  Matrix y(x.size());
  if (type == ir::KvDType::kF32) return ToDouble(x);  // exact storage: no rounding at all
  if (type == ir::KvDType::kF16) {
    for (size_t i = 0; i < x.size(); ++i) y[i] = quant::Fp16ToF32(quant::F32ToFp16(x[i]));
    return y;
  }
  for (size_t h0 = 0; h0 < x.size(); h0 += head_dim) {
    double amax = 0;
    for (int64_t i = 0; i < head_dim; ++i) amax = std::max(amax, std::fabs(double{x[h0 + i]}));
    const double d = amax / 127;
    const double d16 = quant::Fp16ToF32(quant::F32ToFp16(static_cast<float>(d)));
    for (int64_t i = 0; i < head_dim; ++i) {
      y[h0 + i] = d == 0 ? 0 : std::round(x[h0 + i] / d) * d16;
    }
  }
  return y;
}

}  // namespace jllm::cpu_ref::testing
