// Bad command lines and bad paths, one row per case as a user or a hostile tester types them:
// each is refused with an exit status in 1..127 and a message naming the flag, path or file,
// and leaves every input as it was. Plus what used to be accepted silently or said wrongly:
// tokenizers jllm-run would refuse (now refused by jllm-compile), a changed tensor (caught by
// its hash), --model naming another model, a chat that outgrows the context.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "frontends/gguf/gguf_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/gguf_fingerprint.h"
#include "tests/tools/tools_test_support.h"

namespace jllm::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

struct Case {
  std::string tool;
  std::vector<std::string> args;  // "@x" stands for the fixture's path of x
  std::string message;            // must appear in stderr
};

class BadInputTest : public ToolsFixture {
 protected:
  std::vector<std::string> Expand(const std::vector<std::string>& args) const {
    std::vector<std::string> out;
    for (const std::string& a : args) out.push_back(a.starts_with("@") ? P(a.substr(1)) : a);
    return out;
  }
  void ExpectRefused(const Case& c, const std::string& stdin_data = "") {
    std::string shown = c.tool.substr(c.tool.rfind('/') + 1);
    for (const std::string& a : c.args) shown += " " + a;
    ToolRunOptions o;
    o.stdin_data = stdin_data;
    ToolResult r = Run(c.tool, Expand(c.args), o);
    EXPECT_TRUE(r.failed_cleanly()) << shown << ": " << r.Describe();
    EXPECT_THAT(r.err, HasSubstr(c.message)) << shown;
    ExpectInputsUnchanged(shown);
    EXPECT_THAT(NewNames(), IsEmpty()) << shown;
    RemoveNewNames();
  }
};

TEST_F(BadInputTest, RunFlagsOutsideTheirRangeNameTheFlagAndTheRange) {
  const std::string run = JLLM_RUN_PATH;
  const Case cases[] = {
      {run, {"@m.plan", "-p", "hi", "-n", "-5"}, "--n-predict: -5 is out of range: give an integer >= -2 (-1 = until end of generation, -2 = until the context is full)"},
      {run, {"@m.plan", "-p", "hi", "--seed", "-2"}, "--seed: -2 is out of range: give an integer >= -1 (-1 = random)"},
      {run, {"@m.plan", "-p", "hi", "--top-k", "-5"}, "--top-k: -5 is out of range"},
      {run, {"@m.plan", "-p", "hi", "-t", "-1"}, "--threads: -1 is out of range: give an integer >= 0 (0 = all cores)"},
      {run, {"@m.plan", "-p", "hi", "-c", "-1"}, "--ctx-size: -1 is out of range"},
      {run, {"@m.plan", "-p", "hi", "--temp", "nan"}, "--temp: 'nan' is not a finite number"},
      {run, {"@m.plan", "-p", "hi", "--temp", "-inf"}, "--temp: '-inf' is not a finite number"},
      {run, {"@m.plan", "-p", "hi", "--top-p", "0"}, "--top-p: 0 is out of range: give a number in (0, 1]"},
      {run, {"@m.plan", "-p", "hi", "--min-p", "1.5"}, "--min-p: 1.5 is out of range"},
      {run, {"@m.plan", "-p", "hi", "--repeat-penalty", "0"}, "--repeat-penalty: 0 is out of range"},
      {run, {"@m.plan", "-p", "hi", "--presence-penalty", "2.5"}, "--presence-penalty: 2.5 is out of range"},
      {run, {"@m.plan", "-p", "hi", "--frequency-penalty", "nan"}, "--frequency-penalty: 'nan' is not a finite number"},
      {run, {"@m.plan", "-p", "hi", "--repeat-last-n", "-2"}, "--repeat-last-n: -2 is out of range"},
      {run, {"@m.plan", "-p", "hi", "--stop", ""}, "--stop: must not be empty"},
      {run, {"@m.plan", "-p", "hi", "--no-think"}, "--no-think requires --chat"},
      {run, {"@m.plan", "-p", "hi", "-f", "@prompt.txt"}, "excludes"},
      {run, {"@m.plan", "-p", ""}, "-p: the prompt is empty"},
      {run, {"@m.plan", "--chat", "-f", "-"}, "-f - cannot be combined with --chat"},
      {run, {"@m.plan"}, "give a prompt (-p TEXT, -f FILE or --prompt-ids FILE) or --chat"},
      {run, {"@m.plan", "-p", "hi", "--validate", "--profile"}, "excludes"},
      {run, {"@m.plan", "--chat", "--validate"}, "--validate and --profile take a prompt, not --chat"},
      {run, {"@m.plan", "-p", "hi", "--profile", "--dump-logits", "@x.f32"}, "--dump-logits cannot be combined with --validate or --profile"},
      {run, {"@m.plan", "-p", "hi", "--backend", "gpu"}, "--backend"},
  };
  for (const Case& c : cases) ExpectRefused(c);
}

