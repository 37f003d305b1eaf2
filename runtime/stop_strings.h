// Streams generated text while watching for stop strings. Text that could still turn into a
// stop string is held back until it cannot; when a stop string appears, the text before it is
// released and everything from it on is dropped (the stop string is not part of the output).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jllm::runtime {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);  // empty strings are ignored

  // Adds `piece`; returns the text now safe to emit. After a stop string appeared, stopped()
  // is true and later calls return nothing.
  std::string Push(std::string_view piece);
  // At the end of generation: the held-back text (none after a stop).
  std::string Flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }  // the stop string that fired

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace jllm::runtime
