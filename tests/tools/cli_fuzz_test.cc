// The command lines themselves, fuzzed (the file parsers have their own mutation tests in
// tests/gguf): a seeded generator draws flag combinations and values — negative, zero, huge,
// NaN, inf, empty, junk, directories, FIFOs, missing paths, the inputs themselves as outputs —
// for every tool, and each run must end by itself (no signal, no hang: it is killed past a time
// limit and reported) with a status below 128, leave every input byte and inode as it was, and
// leave no temporary file. JLLM_CLI_FUZZ_CASES sets the runs per tool (default 24, a few
// seconds each tool on CI); the seed is fixed, so a failure reproduces.
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/tools_test_support.h"

namespace jllm::testing {
namespace {

// Values that have broken command-line handling somewhere; "@x" is the fixture's path x.
const std::vector<std::string> kHostile = {
    "-1", "0", "-5", "1", "3", "-2", "2147483648", "99999999999999999999", "1e308", "-1e308",
    "nan", "inf", "-inf", "", "abc", "0x10", " 7", "@d", "@fifo", "@missing", "@link.gguf",
    "@m.gguf", "@m.plan", "-"};
// Outputs: fresh names (allowed), and everything that must be refused.
const std::vector<std::string> kOutputs = {"@out.a", "@out.b", "@m.gguf", "@m.plan", "@link.gguf",
                                           "@d", "@fifo", "@nodir/x", "@passes.yaml", "@ck/config.json", ""};

struct Flag {
  std::string name;
  std::vector<std::string> values;  // empty: a switch without a value
  bool output = false;              // its value is a path the tool writes
};

struct ToolSpec {
  std::string binary;
  std::vector<std::string> base;  // a valid command line the fuzzer starts from
  std::vector<Flag> flags;
  // Flags never drawn together (both at odd values could make legitimately long work).
  std::vector<std::pair<std::string, std::string>> apart;
};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<ToolSpec> Specs() {
  const auto H = kHostile;
  const auto paths = std::vector<std::string>{"@d", "@fifo", "@missing", "@m.gguf", "@m.plan",
                                              "@prompt.txt", "@ids.txt", "@text.jsonl", "@link.gguf", ""};
  return {
      {JLLM_RUN_PATH,
       {"@m.plan", "-p", "hi", "-n", "4", "-c", "64", "--temp", "0"},
       {{"-n", H}, {"-c", H}, {"--temp", H}, {"--top-k", H}, {"--top-p", H}, {"--min-p", H},
        {"--repeat-penalty", H}, {"--presence-penalty", H}, {"--frequency-penalty", H},
        {"--repeat-last-n", H}, {"--seed", H}, {"-t", H},
        {"--stop", {"", "x", "hi"}}, {"--chat", {}}, {"--no-think", {}}, {"--no-display-prompt", {}},
        {"-p", H}, {"-f", With(paths, {"-"})}, {"--prompt-ids", paths}, {"--model", paths},
        {"--backend", {"cpu", "cuda", "auto", "", "tpu"}}, {"--validate", {}}, {"--profile", {}},
        {"--dump-logits", kOutputs, true}},
       {{"-n", "-c"}}},
      {JLLM_COMPILE_PATH,
       {"@m.gguf", "-o", "@out.plan"},
       {{"-o", kOutputs, true}, {"--passes", With(paths, {"@passes.yaml"})}, {"--dump-ir", {}},
        {"--dump-ir-after", {"group-qkv", "kv-dtype", "", "nope"}},
        {"--arch", {"", "sm_1", "nope", "sm_87,,x"}}},  // never a valid one: NVRTC would take minutes
       {}},
      {JLLM_SYNTH_PATH,
       {"--preset", "tiny", "--type", "q8_0", "-o", "@out.gguf"},
       {{"-o", kOutputs, true}, {"--preset", {"tiny", "", "huge", "-1"}},
        {"--type", {"q8_0", "f32", "q4_k_m", "", "q9_9"}}, {"--seed", H}, {"--threads", H},
        {"--fill", {"auto", "exact", "pool", "", "x"}}, {"--tokenizer", paths}},
       {}},
      {JLLM_CONVERT_PATH,
       {"@ck", "--allow-no-tokenizer", "-o", "@out.gguf"},
       {{"-o", kOutputs, true}, {"--type", {"f32", "q8_0", "q4_k_m", "", "bad"}}, {"--threads", H},
        {"--name", {"", "x", "\x01"}}, {"--allow-no-tokenizer", {}}},
       {}},
      {JLLM_TOKENIZE_PATH,
       {"@m.gguf", "-p", "hello"},
       {{"-p", H}, {"--ids", {}}, {"--no-parse-special", {}}, {"--no-cache", {}},
        {"--jsonl", paths}, {"--bench", paths},
        {"--bench-seconds", {"0", "-1", "nan", "inf", "1e9", "0.01", "", "abc"}},
        {"--hf-tokenizer", paths}},
       {}},
      {JLLM_INSPECT_PATH,
       {"@m.gguf"},
       {{"--tensor", {"token_embd.weight", "output_norm.weight", "", "nope"}},
        {"--rows", {"0:1", "1:0", "-1:2", "0:99999999999", "", "a:b", "3"}},
        {"--max-items", H}},
       {}},
      {JLLM_BENCH_PATH,
       {"@m.plan", "--backend", "cpu", "-p", "8", "-n", "2", "-r", "1"},
       {{"--json-out", kOutputs, true}, {"-p", H}, {"-n", H}, {"-d", H}, {"-r", H}, {"--chunk", H},
        {"--seed", H}, {"-o", {"md", "json", "", "csv"}}, {"--backend", {"cpu", "cuda", "", "tpu"}},
        {"--passes", With(paths, {"@passes.yaml"})}},
       {}},
  };
}

int CasesPerTool() {
  const char* env = std::getenv("JLLM_CLI_FUZZ_CASES");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : 24;
}

class CliFuzzTest : public ToolsFixture {
 protected:
  std::string Expand(const std::string& v) const { return v.starts_with("@") ? P(v.substr(1)) : v; }

