#include "runtime/validate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "ir/status.h"

namespace jllm::runtime {
namespace {

int32_t ArgMax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

ValidationStep Compare(const std::vector<float>& ref, const std::vector<float>& test, int64_t position,
                       int32_t token) {
  ValidationStep s;
  s.position = position;
  s.token = token;
  double ref_max = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(static_cast<double>(test[i]) - ref[i]);
    s.max_abs = std::isnan(d) ? INFINITY : std::max(s.max_abs, d);
    ref_max = std::max(ref_max, std::fabs(static_cast<double>(ref[i])));
  }
  s.relative = ref_max > 0 ? s.max_abs / ref_max : s.max_abs;
  s.ref_top = ArgMax(ref);
  s.test_top = ArgMax(test);
  std::vector<float> sorted = ref;
  std::partial_sort(sorted.begin(), sorted.begin() + std::min<size_t>(2, sorted.size()), sorted.end(),
                    std::greater<float>());
  s.near_tie = sorted.size() > 1 && sorted[0] - sorted[1] < 2 * s.max_abs;
  return s;
}

}  // namespace

std::string ValidationReport::Summary() const {
  return absl::StrFormat("%d steps: worst relative logit error %.3g, top-1 agreement %d/%d (%d near-ties); %s",
                         steps.size(), worst_relative, top1_agree, steps.size(), top1_ties,
                         passed ? "PASS" : "FAIL");
}

absl::StatusOr<ValidationReport> ValidateLockstep(Backend& ref, Backend& test,
                                                  absl::Span<const int32_t> prompt, int64_t n_decode,
                                                  const SamplingParams& sampling,
                                                  const ValidationBounds& bounds) {
  if (prompt.empty()) return absl::InvalidArgumentError("validation needs a prompt");
  ValidationReport report;
  std::vector<float> ref_logits, test_logits;
  auto record = [&](const ValidationStep& s) {
    report.steps.push_back(s);
    report.worst_relative = std::max(report.worst_relative, s.relative);
    if (s.ref_top == s.test_top) {
      ++report.top1_agree;
    } else if (s.near_tie) {
      ++report.top1_ties;
    }
  };
  StepOptions ref_opts, test_opts;
  ref_opts.logits = &ref_logits;
  test_opts.logits = &test_logits;
  test_opts.sampling = &sampling;
  RETURN_IF_ERROR(ref.Step(prompt, 0, ref_opts).status());
  ASSIGN_OR_RETURN(int32_t next, test.Step(prompt, 0, test_opts));
  record(Compare(ref_logits, test_logits, static_cast<int64_t>(prompt.size()) - 1, prompt.back()));
  int64_t pos = static_cast<int64_t>(prompt.size());
  for (int64_t i = 0; i < n_decode; ++i, ++pos) {
    const int32_t token = next;
    const int32_t one[1] = {token};
    RETURN_IF_ERROR(ref.Step(one, pos, ref_opts).status());
    ASSIGN_OR_RETURN(next, test.Step(one, pos, test_opts));
    record(Compare(ref_logits, test_logits, pos, token));
  }
  const int64_t disagree = static_cast<int64_t>(report.steps.size()) - report.top1_agree - report.top1_ties;
  report.passed = report.worst_relative <= bounds.max_relative && disagree == 0;
  return report;
}

}  // namespace jllm::runtime
