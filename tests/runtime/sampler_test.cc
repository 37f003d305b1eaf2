// The sampler: each stage's mask and arithmetic against hand-computed values, the order of the
// stages, greedy, and seeded determinism.
#include "runtime/sampler.h"

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jllm::runtime {
namespace {

using ::testing::ElementsAre;

std::vector<int32_t> Ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> ids;
  for (const auto& x : c) ids.push_back(x.id);
  return ids;
}

// Logits whose softmax is exactly `p` (up to rounding): log p.
std::vector<float> LogitsOf(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

SamplerOptions AllOff(float temperature = 1.0f) {
  SamplerOptions o;
  o.temperature = temperature;
  o.top_k = 0;
  o.top_p = 1.0f;
  o.min_p = 0.0f;
  o.repeat_penalty = 1.0f;
  return o;
}

SamplerOptions Penalties(float repeat, float presence, float frequency) {
  SamplerOptions o;
  o.repeat_penalty = repeat, o.presence_penalty = presence, o.frequency_penalty = frequency;
  return o;
}

TEST(RepetitionPenalty, DividesPositiveAndMultipliesNegativeLogitsOncePerToken) {
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f, 0.0f};
  // Token 1 appears twice but is penalized once; 4 has logit 0 (stays 0); 7 is out of range.
  const std::vector<int32_t> recent = {0, 1, 1, 4, 7, -1};
  ApplyPenalties(absl::MakeSpan(l), recent, Penalties(2.0f, 0, 0));
  EXPECT_THAT(l, ElementsAre(1.0f, -4.0f, 1.0f, 0.5f, 0.0f));

  std::vector<float> same = {3.0f, -1.0f};
  ApplyPenalties(absl::MakeSpan(same), std::vector<int32_t>{0, 1}, Penalties(1.0f, 0, 0));
  EXPECT_THAT(same, ElementsAre(3.0f, -1.0f));
}

TEST(PresenceAndFrequencyPenalties, SubtractOncePerTokenAndOncePerOccurrence) {
  // Counts in the window: token 0 once, 1 three times, 3 twice; 2 and 4 absent; 9 out of range.
  const std::vector<int32_t> recent = {1, 0, 1, 3, 1, 3, 9, -2};
  std::vector<float> l = {2.0f, -2.0f, 1.0f, 0.5f, 4.0f};
  ApplyPenalties(absl::MakeSpan(l), recent, Penalties(1.0f, 0.5f, 0.25f));
  // 2 - (1·0.25 + 0.5), -2 - (3·0.25 + 0.5), 1, 0.5 - (2·0.25 + 0.5), 4.
  EXPECT_THAT(l, ElementsAre(1.25f, -3.25f, 1.0f, -0.5f, 4.0f));

  // With the repetition penalty too: first divided (or multiplied), then subtracted.
  std::vector<float> both = {2.0f, -2.0f, 1.0f, 0.5f, 4.0f};
  ApplyPenalties(absl::MakeSpan(both), recent, Penalties(2.0f, -1.0f, 1.0f));
  // 2/2 - (1 - 1), -2·2 - (3 - 1), 1, 0.5/2 - (2 - 1), 4.
  EXPECT_THAT(both, ElementsAre(1.0f, -6.0f, 1.0f, -0.75f, 4.0f));
}

TEST(PresenceAndFrequencyPenalties, ChangeTheGreedyToken) {
  SamplerOptions o = Penalties(1.0f, 0.0f, 1.0f);
  o.temperature = 0;
  const std::vector<float> l = {5.0f, 4.5f, 1.0f};
  EXPECT_EQ(SampleToken(l, std::vector<int32_t>{}, o, 0), 0);
  EXPECT_EQ(SampleToken(l, std::vector<int32_t>{0}, o, 1), 1);  // 5 - 1 < 4.5
  o = Penalties(1.0f, 0.4f, 0.0f);
  o.temperature = 0;
  EXPECT_EQ(SampleToken(l, std::vector<int32_t>{0, 0, 0}, o, 3), 0);  // 5 - 0.4 > 4.5: once
  o = Penalties(1.0f, 0.6f, 0.0f);
  o.temperature = 0;
  EXPECT_EQ(SampleToken(l, std::vector<int32_t>{0}, o, 1), 1);  // 5 - 0.6 < 4.5
}

TEST(Candidates, SortedByLogitThenId) {
  const std::vector<float> l = {1.0f, 3.0f, 3.0f, -1.0f, 2.0f, NAN};
  EXPECT_THAT(Ids(SortedCandidates(l)), ElementsAre(1, 2, 4, 0, 3, 5));
  EXPECT_THAT(Ids(SortedCandidates(l, 3)), ElementsAre(1, 2, 4));  // partial sort: same prefix
}

TEST(TopK, KeepsTheKBest) {
  auto c = SortedCandidates(std::vector<float>{1, 4, 3, 2});
  KeepTopK(c, 2);
  EXPECT_THAT(Ids(c), ElementsAre(1, 2));
  auto all = SortedCandidates(std::vector<float>{1, 4, 3, 2});
  KeepTopK(all, 0);
  EXPECT_EQ(all.size(), 4u);
  KeepTopK(all, 10);
  EXPECT_EQ(all.size(), 4u);
}

TEST(TopP, KeepsTheShortestPrefixReachingTheMass) {
  // p = 0.5, 0.3, 0.15, 0.05: cumulative 0.5, 0.8, 0.95, 1.0.
  const auto logits = LogitsOf({0.15, 0.5, 0.05, 0.3});  // ids: 1 (0.5), 3 (0.3), 0, 2
  auto c = SortedCandidates(logits);
  KeepTopP(c, 0.75f);
  EXPECT_THAT(Ids(c), ElementsAre(1, 3));
  c = SortedCandidates(logits);
  KeepTopP(c, 0.9f);
  EXPECT_THAT(Ids(c), ElementsAre(1, 3, 0));
  c = SortedCandidates(logits);
  KeepTopP(c, 0.3f);
  EXPECT_THAT(Ids(c), ElementsAre(1));  // at least one
  c = SortedCandidates(logits);
  KeepTopP(c, 1.0f);
  EXPECT_EQ(c.size(), 4u);
}

TEST(MinP, KeepsTokensAtLeastMinPTimesTheBest) {
  const auto logits = LogitsOf({0.5, 0.3, 0.15, 0.05});
  auto c = SortedCandidates(logits);
  KeepMinP(c, 0.25f);  // threshold 0.125: 0.15 stays, 0.05 goes
  EXPECT_THAT(Ids(c), ElementsAre(0, 1, 2));
  c = SortedCandidates(logits);
  KeepMinP(c, 0.7f);  // threshold 0.35
  EXPECT_THAT(Ids(c), ElementsAre(0));
  c = SortedCandidates(logits);
  KeepMinP(c, 0.0f);
  EXPECT_EQ(c.size(), 4u);
}

TEST(Probabilities, SoftmaxWithTemperature) {
  const std::vector<float> l = {2.0f, 1.0f, 0.0f};
  const auto c = SortedCandidates(l);
  const auto p = CandidateProbabilities(c, 0.5f);
  // exp(l / 0.5) = e^4, e^2, e^0.
  const double z = std::exp(4.0) + std::exp(2.0) + 1.0;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0], std::exp(4.0) / z, 1e-12);
  EXPECT_NEAR(p[1], std::exp(2.0) / z, 1e-12);
  EXPECT_NEAR(p[2], 1.0 / z, 1e-12);
}