  struct Drawn {
    std::vector<std::string> args;
    std::set<size_t> output_args;   // indices of args that are values of output flags
    std::set<std::string> outputs;  // fixture names those may write (symlinks resolved, FILE.json)
  };

  // One command line: the base, with a few flags replaced or added, and now and then the first
  // (positional) argument swapped for a hostile value or dropped.
  Drawn Draw(const ToolSpec& spec, std::mt19937_64& rng) const {
    auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
    std::vector<std::string> args = spec.base;
    const size_t n_flags = 1 + pick(3);
    std::vector<std::string> chosen;
    // Outputs are where data is lost: every other case draws the output flag first.
    const auto output = std::find_if(spec.flags.begin(), spec.flags.end(),
                                     [](const Flag& f) { return f.output; });
    const bool output_first = output != spec.flags.end() && pick(2) == 0;
    for (size_t k = 0; k < n_flags; ++k) {
      const Flag& f = k == 0 && output_first ? *output : spec.flags[pick(spec.flags.size())];
      bool clash = false;
      for (const auto& [a, b] : spec.apart) {
        for (const std::string& c : chosen) clash |= (c == a && f.name == b) || (c == b && f.name == a);
      }
      if (clash) continue;
      chosen.push_back(f.name);
      // A flag already in the base gets its value replaced; otherwise it is appended.
      auto at = std::find(args.begin(), args.end(), f.name);
      if (f.values.empty()) {
        if (at == args.end()) args.push_back(f.name);
        continue;
      }
      const std::string value = f.values[pick(f.values.size())];
      if (at != args.end() && at + 1 != args.end()) {
        *(at + 1) = value;
      } else {
        args.push_back(f.name);
        args.push_back(value);
      }
    }
    const size_t r = pick(10);
    if (r == 0) args.erase(args.begin());
    if (r == 1) args[0] = kHostile[pick(kHostile.size())];
    Drawn d;
    for (size_t i = 0; i < args.size(); ++i) {
      const bool out_flag = i > 0 && std::any_of(spec.flags.begin(), spec.flags.end(), [&](const Flag& f) {
                              return f.output && f.name == args[i - 1];
                            });
      if (out_flag) d.output_args.insert(i);
      if (out_flag && args[i].starts_with("@")) {
        const std::string name = args[i].substr(1) == "link.gguf" ? "m.gguf" : args[i].substr(1);
        d.outputs.insert(name);
        d.outputs.insert(name + ".json");  // --dump-logits' side file
      }
    }
    for (std::string& a : args) a = Expand(a);
    d.args = std::move(args);
    return d;
  }

