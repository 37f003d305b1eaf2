// Standard output that cannot be written (a pipe whose reader has gone: EPIPE, with SIGPIPE
// ignored by the tools) is an error and a non-zero exit, never a silent success with the output
// lost.
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tools_test_support.h"

namespace jllm::testing {
namespace {

using ::testing::HasSubstr;

class StdoutTest : public ToolsFixture {};

TEST_F(StdoutTest, AFailedWriteToStandardOutputIsAnError) {
  const struct {
    std::string tool;
    std::vector<std::string> args;
  } runs[] = {
      {JLLM_INSPECT_PATH, {P("m.gguf")}},
      {JLLM_TOKENIZE_PATH, {P("m.gguf"), "-p", "hello"}},
      {JLLM_TOKENIZE_PATH, {P("m.gguf"), "--jsonl", P("text.jsonl")}},
      {JLLM_RUN_PATH, {P("m.plan"), "-p", "hello", "-n", "3", "--temp", "0"}},
      {JLLM_COMPILE_PATH, {P("m.gguf"), "-o", P("out.plan"), "--dump-ir"}},
      {JLLM_SYNTH_PATH, {"--preset", "tiny", "-o", P("out.gguf")}},
      {JLLM_BENCH_PATH, {P("m.plan"), "--backend", "cpu", "-p", "8", "-n", "2", "-r", "1"}},
  };
  ToolRunOptions closed;
  closed.stdout_reader_closed = true;
  for (const auto& run : runs) {
    const std::string name = run.tool.substr(run.tool.rfind('/') + 1);
    ToolResult r = Run(run.tool, run.args, closed);
    EXPECT_TRUE(r.failed_cleanly()) << name << ": " << r.Describe();
    // The reason (EPIPE) is known when the failure shows at a flush, not when printf met it.
    EXPECT_THAT(r.err, HasSubstr("writing standard output failed")) << name;
    // The same run with a reader succeeds.
    ToolResult ok = Run(run.tool, run.args);
    EXPECT_EQ(ok.exit_code, 0) << name << ": " << ok.Describe();
    RemoveNewNames();
  }
  ExpectInputsUnchanged("stdout runs");
}

}  // namespace
}  // namespace jllm::testing