TEST(Sampler, FullChainMatchesHandComputedDistribution) {
  // Logits 3, 2.5, 2, 1, 0.5, 0 for ids 0..5; token 0 was seen recently.
  SamplerOptions o;
  o.repeat_penalty = 1.5f;  // id 0: 3 / 1.5 = 2 -> order 1 (2.5), 0 (2), 2 (2), 3, 4, 5
  o.repeat_last_n = 8;
  o.top_k = 4;              // 1, 0, 2, 3
  o.top_p = 0.9f;           // softmax of 2.5, 2, 2, 1: 0.4105, 0.2490, 0.2490, 0.0916 -> 1, 0, 2
  o.min_p = 0.5f;           // e^(2 - 2.5) = 0.61 of the best >= 0.5: all three stay
  o.temperature = 2.0f;     // final: softmax(2.5/2, 2/2, 2/2)
  Sampler s(o);
  s.Accept(0);
  const std::vector<float> l = {3.0f, 2.5f, 2.0f, 1.0f, 0.5f, 0.0f};
  const auto d = s.Distribution(l);
  EXPECT_THAT(Ids(d.candidates), ElementsAre(1, 0, 2));
  const double z = std::exp(1.25) + 2 * std::exp(1.0);
  ASSERT_EQ(d.probabilities.size(), 3u);
  EXPECT_NEAR(d.probabilities[0], std::exp(1.25) / z, 1e-9);
  EXPECT_NEAR(d.probabilities[1], std::exp(1.0) / z, 1e-9);
  EXPECT_NEAR(d.probabilities[2], std::exp(1.0) / z, 1e-9);
}

