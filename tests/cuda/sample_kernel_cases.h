// The device sampler (kernels/sample.cu) against the host reference (backends/sampling.h) on
// any DeviceApi: for random rows of logits — peaked and flat, with ties, NaN and -inf — and
// every stage switched on and off, the token the kernel draws must be the reference's, and the
// step state must advance. Shared by the emulated (cpu) and the GPU test.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/exec/device_api.h"
#include "backends/cuda/kernels/kernel_args.h"
#include "backends/cuda/kernels/launch_geometry.h"
#include "backends/sampling.h"
#include "gtest/gtest.h"

namespace jllm::cuda::testing {

inline KernelSpec SampleSpec(int64_t vocab) {
  KernelSpec s;
  s.label = "sample";
  s.source = "sample.cu";
  s.kernel = "sample";
  s.defines = "JLLM_VOCAB=" + std::to_string(vocab);
  s.threads = geometry::kSampleThreads;
  return s;
}

// Device buffers for one vocabulary, reused across draws (the stamps persist, as in a session).
class DeviceSampler {
 public:
  // `ctas`: the launch's grid (the lowering's JLLM_SAMPLE_CTAS).
  DeviceSampler(DeviceApi& dev, int64_t vocab, int64_t max_ctx, unsigned ctas = geometry::kSampleCtas)
      : dev_(dev), vocab_(vocab), ctas_(ctas) {
    auto k = dev.LoadKernel(SampleSpec(vocab), "");
    EXPECT_TRUE(k.ok()) << k.status();
    kernel_ = k.value_or(-1);
    logits_ = Alloc(vocab * 4);
    work_ = Alloc(vocab * 4);
    weights_ = Alloc(vocab * 8);
    stamps_ = Alloc((vocab + geometry::kSampleStampsExtra) * 4);
    ctx_ = Alloc(max_ctx * 4);
    params_ = Alloc(sizeof(SamplingParams));
    state_ = Alloc(sizeof(StepState));
    EXPECT_TRUE(dev.Fill(stamps_, 0, (vocab + geometry::kSampleStampsExtra) * 4).ok());
    EXPECT_TRUE(dev.Fill(state_, 0, sizeof(StepState)).ok());
  }
  ~DeviceSampler() {
    for (void* p : owned_) dev_.Free(p);
  }

  // The token drawn from `logits` after context `ctx` (the token at position i is ctx[i]; the
  // logits are those of the last), with `params`.
  int32_t Draw(const std::vector<float>& logits, const std::vector<int32_t>& ctx, const SamplingParams& p) {
    EXPECT_TRUE(dev_.CopyToDevice(logits_, logits.data(), vocab_ * 4).ok());
    EXPECT_TRUE(dev_.CopyToDevice(ctx_, ctx.data(), ctx.size() * 4).ok());
    EXPECT_TRUE(dev_.CopyToDevice(params_, &p, sizeof(p)).ok());
    StepState s{};
    EXPECT_TRUE(dev_.CopyToHost(&s, state_, sizeof(s)).ok());
    EXPECT_TRUE(dev_.Synchronize("reading the state").ok());
    const unsigned serial = s.serial;
    s.token = ctx.back();
    s.pos = static_cast<int>(ctx.size()) - 1;
    EXPECT_TRUE(dev_.CopyToDevice(state_, &s, sizeof(s)).ok());
    SampleArgs a{};
    a.logits = static_cast<const float*>(logits_);
    a.work = static_cast<float*>(work_);
    a.weights = static_cast<double*>(weights_);
    a.stamps = static_cast<unsigned*>(stamps_);
    a.ctx_tokens = static_cast<const int*>(ctx_);
    a.params = params_;
    a.state = static_cast<StepState*>(state_);
    EXPECT_TRUE(dev_.Launch(kernel_, {ctas_, 1, 1}, {geometry::kSampleThreads, 1, 1}, 0, &a, sizeof(a)).ok());
    EXPECT_TRUE(dev_.CopyToHost(&s, state_, sizeof(s)).ok());
    const absl::Status st = dev_.Synchronize("sampling");
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(s.pos, static_cast<int>(ctx.size())) << "the state advances to the drawn token";
    EXPECT_EQ(s.serial, serial + 1);
    return s.token;
  }

