// Range checks for command-line values, one helper for every tool: CLI11 validators whose
// messages name the valid range and what its special values mean (CLI11 puts the flag's name
// in front), so "-n -5" or "--temp nan" is an error that says what would be right.
//
//   app.add_option("-n,--n-predict", n)->check(IntRange(-2, kNoMax, "-1 = until end of
//       generation, -2 = until the context is full"));
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "CLI/CLI.hpp"

namespace jllm::tools {

inline constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

// An integer in [min, max]; `meaning` (may be empty) explains special values.
CLI::Validator IntRange(int64_t min, int64_t max, std::string meaning = "");

// A finite number in [min, max] (or (min, max] when `min_exclusive`): NaN and ±inf are refused
// by name, never compared (NaN would pass any comparison-based check).
CLI::Validator RealRange(double min, double max, bool min_exclusive = false,
                         std::string meaning = "");

// A string that is not empty.
CLI::Validator NonEmpty(std::string meaning = "");

// The thread count to use for `flag`'s value `requested` (validated >= 0 by IntRange): 0 stays
// 0 (all cores); more than kMaxThreadsPerCore per hardware thread is capped there, with a
// warning naming the flag (creating a billion threads aborts the process).
inline constexpr int kMaxThreadsPerCore = 4;
int CapThreads(const std::string& flag, int64_t requested);

}  // namespace jllm::tools
