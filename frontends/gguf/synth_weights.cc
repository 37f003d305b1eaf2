#include "frontends/gguf/synth_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <numbers>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "quant/quant.h"

namespace jllm::gguf {
namespace {

constexpr int64_t kUnit = kQK_K;             // pool unit: 256 elements, whole blocks of any type
constexpr int64_t kPoolUnits = 4096;         // 1 Mi random values per pool
constexpr int64_t kExactChunk = 64 * kUnit;  // elements per independently seeded exact chunk
constexpr int64_t kPickChunk = 4096;         // pool units per independently seeded pick chunk

uint64_t Mix(uint64_t a, uint64_t b) {
  // splitmix64's finaliser over a combination of both inputs.
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t HashName(std::string_view s) {  // FNV-1a
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// splitmix64 stream with Box-Muller normals: simple, fast, and the same on every platform
// (std::normal_distribution is not specified bit for bit).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform01Open() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1p-53; }
  double Normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(Uniform01Open()));
    const double a = 2.0 * std::numbers::pi * Uniform01Open();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// Runs fn(i) for i in [0, n) on up to `threads` threads; returns the first error.
absl::Status ParallelFor(int64_t n, int threads, const std::function<absl::Status(int64_t)>& fn) {
  const int t = static_cast<int>(std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1)));
  std::atomic<int64_t> next{0};
  std::mutex mu;
  absl::Status first_error;
  auto worker = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      absl::Status s = fn(i);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first_error.ok()) first_error = std::move(s);
        next.store(n);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int k = 1; k < t; ++k) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  return first_error;
}

// Draws `n` values for chunk `chunk` of the stream `key` and quantizes them into dst.
absl::Status DrawChunk(uint64_t key, int64_t chunk, int64_t n, float mean, float stddev,
                       GgmlType type, uint8_t* dst) {
  Rng rng(Mix(key, static_cast<uint64_t>(chunk)));
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(mean + stddev * rng.Normal());
  return quant::QuantizeRow(type, values.data(), dst, n);
}

// Fills `n_elements` of `type` at dst from the stream `key`, in parallel chunks.
absl::Status DrawTensor(uint64_t key, int64_t n_elements, float mean, float stddev, GgmlType type,
                        int threads, uint8_t* dst) {
  const int64_t n_chunks = (n_elements + kExactChunk - 1) / kExactChunk;
  const int64_t chunk_bytes = RowBytes(type, kExactChunk);
  return ParallelFor(n_chunks, threads, [&](int64_t c) {
    const int64_t n = std::min(kExactChunk, n_elements - c * kExactChunk);
    return DrawChunk(key, c, n, mean, stddev, type, dst + c * chunk_bytes);
  });
}

}  // namespace

absl::StatusOr<SynthWeightSource> SynthWeightSource::Create(const SynthPlan& plan, uint64_t seed,
                                                            SynthFill fill, int threads,
                                                            SynthInit init) {
  SynthWeightSource src;
  src.seed_ = seed;
  src.threads_ = std::max(1, threads);
  src.init_ = init;
  src.pooled_ = fill == SynthFill::kPool ||
                (fill == SynthFill::kAuto && plan.n_params() > kAutoExactMaxParams);
  if (!src.pooled_) return src;
  for (const SynthTensor& t : plan.tensors) {
    if (t.is_norm || src.pools_.contains(t.type)) continue;
    std::vector<uint8_t> pool(static_cast<size_t>(RowBytes(t.type, kUnit * kPoolUnits)));
    const uint64_t key = Mix(seed, HashName(absl::StrCat("pool:", static_cast<uint32_t>(t.type))));
    if (absl::Status s = DrawTensor(key, kUnit * kPoolUnits, 0.0f, init.matrix_std, t.type,
                                    src.threads_, pool.data());
        !s.ok()) {
      return s;
    }
    src.pools_.emplace(t.type, std::move(pool));
  }
  return src;
}

absl::Status SynthWeightSource::Fill(const SynthTensor& tensor, uint8_t* dst,
                                     uint64_t nbytes) const {
  if (nbytes != tensor.nbytes()) {
    return absl::InternalError(absl::StrCat("tensor '", tensor.name, "': asked for ", nbytes,
                                            " bytes, its shape needs ", tensor.nbytes()));
  }
  const auto pool = pools_.find(tensor.type);
  if (pooled_ && !tensor.is_norm && pool != pools_.end()) {
    FillFromPool(tensor, pool->second, dst);
    return absl::OkStatus();
  }
  return FillExact(tensor, dst);
}

absl::Status SynthWeightSource::FillExact(const SynthTensor& tensor, uint8_t* dst) const {
  const float mean = tensor.is_norm ? init_.norm_mean : 0.0f;
  const float stddev = tensor.is_norm ? init_.norm_std : init_.matrix_std;
  const uint64_t key = Mix(seed_, HashName(tensor.name));
  absl::Status s = DrawTensor(key, tensor.n_elements(), mean, stddev, tensor.type, threads_, dst);
  if (!s.ok())
    return absl::InternalError(absl::StrCat("tensor '", tensor.name, "': ", s.message()));
  return absl::OkStatus();
}

void SynthWeightSource::FillFromPool(const SynthTensor& tensor, const std::vector<uint8_t>& pool,
                                     uint8_t* dst) const {
  const int64_t n_elements = tensor.n_elements();
  const int64_t unit_bytes = RowBytes(tensor.type, kUnit);
  const int64_t n_units = (n_elements + kUnit - 1) / kUnit;  // the last may be partial
  const int64_t n_chunks = (n_units + kPickChunk - 1) / kPickChunk;
  const uint64_t key = Mix(seed_ ^ 0x5EED, HashName(tensor.name));
  (void)ParallelFor(n_chunks, threads_, [&](int64_t c) {
    Rng rng(Mix(key, static_cast<uint64_t>(c)));
    const int64_t end = std::min(n_units, (c + 1) * kPickChunk);
    for (int64_t u = c * kPickChunk; u < end; ++u) {
      const int64_t elems = std::min(kUnit, n_elements - u * kUnit);
      const uint8_t* from =
          pool.data() + static_cast<int64_t>(rng.Next() % kPoolUnits) * unit_bytes;
      std::memcpy(dst + u * unit_bytes, from, static_cast<size_t>(RowBytes(tensor.type, elems)));
    }
    return absl::OkStatus();
  });
}

}  // namespace jllm::gguf