TEST_F(BadInputTest, OtherToolsFlagsOutsideTheirRange) {
  const std::string tok = JLLM_TOKENIZE_PATH;
  const Case cases[] = {
      {tok, {"@m.gguf", "--bench", "@prompt.txt", "--bench-seconds", "inf"}, "--bench-seconds: 'inf' is not a finite number"},
      {tok, {"@m.gguf", "--bench", "@prompt.txt", "--bench-seconds", "nan"}, "--bench-seconds: 'nan' is not a finite number"},
      {tok, {"@m.gguf", "--bench", "@prompt.txt", "--bench-seconds", "-1"}, "--bench-seconds: -1 is out of range: give a number in (0, 3600]"},
      {tok, {"@m.gguf", "--bench", "@prompt.txt", "--bench-seconds", "0"}, "--bench-seconds: 0 is out of range"},
      {tok, {"@m.gguf", "--bench-seconds", "1"}, "--bench-seconds needs --bench FILE"},
      {tok, {"@m.gguf", "--jsonl", ""}, "--jsonl: must not be empty"},
      {JLLM_SYNTH_PATH, {"--preset", "tiny", "--threads", "-1", "-o", "@out.gguf"}, "--threads: -1 is out of range"},
      {JLLM_SYNTH_PATH, {"--preset", "tiny", "--seed", "-1", "-o", "@out.gguf"}, "--seed: -1 is out of range"},
      {JLLM_CONVERT_PATH, {"@ck", "--threads", "-3", "-o", "@out.gguf"}, "--threads: -3 is out of range"},
      {JLLM_INSPECT_PATH, {"@m.gguf", "--max-items", "-1"}, "--max-items: -1 is out of range"},
      {JLLM_BENCH_PATH, {"@m.plan", "--seed", "-1"}, "--seed: -1 is out of range"},
      {JLLM_BENCH_PATH, {"@m.plan", "-r", "0"}, "--repetitions"},
      {JLLM_BENCH_PATH, {"@m.plan", "-p", "-5"}, "-p: '-5' is not a count in [0, 2147483648]"},
      {JLLM_BENCH_PATH, {"@m.plan", "-n", "99999999999"}, "-n: '99999999999' is not a count"},
      {JLLM_BENCH_PATH, {"@m.plan", "-d", ""}, "-d is empty"},
      {JLLM_BENCH_PATH, {"@d"}, P("d") + " is a directory, not a regular file"},
      {JLLM_BENCH_PATH, {}, "no plan files: name one or more (from jllm-compile), or a --probe"},
      {JLLM_BENCH_PATH, {"@m.plan", "--probe", "l2-prefetch"}, "--probe measures the device alone"},
      {JLLM_BENCH_PATH, {"--probe", "l2-prefetch", "-n", "4"}, "--probe takes only --backend and -o; -n is for plans"},
      {JLLM_BENCH_PATH, {"--probe", "l2-prefetch", "--backend", "cpu"}, "the cpu_ref backend's probes are none"},
  };
  for (const Case& c : cases) ExpectRefused(c);
}

TEST_F(BadInputTest, DirectoriesAndFifosAsInputsGetClearErrors) {
  const std::string run = JLLM_RUN_PATH, tok = JLLM_TOKENIZE_PATH, compile = JLLM_COMPILE_PATH;
  const Case cases[] = {
      {run, {"@m.plan", "--prompt-ids", "@d", "-n", "4"}, P("d") + " is a directory"},
      {run, {"@m.plan", "-f", "@d"}, P("d") + " is a directory"},
      {run, {"@m.plan", "-f", "@fifo"}, P("fifo") + ": the prompt file is empty"},
      {run, {"@d", "-p", "hi"}, P("d") + " is a directory, not a regular file"},
      {run, {"@fifo", "-p", "hi"}, P("fifo") + " is a FIFO, not a regular file"},
      {run, {"@m.plan", "-p", "hi", "--model", "@fifo"}, P("fifo") + " is a FIFO"},
      {tok, {"@m.gguf", "--bench", "@d"}, P("d") + " is a directory"},
      {tok, {"@m.gguf", "--jsonl", "@d"}, P("d") + " is a directory"},
      {tok, {"@m.gguf", "--jsonl", "@fifo"}, P("fifo") + ": no JSON lines"},
      {tok, {"@fifo", "-p", "x"}, P("fifo") + " is a FIFO"},
      {tok, {"--hf-tokenizer", "@d", "-p", "x"}, P("d")},
      {compile, {"@m.gguf", "--passes", "@d", "-o", "@out.plan"}, P("d") + " is a directory"},
      {compile, {"@d", "-o", "@out.plan"}, P("d") + " is a directory"},
      {JLLM_INSPECT_PATH, {"@fifo"}, P("fifo") + " is a FIFO"},
      {JLLM_CONVERT_PATH, {"@fifo", "-o", "@out.gguf"}, P("fifo")},
  };
  for (const Case& c : cases) ExpectRefused(c);
}

