// The sampler's settings, as data: the runtime fills them, every backend samples with them
// (cpu_ref on the host with backends/sampling.h, cuda on the device in kernels/sample.cu, which
// reads this very struct from device memory). Compiled by host C++ and by NVRTC.
//
// Stages, in order (llama.cpp's meaning): the penalties over the last repeat_last_n tokens of
// the context — for each distinct token there, the repetition penalty (a positive logit divided
// by it, a negative one multiplied), then minus frequency_penalty × its count and minus
// presence_penalty (OpenAI's two, over the same window as llama.cpp applies them) —, then top-k, top-p, min-p, temperature, and a draw from a counter-based random
// stream keyed by (seed, position of the token drawn) — so a draw depends only on the seed and
// where it happens, never on how many draws came before or on which backend made it.
// temperature 0 is greedy: the arg-max of the penalized logits (lowest id on ties).
#pragma once

#include "ir/fixed_width.h"

namespace jllm {

struct SamplingParams {
  float temperature = 0.8f;     // 0: greedy
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // 1: off
  float min_p = 0.05f;          // 0: off
  float repeat_penalty = 1.0f;     // 1: off
  float presence_penalty = 0.0f;   // 0: off
  float frequency_penalty = 0.0f;  // 0: off
  int32_t repeat_last_n = 64;      // how many recent tokens the penalties look at
  uint64_t seed = 0;

  bool operator==(const SamplingParams& o) const {
    return temperature == o.temperature && top_k == o.top_k && top_p == o.top_p &&
           min_p == o.min_p && repeat_penalty == o.repeat_penalty &&
           presence_penalty == o.presence_penalty && frequency_penalty == o.frequency_penalty &&
           repeat_last_n == o.repeat_last_n && seed == o.seed;
  }
  // Whether any penalty changes a logit (else the window need not be read).
  bool Penalizes() const {
    return repeat_last_n > 0 && (repeat_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f);
  }
  // A draw that is the arg-max of the raw logits: greedy, and no penalty moves a logit. (The CUDA
  // backend then needs no sampler pass over the row: the logits GEMV draws in its epilogue.)
  bool GreedyWithoutPenalties() const { return !(temperature > 0.0f) && !Penalizes(); }
};

// SplitMix64's finalizer: a bijective 64-bit mix.
inline uint64_t MixBits64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The uniform draw in [0, 1) for the token at context position `position` (53 random bits).
inline double SampleUniform(uint64_t seed, uint64_t position) {
  const uint64_t bits = MixBits64(MixBits64(seed) ^ (position * 0x9E3779B97F4A7C15ull + 1));
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

}  // namespace jllm
