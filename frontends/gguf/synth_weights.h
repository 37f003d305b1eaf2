// Seeded random tensor contents for jllm-synth. Matrices are N(0, 0.02) and norm weights
// N(1, 0.1), quantized with jllm's reference quantizers. Every tensor's bytes depend only on
// (seed, tensor name, type, shape, fill mode): not on tensor order or thread count.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "frontends/gguf/synth_plan.h"

namespace jllm::gguf {

// kExact draws and quantizes every element (≈ 0.1 µs per element for K-quants). kPool quantizes
// a pool of 4096 random 256-element units per type once and fills matrices with seeded random
// picks from it: statistically the same weights, at memcpy speed, for multi-billion-parameter
// presets. kAuto is kExact up to kAutoExactMaxParams parameters, kPool above.
enum class SynthFill { kAuto, kExact, kPool };
inline constexpr int64_t kAutoExactMaxParams = 100'000'000;

struct SynthInit {
  float matrix_std = 0.02f;
  float norm_mean = 1.0f;
  float norm_std = 0.1f;
};

class SynthWeightSource {
 public:
  // Builds the pools a kPool fill needs (one per matrix type of the plan).
  static absl::StatusOr<SynthWeightSource> Create(const SynthPlan& plan, uint64_t seed,
                                                  SynthFill fill, int threads, SynthInit init = {});

  // Writes the bytes of `tensor` (exactly tensor.nbytes()) into dst.
  absl::Status Fill(const SynthTensor& tensor, uint8_t* dst, uint64_t nbytes) const;

  bool pooled() const { return pooled_; }

 private:
  SynthWeightSource() = default;
  absl::Status FillExact(const SynthTensor& tensor, uint8_t* dst) const;
  void FillFromPool(const SynthTensor& tensor, const std::vector<uint8_t>& pool,
                    uint8_t* dst) const;

  uint64_t seed_ = 0;
  bool pooled_ = false;
  int threads_ = 1;
  SynthInit init_;
  std::map<GgmlType, std::vector<uint8_t>> pools_;  // quantized units, by type
};

}  // namespace jllm::gguf
