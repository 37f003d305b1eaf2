// Every tool that writes a file (jllm-compile, jllm-synth, jllm-convert, jllm-run --dump-logits,
// jllm-bench --json-out)
// through the one output helper: an output that is one of the run's inputs — by any name — is
// refused with the path named and the input untouched; a symlink is written through; a FIFO or
// a directory is refused and left as it was; no temporary file is ever left; and two writers
// on one path leave one of their files whole.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/test_data.h"
#include "tests/tools/tools_test_support.h"

namespace jllm::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

class OutputSafetyTest : public ToolsFixture {
 protected:
  // The run must fail cleanly, naming `path` and saying why, and change nothing on disk.
  void ExpectRefused(const std::string& tool, const std::vector<std::string>& args,
                     const std::string& path, const std::string& why) {
    const std::string what = tool.substr(tool.rfind('/') + 1) + " -> " + path;
    ToolResult r = Run(tool, args);
    EXPECT_TRUE(r.failed_cleanly()) << what << ": " << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(path)) << what;
    EXPECT_THAT(r.err, HasSubstr(why)) << what;
    ExpectInputsUnchanged(what);
    EXPECT_THAT(NewNames(), IsEmpty()) << what << ": a file was left behind";
    RemoveNewNames();
  }
};

TEST_F(OutputSafetyTest, CompileNeverWritesOverItsInputs) {
  ASSERT_EQ(link(P("m.gguf").c_str(), P("hard.gguf").c_str()), 0);
  baseline_ = Snapshot();
  for (const char* out : {"m.gguf", "link.gguf", "hard.gguf"}) {
    ExpectRefused(JLLM_COMPILE_PATH, {P("m.gguf"), "-o", P(out)}, P(out), "is the same file as the input");
  }
  ExpectRefused(JLLM_COMPILE_PATH, {P("m.gguf"), "--passes", P("passes.yaml"), "-o", P("passes.yaml")},
                P("passes.yaml"), "is the same file as the input");
}

TEST_F(OutputSafetyTest, RunNeverDumpsLogitsOverItsInputs) {
  for (const char* out : {"m.gguf", "m.plan", "link.gguf"}) {
    ExpectRefused(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "2", "--dump-logits", P(out)},
                  P(out), "is the same file as the input");
  }
  ExpectRefused(JLLM_RUN_PATH, {P("m.plan"), "-f", P("prompt.txt"), "-n", "2", "--dump-logits", P("prompt.txt")},
                P("prompt.txt"), "is the same file as the input");
  ExpectRefused(JLLM_RUN_PATH, {P("m.plan"), "--prompt-ids", P("ids.txt"), "-n", "2", "--dump-logits", P("ids.txt")},
                P("ids.txt"), "is the same file as the input");
  // The side file FILE.json counts too: FILE = "m" makes it m.json; an input named so is kept.
  WriteFile(P("x.json"), "{}");
  baseline_ = Snapshot();
  ExpectRefused(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "2", "--dump-logits", P("x"),
                                "--model", P("x.json")},
                P("x.json"), "");
}

