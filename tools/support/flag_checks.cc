#include "tools/support/flag_checks.h"

#include <cmath>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tools/support/tool_main.h"

namespace jllm::tools {
namespace {

std::string Meaning(const std::string& meaning) {
  return meaning.empty() ? "" : absl::StrCat(" (", meaning, ")");
}

}  // namespace

CLI::Validator IntRange(int64_t min, int64_t max, std::string meaning) {
  const std::string range =
      max == kNoMax ? absl::StrCat(">= ", min) : absl::StrCat("in [", min, ", ", max, "]");
  return CLI::Validator(
      [min, max, range, meaning](std::string& input) -> std::string {
        int64_t v = 0;
        if (!absl::SimpleAtoi(input, &v)) {
          return absl::StrCat("'", input, "' is not an integer ", range, Meaning(meaning));
        }
        if (v < min || v > max) {
          return absl::StrCat(v, " is out of range: give an integer ", range, Meaning(meaning));
        }
        return "";
      },
      absl::StrCat("INT ", range));
}

CLI::Validator RealRange(double min, double max, bool min_exclusive, std::string meaning) {
  // A maximum at the largest float is no real bound: say just the minimum.
  const std::string range =
      max >= std::numeric_limits<float>::max()
          ? absl::StrCat(min_exclusive ? "> " : ">= ", min)
          : absl::StrCat("in ", min_exclusive ? "(" : "[", min, ", ", max, "]");
  return CLI::Validator(
      [min, max, min_exclusive, range, meaning](std::string& input) -> std::string {
        double v = 0;
        if (!absl::SimpleAtod(input, &v)) {
          return absl::StrCat("'", input, "' is not a number ", range, Meaning(meaning));
        }
        if (!std::isfinite(v)) {
          return absl::StrCat("'", input, "' is not a finite number; give a number ", range,
                              Meaning(meaning));
        }
        if ((min_exclusive ? v <= min : v < min) || v > max) {
          return absl::StrCat(input, " is out of range: give a number ", range, Meaning(meaning));
        }
        return "";
      },
      absl::StrCat("NUMBER ", range));
}

CLI::Validator NonEmpty(std::string meaning) {
  return CLI::Validator(
      [meaning](std::string& input) -> std::string {
        if (input.empty()) return absl::StrCat("must not be empty", Meaning(meaning));
        return "";
      },
      "NON-EMPTY");
}

int CapThreads(const std::string& flag, int64_t requested) {
  if (requested <= 0) return 0;
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t cap = kMaxThreadsPerCore * cores;
  if (requested > cap) {
    Warn(absl::StrCat(flag, " ", requested, " is more than ", kMaxThreadsPerCore, " x the ", cores,
                      " hardware threads; using ", cap));
    return static_cast<int>(cap);
  }
  return static_cast<int>(requested);
}

}  // namespace jllm::tools