  // The fixture files a command reads: those it names, the GGUF behind a plan or the symlink,
  // the files of a checkpoint folder it names.
  std::set<std::string> InputsOf(const Drawn& d) const {
    std::set<std::string> in;
    std::vector<std::string> args;
    for (size_t i = 0; i < d.args.size(); ++i) {
      if (!d.output_args.contains(i)) args.push_back(d.args[i]);
    }
    for (const auto& [name, state] : baseline_) {
      for (const std::string& a : args) {
        if (a == P(name)) in.insert(name);
      }
    }
    if (in.contains("m.plan") || in.contains("link.gguf")) in.insert("m.gguf");
    if (std::find(args.begin(), args.end(), P("ck")) != args.end()) {
      for (const auto& [name, state] : baseline_) {
        if (name.starts_with("ck/")) in.insert(name);
      }
    }
    return in;
  }

  // Inputs must be exactly as they were. A non-input named as an output may have been
  // replaced: it is put back for the next case.
  void CheckAndRestore(const Drawn& d, const std::string& shown) {
    const std::set<std::string> inputs = InputsOf(d);
    for (auto& [name, state] : baseline_) {
      const FileState now = StateOf(P(name));
      if (now == state) continue;
      if (!d.outputs.contains(name) || inputs.contains(name)) {
        ADD_FAILURE() << shown << ": " << name << " was changed or replaced";
        continue;
      }
      EXPECT_EQ(now.type, state.type) << shown << ": " << name << " is no longer what it was";
      if (state.type == S_IFREG) {
        WriteFile(P(name), state.bytes);
        state = StateOf(P(name));
      }
    }
  }

  void Fuzz(size_t tool_index) {
    const ToolSpec spec = Specs()[tool_index];
    std::mt19937_64 rng(0x6a6c6c6d + tool_index);  // fixed: a failure reproduces
    ToolRunOptions o;
    o.stdin_data = "hello\n";
    o.timeout_seconds = 60;
    for (int i = 0; i < CasesPerTool(); ++i) {
      const Drawn d = Draw(spec, rng);
      std::string shown = spec.binary.substr(spec.binary.rfind('/') + 1);
      for (const std::string& a : d.args) shown += " '" + a + "'";
      SCOPED_TRACE("case " + std::to_string(i) + ": " + shown);
      const ToolResult r = Run(spec.binary, d.args, o);
      ASSERT_FALSE(r.timed_out) << "hang: " << r.Describe();
      ASSERT_EQ(r.signal, 0) << "crash: " << r.Describe();
      ASSERT_TRUE(r.exit_code >= 0 && r.exit_code < 128) << r.Describe();
      if (r.exit_code != 0) {
        EXPECT_FALSE(r.err.empty()) << "a failure without a message";
      }
      CheckAndRestore(d, shown);
      for (const std::string& name : NewNames()) {
        EXPECT_TRUE((name.starts_with("out.") || d.outputs.contains(name)) &&
                    name.find(".tmp.") == std::string::npos)
            << "left behind: " << name;
      }
      RemoveNewNames();
      if (HasFatalFailure() || HasNonfatalFailure()) return;
    }
  }
};

TEST_F(CliFuzzTest, JllmRun) { Fuzz(0); }
TEST_F(CliFuzzTest, JllmCompile) { Fuzz(1); }
TEST_F(CliFuzzTest, JllmSynth) { Fuzz(2); }
TEST_F(CliFuzzTest, JllmConvert) { Fuzz(3); }
TEST_F(CliFuzzTest, JllmTokenize) { Fuzz(4); }
TEST_F(CliFuzzTest, JllmInspect) { Fuzz(5); }
TEST_F(CliFuzzTest, JllmBench) { Fuzz(6); }

}  // namespace
}  // namespace jllm::testing