TEST_F(OutputSafetyTest, BenchNeverWritesItsJsonOverItsInputs) {
  for (const char* out : {"m.plan", "m.gguf", "link.gguf", "passes.yaml"}) {
    ExpectRefused(JLLM_BENCH_PATH, {P("m.plan"), "--backend", "cpu", "-p", "8", "-n", "2", "-r", "1",
                                    "--passes", P("passes.yaml"), "--json-out", P(out)},
                  P(out), "is the same file as the input");
  }
  ExpectRefused(JLLM_BENCH_PATH, {P("m.plan"), "--backend", "cpu", "-p", "8", "-n", "2", "-r", "1",
                                  "--json-out", P("d")},
                P("d"), "directory");
  ToolResult r = Run(JLLM_BENCH_PATH, {P("m.plan"), "--backend", "cpu", "-p", "8", "-n", "2", "-r", "1",
                                       "--json-out", P("bench.json")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(ReadFile(P("bench.json")), HasSubstr("\"n_prompt\": 8"));
  EXPECT_EQ(NewNames(), std::set<std::string>{"bench.json"});
  ExpectInputsUnchanged("jllm-bench --json-out bench.json");
}

TEST_F(OutputSafetyTest, ConvertNeverWritesOverTheCheckpoint) {
  for (const char* out : {"ck/model.safetensors", "ck/config.json"}) {
    ExpectRefused(JLLM_CONVERT_PATH, {P("ck"), "--allow-no-tokenizer", "-o", P(out)}, P(out),
                  "is the same file as the input");
  }
}

TEST_F(OutputSafetyTest, SynthNeverWritesOverItsTokenizerFiles) {
  const std::string tok = Qwen3TokenizerDir();
  JLLM_REQUIRE_TEST_DATA(!tok.empty(), "the Qwen3 tokenizer files are absent (scripts/setup.sh fetches them)");
  std::filesystem::create_directories(P("tok"));
  std::filesystem::copy_file(tok + "/tokenizer.json", P("tok/tokenizer.json"));
  std::filesystem::copy_file(tok + "/tokenizer_config.json", P("tok/tokenizer_config.json"));
  baseline_ = Snapshot();
  ExpectRefused(JLLM_SYNTH_PATH, {"--preset", "tiny", "--tokenizer", P("tok"), "-o", P("tok/tokenizer.json")},
                P("tok/tokenizer.json"), "is the same file as the input");
}

TEST_F(OutputSafetyTest, WritersRefuseAFifoOrADirectoryAndLeaveThemBe) {
  for (const char* out : {"fifo", "d"}) {
    const std::string why = std::string(out) == "fifo" ? "is a FIFO" : "is a directory";
    ExpectRefused(JLLM_COMPILE_PATH, {P("m.gguf"), "-o", P(out)}, P(out), why);
    ExpectRefused(JLLM_SYNTH_PATH, {"--preset", "tiny", "-o", P(out)}, P(out), why);
    ExpectRefused(JLLM_CONVERT_PATH, {P("ck"), "--allow-no-tokenizer", "-o", P(out)}, P(out), why);
    ExpectRefused(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "1", "--dump-logits", P(out)}, P(out), why);
  }
  struct stat st {};
  ASSERT_EQ(lstat(P("fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST_F(OutputSafetyTest, WritersFollowASymlinkToItsTarget) {
  std::filesystem::create_directories(P("real"));
  ASSERT_EQ(symlink("real/plan.bin", P("plan-link").c_str()), 0);
  ToolResult r = Run(JLLM_COMPILE_PATH, {P("m.gguf"), "-o", P("plan-link")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(std::filesystem::is_symlink(P("plan-link")));
  EXPECT_EQ(ReadFile(P("real/plan.bin")).substr(0, 8), "JLLMPLAN");
  EXPECT_EQ(std::set<std::string>(NewNames()),
            std::set<std::string>({"real", "real/plan.bin", "plan-link"}));
  ExpectInputsUnchanged("compile through a symlink");
  r = Run(JLLM_RUN_PATH, {P("plan-link"), "-p", "hi", "-n", "1", "--temp", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
}

// Two jllm-synth runs with different seeds on one output, again and again: the file is always
// one of the two models whole (a fixed temporary name made it a mix of both seeds' weights).
TEST_F(OutputSafetyTest, TwoConcurrentWritersLeaveOneWholeFile) {
  const auto synth = [&](const std::string& seed, const std::string& out) {
    return Run(JLLM_SYNTH_PATH, {"--preset", "tiny", "--type", "f32", "--seed", seed, "-o", out});
  };
  ASSERT_EQ(synth("1", P("a.gguf")).exit_code, 0);
  ASSERT_EQ(synth("2", P("b.gguf")).exit_code, 0);
  const std::string a = ReadFile(P("a.gguf")), b = ReadFile(P("b.gguf"));
  ASSERT_NE(a, b);
  for (int round = 0; round < 6; ++round) {
    ToolResult ra, rb;
    std::thread ta([&] { ra = synth("1", P("shared.gguf")); });
    std::thread tb([&] { rb = synth("2", P("shared.gguf")); });
    ta.join();
    tb.join();
    ASSERT_EQ(ra.exit_code, 0) << ra.Describe();
    ASSERT_EQ(rb.exit_code, 0) << rb.Describe();
    const std::string got = ReadFile(P("shared.gguf"));
    ASSERT_TRUE(got == a || got == b) << "round " << round << ": a file of " << got.size()
                                      << " bytes that is neither seed's model";
    ASSERT_EQ(NewNames(), std::set<std::string>({"a.gguf", "b.gguf", "shared.gguf"}))
        << "round " << round << ": a temporary file was left";
  }
}

}  // namespace
}  // namespace jllm::testing