 private:
  void* Alloc(size_t bytes) {
    auto p = dev_.Allocate(bytes, "sampler test");
    EXPECT_TRUE(p.ok()) << p.status();
    owned_.push_back(p.value_or(nullptr));
    return owned_.back();
  }
  DeviceApi& dev_;
  int64_t vocab_;
  unsigned ctas_;
  KernelHandle kernel_ = -1;
  void *logits_, *work_, *weights_, *stamps_, *ctx_, *params_, *state_;
  std::vector<void*> owned_;
};

struct SampleCase {
  std::string name;
  SamplingParams params;
};

inline std::vector<SampleCase> SampleCases() {
  auto p = [](float t, int k, float top_p, float min_p, float pen, int last_n) {
    SamplingParams s;
    s.temperature = t, s.top_k = k, s.top_p = top_p, s.min_p = min_p, s.repeat_penalty = pen;
    s.repeat_last_n = last_n;
    return s;
  };
  auto with_pf = [](SamplingParams s, float presence, float frequency) {
    s.presence_penalty = presence, s.frequency_penalty = frequency;
    return s;
  };
  return {
      {"greedy", p(0, 40, 0.95f, 0.05f, 1, 64)},
      {"greedy_penalty", p(0, 40, 0.95f, 0.05f, 1.5f, 16)},
      {"defaults", p(0.8f, 40, 0.95f, 0.05f, 1, 64)},
      {"qwen_thinking", p(0.6f, 20, 0.95f, 0, 1, 64)},
      {"top_k_only", p(1, 5, 1, 0, 1, 64)},
      {"top_p_only", p(1, 0, 0.9f, 0, 1, 64)},
      {"min_p_only", p(1.3f, 0, 1, 0.1f, 1, 64)},
      {"everything_off_hot", p(2, 0, 1, 0, 1, 64)},
      {"penalty_and_all", p(0.7f, 30, 0.8f, 0.02f, 1.3f, 8)},
      // OpenAI's penalties: a repeated token's count decides (the odd draws repeat one token).
      {"greedy_presence", with_pf(p(0, 40, 0.95f, 0.05f, 1, 64), 2.0f, 0)},  // decides the top tie
      {"greedy_frequency", with_pf(p(0, 40, 0.95f, 0.05f, 1, 64), 0, 0.9f)},
      {"greedy_presence_frequency", with_pf(p(0, 40, 0.95f, 0.05f, 1, 32), 0.5f, 0.7f)},
      {"presence_frequency_and_all", with_pf(p(0.9f, 30, 0.9f, 0.02f, 1.2f, 16), -0.4f, 1.1f)},
  };
}

// Runs every case on rows of `vocab` logits, `draws` draws each, against SampleToken.
inline void CheckDeviceSamplerMatchesReference(DeviceApi& dev, int64_t vocab, int draws,
                                               unsigned ctas = geometry::kSampleCtas) {
  DeviceSampler sampler(dev, vocab, 256, ctas);
  std::mt19937 rng(1234);
  for (const SampleCase& c : SampleCases()) {
    SCOPED_TRACE(c.name);
    for (int i = 0; i < draws; ++i) {
      SamplingParams params = c.params;
      params.seed = rng();
      // Peaked rows (a trained model's) and flat ones (random weights'), with ties and masks.
      const float spread = i % 2 == 0 ? 4.0f : 0.3f;
      std::normal_distribution<float> dist(0.0f, spread);
      std::vector<float> logits(vocab);
      for (float& l : logits) l = dist(rng);
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
      logits[pick(rng)] = logits[pick(rng)];  // a tie
      if (i % 3 == 0) logits[pick(rng)] = NAN;
      if (i % 4 == 0) logits[pick(rng)] = -INFINITY;
      const int32_t best = pick(rng);
      if (i % 5 == 0) logits[best] = logits[pick(rng)] = 30.0f;  // a tie at the top
      std::vector<int32_t> ctx(20 + i % 37);
      for (int32_t& t : ctx) t = i % 2 == 0 ? pick(rng) : best;  // repeats: the penalty dedupes
      if (i % 4 == 3) {
        // best twice as often as a close rival: with a frequency penalty the counts decide.
        const int32_t rival = pick(rng);
        logits[best] = 30.0f, logits[rival] = 29.5f;
        for (size_t j = 0; j < ctx.size(); j += 3) ctx[j] = rival;
      }
      const int64_t n = static_cast<int64_t>(ctx.size());
      const int64_t first = std::max<int64_t>(0, n - std::max(params.repeat_last_n, 0));
      const std::vector<int32_t> recent(ctx.begin() + first, ctx.end());
      const int32_t want = SampleToken(logits, recent, params, n);
      EXPECT_EQ(sampler.Draw(logits, ctx, params), want) << "draw " << i;
    }
  }
}

}  // namespace jllm::cuda::testing
