// ReadStepTrace (backends/cuda/exec/step_trace.h): records as the kernels leave them, in no
// particular order, matched to the launches and put on the step's timeline.
#include "backends/cuda/exec/step_trace.h"

#include <cstdint>
#include <vector>

#include "backends/cuda/kernels/kernel_trace.h"
#include "gtest/gtest.h"

namespace jllm::cuda {
namespace {

namespace tr = trace;

struct Rec {
  int tag, x;
  uint64_t entry, wait, mark, exit, streamed = 0;
  int y = 0, sm = 0;
};

std::vector<uint64_t> Buffer(const std::vector<Rec>& recs, uint64_t capacity = 64) {
  std::vector<uint64_t> b((capacity + 1) * tr::kWords, 0);
  b[0] = recs.size();
  b[1] = capacity;
  for (size_t i = 0; i < recs.size(); ++i) {
    uint64_t* r = b.data() + tr::kWords * (i + 1);
    r[tr::kId] = (uint64_t(recs[i].tag) << tr::kTagShift) | (uint64_t(recs[i].y) << tr::kYShift) | uint64_t(recs[i].x);
    r[tr::kEntry] = recs[i].entry;
    r[tr::kWait] = recs[i].wait;
    r[tr::kMark] = recs[i].mark;
    r[tr::kExit] = recs[i].exit;
    r[tr::kStreamed] = recs[i].streamed;
    r[tr::kSm] = recs[i].sm;
  }
  return b;
}

// Kernel 1 (2 CTAs) twice with kernel 2 (3 CTAs, no mark) between; the records shuffled. The
// second launch of kernel 1 started before kernel 2 ended (PDL) but waited until after it.
TEST(StepTrace, RecordsMatchTheirLaunchesOnTheTimeline) {
  const std::vector<Rec> recs = {
      {1, 1, 1500, 3700, 3900, 5000, 4600},  // kernel 1, second launch
      {2, 0, 1200, 2000, 0, 3000},     // kernel 2
      {1, 0, 1000, 1100, 1300, 2000, 1800},  // kernel 1, first launch
      {2, 2, 1250, 2100, 0, 3400, 0, 5, 131},
      {1, 0, 2500, 3600, 3800, 4800, 4700},  // kernel 1, second launch
      {1, 1, 1000, 1150, 1350, 1900, 1750},  // kernel 1, first launch
      {2, 1, 1220, 2050, 0, 3100},
  };
  auto t = ReadStepTrace(Buffer(recs), std::vector<TracedLaunch>{{1, 2}, {2, 3}, {1, 2}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  // Times from the first entry (1000).
  EXPECT_EQ((*t)[0].first_entry, 0);
  EXPECT_EQ((*t)[0].first_wait, 100);
  EXPECT_EQ((*t)[0].last_exit, 1000);
  EXPECT_EQ((*t)[0].step, 1000);  // the first launch: from its own first entry
  EXPECT_EQ((*t)[0].release, 100);
  EXPECT_EQ((*t)[0].staged, 200);  // (200 + 200) / 2
  EXPECT_EQ((*t)[0].stream, 450);  // (500 + 400) / 2
  EXPECT_EQ((*t)[0].tail, 175);    // (200 + 150) / 2
  EXPECT_EQ((*t)[1].first_entry, 200);
  EXPECT_EQ((*t)[1].first_wait, 1000);
  EXPECT_EQ((*t)[1].last_exit, 2400);
  EXPECT_EQ((*t)[1].median_exit, 2100);
  EXPECT_EQ((*t)[1].step, 1400);
  EXPECT_EQ((*t)[1].release, 0);
  EXPECT_EQ((*t)[1].staged, -1);  // no mark
  EXPECT_EQ((*t)[1].stream, -1);
  EXPECT_EQ((*t)[1].tail, -1);
  EXPECT_EQ((*t)[2].first_entry, 500);  // entered during kernel 2
  EXPECT_EQ((*t)[2].first_wait, 2600);
  EXPECT_EQ((*t)[2].step, 1600);  // 4000 - 2400
  EXPECT_EQ((*t)[2].release, 200);
  EXPECT_EQ((*t)[2].staged, 200);
  EXPECT_EQ((*t)[2].stream, 800);  // (700 + 900) / 2
  EXPECT_EQ((*t)[2].tail, 250);    // (400 + 100) / 2
  // Each CTA's stamps, in the order the CTAs passed their wait.
  ASSERT_EQ((*t)[0].ctas.size(), 2u);
  const CtaTrace& a = (*t)[0].ctas[0];
  EXPECT_EQ(a.x, 0);
  EXPECT_EQ(a.y, 0);
  EXPECT_EQ(a.entry, 0);
  EXPECT_EQ(a.wait, 100);
  EXPECT_EQ(a.mark, 300);
  EXPECT_EQ(a.streamed, 800);
  EXPECT_EQ(a.exit, 1000);
  EXPECT_EQ((*t)[0].ctas[1].x, 1);
  EXPECT_EQ((*t)[0].ctas[1].exit, 900);
  ASSERT_EQ((*t)[1].ctas.size(), 3u);
  const CtaTrace& c = (*t)[1].ctas[2];  // the last past its wait: x 2, y 5, no mark or stream
  EXPECT_EQ(c.x, 2);
  EXPECT_EQ(c.y, 5);
  EXPECT_EQ(c.sm, 131);
  EXPECT_EQ((*t)[1].ctas[0].sm, 0);
  EXPECT_EQ(c.wait, 1100);
  EXPECT_EQ(c.mark, -1);
  EXPECT_EQ(c.streamed, -1);
  EXPECT_EQ(c.exit, 2400);
  ASSERT_EQ((*t)[2].ctas.size(), 2u);
  EXPECT_EQ((*t)[2].ctas[0].x, 0);  // waited at 3600, before x 1 at 3700
  EXPECT_EQ((*t)[2].ctas[0].entry, 1500);
}

// A launch whose grid is mostly idle — attention at a short context: one split a kv head works,
// the others leave before their mark — measures its spread from the median of the CTAs that
// worked, not of all (which would be an idle CTA's exit, and the spread the whole kernel).
TEST(StepTrace, TheMedianExitIsOfTheCtasThatWorked) {
  std::vector<Rec> recs;
  for (int x = 0; x < 4; ++x) recs.push_back({1, x, 1000, 1100, 0, static_cast<uint64_t>(1200 + 10 * x)});  // idle splits
  recs.push_back({1, 4, 1000, 1100, 1500, 4000, 3500});
  recs.push_back({1, 5, 1000, 1100, 1500, 4500, 4000});
  recs.push_back({1, 6, 1000, 1100, 1600, 6000, 5000});
  auto t = ReadStepTrace(Buffer(recs), std::vector<TracedLaunch>{{1, 7}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 1u);
  EXPECT_EQ((*t)[0].median_exit, 3500);  // 4500 from the first entry: the middle of the three that marked
  EXPECT_EQ((*t)[0].last_exit, 5000);
  EXPECT_DOUBLE_EQ((*t)[0].staged, (400 + 400 + 500) / 3.0);  // the idle CTAs have no staging
}

TEST(StepTrace, AFullBufferOrCountsOffAreErrors) {
  const std::vector<Rec> recs = {{1, 0, 10, 20, 0, 30}, {1, 1, 10, 20, 0, 30}};
  std::vector<uint64_t> full = Buffer(recs, 2);
  full[0] = 3;  // a third CTA found no room
  EXPECT_EQ(ReadStepTrace(full, std::vector<TracedLaunch>{{1, 2}}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadStepTrace(Buffer(recs), std::vector<TracedLaunch>{{1, 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // fewer records than CTAs
  EXPECT_EQ(ReadStepTrace(Buffer(recs), std::vector<TracedLaunch>{{1, 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // records no launch explains
  EXPECT_EQ(ReadStepTrace(Buffer(recs), std::vector<TracedLaunch>{{2, 2}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // another kernel's
}

}  // namespace
}  // namespace jllm::cuda
