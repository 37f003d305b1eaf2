#include "backends/cuda/exec/step_trace.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernels/kernel_trace.h"

namespace jllm::cuda {

absl::StatusOr<std::vector<LaunchTrace>> ReadStepTrace(absl::Span<const uint64_t> buffer,
                                                       absl::Span<const TracedLaunch> launches) {
  namespace tr = trace;
  if (buffer.size() < static_cast<size_t>(tr::kWords)) return absl::InvalidArgumentError("trace: no header");
  const uint64_t taken = buffer[0], capacity = buffer[1];
  if (taken > capacity || (taken + 1) * tr::kWords > buffer.size()) {
    return absl::ResourceExhaustedError(absl::StrCat("trace: ", taken, " CTAs took a record, the buffer holds ",
                                                     capacity, "; records were lost"));
  }
  // Each tag's records, in the order their CTAs passed the wait (entered, without one).
  std::map<int, std::vector<const uint64_t*>> by_tag;
  for (uint64_t r = 0; r < taken; ++r) {
    const uint64_t* rec = buffer.data() + tr::kWords * (r + 1);
    by_tag[static_cast<int>(rec[tr::kId] >> tr::kTagShift)].push_back(rec);
  }
  auto when = [](const uint64_t* rec) { return rec[tr::kWait] != 0 ? rec[tr::kWait] : rec[tr::kEntry]; };
  uint64_t t0 = UINT64_MAX;
  for (auto& [tag, recs] : by_tag) {
    std::stable_sort(recs.begin(), recs.end(), [&](const uint64_t* a, const uint64_t* b) { return when(a) < when(b); });
    for (const uint64_t* rec : recs) t0 = std::min(t0, rec[tr::kEntry]);
  }
  std::map<int, size_t> used;
  std::vector<LaunchTrace> out;
  for (const TracedLaunch& l : launches) {
    std::vector<const uint64_t*>& recs = by_tag[l.tag];
    size_t& begin = used[l.tag];
    if (l.ctas <= 0 || begin + l.ctas > recs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("trace: kernel tag ", l.tag, " left ", recs.size(),
                                                     " records, fewer than its launches' CTAs"));
    }
    LaunchTrace t;
    std::vector<double> exits, worked_exits;  // every CTA's; those that stamped a mark
    uint64_t first_entry = UINT64_MAX, first_wait = UINT64_MAX, last_exit = 0;
    double staged = 0, stream = 0, tail = 0;
    int marks = 0, streams = 0;
    for (size_t i = begin; i < begin + l.ctas; ++i) {
      const uint64_t* rec = recs[i];
      first_entry = std::min(first_entry, rec[tr::kEntry]);
      if (rec[tr::kWait] != 0) first_wait = std::min(first_wait, rec[tr::kWait]);
      last_exit = std::max(last_exit, rec[tr::kExit]);
      exits.push_back(static_cast<double>(rec[tr::kExit] - t0));
      if (rec[tr::kMark] != 0) worked_exits.push_back(exits.back());
      if (rec[tr::kMark] != 0 && rec[tr::kWait] != 0) {
        staged += static_cast<double>(rec[tr::kMark] - rec[tr::kWait]);
        ++marks;
      }
      if (rec[tr::kStreamed] != 0 && rec[tr::kMark] != 0) {
        stream += static_cast<double>(rec[tr::kStreamed] - rec[tr::kMark]);
        tail += static_cast<double>(rec[tr::kExit] - rec[tr::kStreamed]);
        ++streams;
      }
      auto at = [&](int field) { return rec[field] != 0 ? static_cast<double>(rec[field] - t0) : -1.0; };
      const uint64_t id = rec[tr::kId];
      t.ctas.push_back({static_cast<int>(id & ((uint64_t{1} << tr::kYShift) - 1)),
                        static_cast<int>((id >> tr::kYShift) & ((uint64_t{1} << (tr::kTagShift - tr::kYShift)) - 1)),
                        static_cast<int>(rec[tr::kSm]), at(tr::kEntry), at(tr::kWait), at(tr::kMark),
                        at(tr::kStreamed), at(tr::kExit)});
    }
    begin += l.ctas;
    // The median over the CTAs that worked: a CTA that leaves before its mark had nothing to do
    // (attention's splits past a short context's one), and with most of the grid idle the median
    // of all would be an idle CTA's exit and the spread the whole kernel.
    if (!worked_exits.empty()) exits.swap(worked_exits);
    std::nth_element(exits.begin(), exits.begin() + exits.size() / 2, exits.end());
    t.first_entry = static_cast<double>(first_entry - t0);
    t.first_wait = first_wait == UINT64_MAX ? -1 : static_cast<double>(first_wait - t0);
    t.last_exit = static_cast<double>(last_exit - t0);
    t.median_exit = exits[exits.size() / 2];
    t.staged = marks > 0 ? staged / marks : -1;
    t.stream = streams > 0 ? stream / streams : -1;
    t.tail = streams > 0 ? tail / streams : -1;
    const double prev_end = out.empty() ? t.first_entry : out.back().last_exit;
    t.step = t.last_exit - prev_end;
    t.release = t.first_wait >= 0 ? t.first_wait - prev_end : -1;
    out.push_back(t);
  }
  for (const auto& [tag, recs] : by_tag) {
    if (used[tag] != recs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("trace: kernel tag ", tag, " left ", recs.size(),
                                                     " records, more than its launches' ", used[tag], " CTAs"));
    }
  }
  return out;
}

}  // namespace jllm::cuda