TEST(Sampler, TemperatureComesAfterTopP) {
  // p = 0.7, 0.2, 0.1 at temperature 1: top-p 0.65 keeps one token. Were the (flattening)
  // temperature applied first, the masses would be near-uniform and top-p would keep two.
  SamplerOptions o = AllOff(10.0f);
  o.top_p = 0.65f;
  Sampler s(o);
  const auto d = s.Distribution(LogitsOf({0.7, 0.2, 0.1}));
  EXPECT_THAT(Ids(d.candidates), ElementsAre(0));
}

TEST(Sampler, PenaltyWindowIsTheLastNTokens) {
  SamplerOptions o = AllOff(0.0f);
  o.repeat_penalty = 100.0f;
  o.repeat_last_n = 2;
  Sampler s(o);
  const std::vector<float> l = {5.0f, 4.0f, 3.0f};
  s.SetHistory(std::vector<int32_t>{0, 2, 2});  // window {2, 2}: token 0 fell out
  EXPECT_EQ(s.Sample(l), 0);
  s.Accept(0);  // window {2, 0}
  EXPECT_EQ(s.Sample(l), 1);
}

TEST(Sampler, GreedyIsTheArgMaxWithLowestIdOnTies) {
  SamplerOptions o;
  o.temperature = 0.0f;
  o.seed = 123;
  Sampler s(o);
  EXPECT_EQ(s.Sample(std::vector<float>{0.1f, 0.9f, -3.0f, 0.9f}), 1);
  EXPECT_EQ(s.Sample(std::vector<float>{-1.0f, -0.5f, -2.0f}), 1);
}

TEST(Sampler, TemperatureZeroEqualsGreedyWhateverTheOtherSettings) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0, 3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<float> l(1000);
    for (float& x : l) x = dist(rng);
    const int32_t argmax =
        static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    SamplerOptions o;
    o.temperature = 0.0f;
    o.top_k = 1 + trial;
    o.top_p = 0.1f;
    o.min_p = 0.3f;
    o.seed = trial;
    Sampler s(o);
    EXPECT_EQ(s.Sample(l), argmax);
  }
}

TEST(Sampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  const std::vector<float> flat(50, 0.0f);
  SamplerOptions o = AllOff(1.0f);
  o.seed = 42;
  Sampler a(o), b(o);
  o.seed = 43;
  Sampler c(o);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.Sample(flat));
    tb.push_back(b.Sample(flat));
    tc.push_back(c.Sample(flat));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  a.Reset();
  std::vector<int32_t> again;
  for (int i = 0; i < 200; ++i) again.push_back(a.Sample(flat));
  EXPECT_EQ(again, ta);
}

TEST(Sampler, DrawsFollowTheDistribution) {
  Sampler s(AllOff(1.0f));
  const auto l = LogitsOf({0.5, 0.3, 0.2});
  std::map<int32_t, int> count;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++count[s.Sample(l)];
  // Standard error of a frequency near 0.5 with 40000 draws is 0.0025: 0.015 is 6 sigma.
  EXPECT_NEAR(count[0] / double(n), 0.5, 0.015);
  EXPECT_NEAR(count[1] / double(n), 0.3, 0.015);
  EXPECT_NEAR(count[2] / double(n), 0.2, 0.015);
}

TEST(SamplerOptions, InvalidValuesAreNamed) {
  SamplerOptions o;
  EXPECT_TRUE(ValidateSamplerOptions(o).ok());
  o.temperature = -1;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("temperature"));
  o = {};
  o.top_p = 0;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("top-p"));
  o = {};
  o.min_p = 1.5f;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("min-p"));
  o = {};
  o.repeat_penalty = 0;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("repeat penalty"));
  o = {};
  o.presence_penalty = NAN;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("presence penalty"));
  o = {};
  o.frequency_penalty = INFINITY;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("frequency penalty"));
  o = {};
  o.repeat_last_n = -2;
  EXPECT_THAT(ValidateSamplerOptions(o).message(), ::testing::HasSubstr("repeat-last-n"));
}

}  // namespace
}  // namespace jllm::runtime
