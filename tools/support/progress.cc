#include "tools/support/progress.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"
#include "tools/support/tool_main.h"

namespace jllm::tools {

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrFormat("%.0f %s", b, units[u]) : absl::StrFormat("%.2f %s", b, units[u]);
}

Progress::Progress(std::string what, Unit unit, double quiet_seconds)
    : what_(std::move(what)),
      unit_(unit),
      quiet_seconds_(quiet_seconds),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { Finish(); }

void Progress::Update(uint64_t done, uint64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto since = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(now - t).count();
  };
  if (!drawn_ && since(start_) < quiet_seconds_) return;
  if (drawn_ && done < total && since(last_) < kRedrawSeconds) return;
  last_ = now;
  const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  const std::string amount =
      unit_ == Unit::kBytes
          ? absl::StrFormat("%s of %s", HumanBytes(static_cast<double>(done)),
                            HumanBytes(static_cast<double>(total)))
          : absl::StrFormat("%d of %d tokens", done, total);
  // \r and clear-to-end-of-line: the line is redrawn in place.
  std::fprintf(stderr, "\r%s: %s %5.1f%% (%s)\x1b[K", std::string(ToolName()).c_str(),
               what_.c_str(), pct, amount.c_str());
  std::fflush(stderr);
  drawn_ = true;
  if (done >= total) Finish();
}

void Progress::Finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace jllm::tools