TEST_F(BadInputTest, JsonlSaysWhatIsWrongWithALine) {
  WriteFile(P("bad.jsonl"), "{\"text\": \"ok\"}\n{\"text\": \"a\xff" "b\"}\n");
  WriteFile(P("notjson.jsonl"), "{\"text\": \"ok\"}\n{text: 1}\n");
  WriteFile(P("empty.jsonl"), "\n\n");
  baseline_ = Snapshot();
  const std::string tok = JLLM_TOKENIZE_PATH;
  ExpectRefused({tok, {"@m.gguf", "--jsonl", "@bad.jsonl"}, P("bad.jsonl") + ":2: not valid UTF-8 (byte 0xFF at column 12)"});
  ExpectRefused({tok, {"@m.gguf", "--jsonl", "@notjson.jsonl"}, P("notjson.jsonl") + ":2: not valid JSON"});
  ExpectRefused({tok, {"@m.gguf", "--jsonl", "@empty.jsonl"}, P("empty.jsonl") + ": no JSON lines"});
  ToolResult r = Run(tok, {P("m.gguf"), "--jsonl", P("text.jsonl")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.out, HasSubstr("\"ids\":[104,101,108,108,111]"));
}

// A message that carries a NUL byte (here a bad token id read from a file) is printed whole,
// the NUL escaped, instead of stopping at it.
TEST_F(BadInputTest, AMessageWithANulByteIsNotCutShort) {
  WriteFile(P("nul.txt"), std::string("1 2 3\0x tail", 12));
  baseline_ = Snapshot();
  ExpectRefused({JLLM_RUN_PATH, {"@m.plan", "--prompt-ids", "@nul.txt"}, "'3\\x00x' is not a token id"});
}

TEST_F(BadInputTest, FlagsWithLlamaCppMeaningsWork) {
  // --seed -1: a random seed, printed; -n -2: until the context is full.
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "--seed", "-1", "-n", "-2", "-c", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, Not(HasSubstr("seed 18446744073709551615")));
  EXPECT_THAT(r.err, ::testing::ContainsRegex("seed [0-9]+"));
  // -t far above the cores: capped with a warning, not std::system_error.
  r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "2", "-t", "1000000000"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("warning: -t 1000000000 is more than 4 x the"));
  // --repeat-last-n -1: the whole context.
  r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "2", "--repeat-penalty", "1.1", "--repeat-last-n", "-1"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "2", "--presence-penalty", "-2", "--frequency-penalty", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.Describe();
  ExpectInputsUnchanged("flags with llama.cpp meanings");
}

TEST_F(BadInputTest, PromptFromAFileOrStandardInput) {
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "-f", P("prompt.txt"), "-n", "2", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(r.out.starts_with("Hello from a file")) << r.out;
  ToolRunOptions o;
  o.stdin_data = "Hello from stdin";
  r = Run(JLLM_RUN_PATH, {P("m.plan"), "-f", "-", "-n", "2", "--temp", "0"}, o);
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_TRUE(r.out.starts_with("Hello from stdin")) << r.out;
  // The same prompt as -p gives the same text.
  ToolResult p = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "Hello from stdin", "-n", "2", "--temp", "0"});
  EXPECT_EQ(p.out, r.out);
}

// A prompt longer than the context is refused before anything is echoed: the error, not 120 KB
// of the user's own text.
TEST_F(BadInputTest, ATooLongPromptIsNotEchoedBeforeItsError) {
  WriteFile(P("long.txt"), std::string(5000, 'x'));
  baseline_ = Snapshot();
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "-f", P("long.txt"), "-c", "64"});
  EXPECT_TRUE(r.failed_cleanly()) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("the prompt is 5000 tokens but the context holds 64"));
  EXPECT_EQ(r.out, "");
}

TEST_F(BadInputTest, ChatThatOutgrowsTheContextFailsAndSaysWhy) {
  ToolRunOptions o;
  o.stdin_data = "first line of the chat\nsecond\nthird\n";
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "--chat", "-c", "48", "-n", "4", "--temp", "0"}, o);
  EXPECT_TRUE(r.failed_cleanly()) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("the conversation would be"));
  EXPECT_THAT(r.err, HasSubstr("but the context holds 48"));
  EXPECT_THAT(r.err, HasSubstr("unanswered input is left unread"));
  EXPECT_THAT(r.err, Not(HasSubstr("the prompt is")));
}

