// tools/support on its own: the flag range validators (messages, NaN and inf, special values),
// the thread cap, the progress line (drawn on a terminal, silent elsewhere) and the error
// printer (a NUL does not cut a message).
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/support/flag_checks.h"
#include "tools/support/progress.h"
#include "tools/support/tool_main.h"

namespace jllm::tools {
namespace {

using ::testing::HasSubstr;

std::string Check(const CLI::Validator& v, std::string input) { return v(input); }

TEST(FlagChecks, IntRangeNamesTheRangeAndTheMeaning) {
  const CLI::Validator n = IntRange(-2, kNoMax, "-1 = until end of generation");
  EXPECT_EQ(Check(n, "-1"), "");
  EXPECT_EQ(Check(n, "0"), "");
  EXPECT_EQ(Check(n, "9223372036854775807"), "");
  EXPECT_EQ(Check(n, "-5"), "-5 is out of range: give an integer >= -2 (-1 = until end of generation)");
  EXPECT_THAT(Check(n, "abc"), HasSubstr("'abc' is not an integer >= -2"));
  EXPECT_THAT(Check(n, "99999999999999999999"), HasSubstr("is not an integer"));
  EXPECT_EQ(Check(IntRange(0, 10), "11"), "11 is out of range: give an integer in [0, 10]");
}

TEST(FlagChecks, RealRangeRefusesNanAndInfinity) {
  const CLI::Validator p = RealRange(0, 1, /*min_exclusive=*/true, "1 = off");
  EXPECT_EQ(Check(p, "1"), "");
  EXPECT_EQ(Check(p, "0.5"), "");
  EXPECT_EQ(Check(p, "0"), "0 is out of range: give a number in (0, 1] (1 = off)");
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity"}) {
    EXPECT_THAT(Check(p, bad), HasSubstr("is not a finite number")) << bad;
  }
  EXPECT_THAT(Check(p, "x"), HasSubstr("'x' is not a number"));
  const CLI::Validator t = RealRange(0, std::numeric_limits<float>::max(), false, "0 = greedy");
  EXPECT_EQ(Check(t, "-0.1"), "-0.1 is out of range: give a number >= 0 (0 = greedy)");
  EXPECT_EQ(Check(t, "1e30"), "");
  EXPECT_EQ(Check(NonEmpty("a stop string"), ""), "must not be empty (a stop string)");
  EXPECT_EQ(Check(NonEmpty(), "x"), "");
}

TEST(FlagChecks, ThreadsAboveAFewPerCoreAreCapped) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(CapThreads("-t", 0), 0);
  EXPECT_EQ(CapThreads("-t", 1), 1);
  EXPECT_EQ(CapThreads("-t", kMaxThreadsPerCore * cores), kMaxThreadsPerCore * cores);
  EXPECT_EQ(CapThreads("-t", 1000000000), kMaxThreadsPerCore * cores);
}

// Runs `fn` with stderr sent to `fd`, then puts stderr back.
template <typename Fn>
void WithStderr(int fd, Fn fn) {
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
}

std::string Drain(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ProgressLine, IsDrawnOnATerminalAndEndsTheLine) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(grantpt(master), 0);
  ASSERT_EQ(unlockpt(master), 0);
  const int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  WithStderr(slave, [] {
    Progress p("prefill", Progress::Unit::kTokens, /*quiet_seconds=*/0);
    EXPECT_TRUE(p.enabled());
    p.Update(1, 4);
    p.Update(4, 4);  // the end is always drawn, then the line ends
  });
  close(slave);
  const std::string shown = Drain(master);
  close(master);
  EXPECT_THAT(shown, HasSubstr("\rjllm: prefill  25.0% (1 of 4 tokens)"));
  EXPECT_THAT(shown, HasSubstr("\rjllm: prefill 100.0% (4 of 4 tokens)"));
  EXPECT_THAT(shown, HasSubstr("\n"));
}

TEST(ProgressLine, IsSilentWhenStderrIsNotATerminal) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  WithStderr(p[1], [] {
    Progress progress("writing", Progress::Unit::kBytes, /*quiet_seconds=*/0);
    EXPECT_FALSE(progress.enabled());
    progress.Update(1, 2);
    progress.Update(2, 2);
  });
  close(p[1]);
  EXPECT_EQ(Drain(p[0]), "");
  close(p[0]);
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.50 KiB");
}

TEST(ToolMain, ErrorsArePrintedWholeWithControlBytesEscaped) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  WithStderr(p[1], [] {
    EXPECT_EQ(Fail(std::string("bad \0byte\x1b[2J end", 17)), 1);
    EXPECT_EQ(UsageError("usage"), 2);
    Warn("careful");
  });
  close(p[1]);
  const std::string err = Drain(p[0]);
  close(p[0]);
  EXPECT_THAT(err, HasSubstr("jllm: bad \\x00byte\\x1B[2J end\n"));
  EXPECT_THAT(err, HasSubstr("jllm: usage\n"));
  EXPECT_THAT(err, HasSubstr("jllm: warning: careful\n"));
}

}  // namespace
}  // namespace jllm::tools
