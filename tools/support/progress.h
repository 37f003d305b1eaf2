// A progress line for long work (a model being written, a long prefill), redrawn in place on
// stderr — only when stderr is a terminal, so logs and pipes stay clean.
//
//   Progress p("writing", Progress::Unit::kBytes);
//   options.progress = [&p](uint64_t done, uint64_t total) { p.Update(done, total); };
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace jllm::tools {

// "512 B", "1.50 KiB", "2.49 GiB".
std::string HumanBytes(double bytes);

class Progress {
 public:
  enum class Unit { kBytes, kTokens };
  // `what` says what is being done ("writing", "prefill"); nothing is drawn in the first
  // `quiet_seconds`, so short work stays silent.
  Progress(std::string what, Unit unit, double quiet_seconds = kQuietSeconds);
  ~Progress();  // ends the line if one was drawn
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Draws nothing in the quiet period, then redraws at most every kRedrawSeconds; done == total
  // draws the last state and ends the line.
  void Update(uint64_t done, uint64_t total);
  void Finish();
  bool enabled() const { return enabled_; }

  static constexpr double kQuietSeconds = 0.5;
  static constexpr double kRedrawSeconds = 0.2;

 private:
  std::string what_;
  Unit unit_;
  double quiet_seconds_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace jllm::tools