TEST_F(BadInputTest, AnotherModelAsModelIsCalledADifferentModel) {
  ASSERT_EQ(Run(JLLM_SYNTH_PATH, {"--preset", "tiny", "--seed", "9", "-o", P("other.gguf")}).exit_code, 0);
  baseline_ = Snapshot();
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "--model", P("other.gguf")});
  EXPECT_TRUE(r.failed_cleanly()) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr(P("other.gguf") + " is a different model from the one " + P("m.plan") +
                               " was compiled from"));
  // Never the advice to compile the other model over this plan.
  EXPECT_THAT(r.err, Not(HasSubstr("-o " + P("m.plan"))));
  ExpectInputsUnchanged("--model other.gguf");
}

// 64 bytes changed inside a tensor, away from every window of the header fingerprint: the cheap
// check passes, the tensor's own hash does not.
TEST_F(BadInputTest, AChangedTensorIsCaughtByItsHash) {
  auto file = gguf::GgufFile::Open(P("m.gguf"));
  ASSERT_TRUE(file.ok()) << file.status();
  const uint64_t size = (*file)->file_size(), data = (*file)->data_offset();
  const auto windows = runtime::FingerprintSampleRanges(size, data);
  const gguf::TensorInfo* embd = (*file)->FindTensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  const uint64_t begin = data + embd->offset;
  uint64_t at = 0;
  for (uint64_t x = begin; x + 64 <= begin + embd->nbytes && at == 0; x += 64) {
    bool clear = true;
    for (const auto& [b, e] : windows) clear = clear && (x + 64 <= b || x >= e);
    if (clear) at = x;
  }
  ASSERT_NE(at, 0u) << "no 64 bytes of the tensor outside the sampled windows";
  const auto before = runtime::ComputeGgufFingerprint((*file)->bytes(), data);
  file->reset();
  std::string bytes = ReadFile(P("m.gguf"));
  for (uint64_t i = at; i < at + 64; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  WriteFile(P("m.gguf"), bytes);
  auto changed = gguf::GgufFile::Open(P("m.gguf"));
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(*runtime::ComputeGgufFingerprint((*changed)->bytes(), data), *before);
  baseline_ = Snapshot();
  ToolResult r = Run(JLLM_RUN_PATH, {P("m.plan"), "-p", "hi", "-n", "1"});
  EXPECT_TRUE(r.failed_cleanly()) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr(P("m.gguf") + ": tensor 'token_embd.weight' differs from the one " +
                               P("m.plan") + " was compiled with"));
  ExpectInputsUnchanged("changed tensor");
}

// What jllm-run would refuse about a tokenizer, jllm-compile refuses first, naming the GGUF and
// writing no plan.
TEST_F(BadInputTest, CompileRefusesTokenizersThatRunWouldRefuse) {
  struct Bad {
    const char* name;
    std::function<void(gguf::TokenizerData&)> edit;
    const char* message;
  };
  const Bad bads[] = {
      {"llama.gguf", [](gguf::TokenizerData& t) { t.model = "llama"; }, "tokenizer.ggml.model 'llama' is not supported"},
      {"merges.gguf", [](gguf::TokenizerData& t) { t.merges = {"A Z"}; }, "tokenizer.ggml.merges[0] 'A Z': the joined token is not in the vocabulary"},
      {"dupbyte.gguf", [](gguf::TokenizerData& t) { t.tokens[66] = "A"; }, "has no token for byte 0x42"},
      {"template.gguf", [](gguf::TokenizerData& t) {
         t.chat_template = "<|im_start|>";
         t.chat_template.append(1 << 20, ' ');
       },
       "tokenizer.chat_template is 1048588 bytes, over the plan format's limit of 1048576 bytes"},
  };
  for (const Bad& b : bads) RewriteGgufTokenizer(P("m.gguf"), P(b.name), b.edit);
  baseline_ = Snapshot();
  for (const Bad& b : bads) {
    ExpectRefused({JLLM_COMPILE_PATH, {std::string("@") + b.name, "-o", "@out.plan"}, b.message});
    ExpectRefused({JLLM_COMPILE_PATH, {std::string("@") + b.name, "-o", "@out.plan"},
                   P(b.name) + ": jllm-run would refuse its tokenizer"});
  }
}

TEST_F(BadInputTest, ConvertWithoutTokenizerFilesNeedsItsFlag) {
  ExpectRefused({JLLM_CONVERT_PATH, {"@ck", "-o", "@out.gguf"}, "--allow-no-tokenizer"});
  ToolResult r = Run(JLLM_CONVERT_PATH, {P("ck"), "--allow-no-tokenizer", "-o", P("out.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.Describe();
  EXPECT_THAT(r.err, HasSubstr("warning: no tokenizer.json in " + P("ck")));
  EXPECT_EQ(NewNames(), std::set<std::string>({"out.gguf"}));
  ExpectInputsUnchanged("convert --allow-no-tokenizer");
}

}  // namespace
}  // namespace jllm::testing
