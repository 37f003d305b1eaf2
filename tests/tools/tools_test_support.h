// What the tool tests share: a fresh folder per test holding the inputs a user would have —
// a tiny synthesized GGUF, its plan, a pass file, prompt files, a Hugging Face checkpoint
// folder — plus hostile paths (a directory, a FIFO, a symlink to the model), and snapshots
// that prove a run wrote none of the inputs and left no temporary file behind.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_writer.h"
#include "frontends/gguf/tokenizer_data.h"
#include "gtest/gtest.h"
#include "tests/gguf/safetensors_builder.h"
#include "tests/support/temp_files.h"
#include "tests/support/tool_runner.h"

namespace jllm::testing {

// Identity and contents of a file: a write in place changes the bytes, a replacement by rename
// changes the inode even when the bytes are the same.
struct FileState {
  bool exists = false;
  mode_t type = 0;
  ino_t inode = 0;
  std::string bytes;
  bool operator==(const FileState&) const = default;
};

inline FileState StateOf(const std::string& path) {
  FileState s;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.type = st.st_mode & S_IFMT;
  s.inode = st.st_ino;
  if (S_ISREG(st.st_mode)) s.bytes = ReadFile(path);
  return s;
}

// A tiny Hugging Face Qwen3 checkpoint (E 256, 1 layer, heads 2/1 x 128, FFN 256, vocab 300,
// tied embeddings) in one F32 safetensors file; no tokenizer files.
inline void WriteHfCheckpoint(const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json")
      << R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
        "head_dim": 128, "intermediate_size": 256, "vocab_size": 300,
        "max_position_embeddings": 1024, "rms_norm_eps": 1e-06, "hidden_act": "silu",
        "attention_bias": false, "use_sliding_window": false, "tie_word_embeddings": true,
        "rope_theta": 1000000.0})";
  const int64_t e = 256, d = 128, f = 256, v = 300;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {v, e}},
      {"model.norm.weight", {e}},
      {"model.layers.0.input_layernorm.weight", {e}},
      {"model.layers.0.self_attn.q_proj.weight", {2 * d, e}},
      {"model.layers.0.self_attn.k_proj.weight", {d, e}},
      {"model.layers.0.self_attn.v_proj.weight", {d, e}},
      {"model.layers.0.self_attn.o_proj.weight", {e, 2 * d}},
      {"model.layers.0.self_attn.q_norm.weight", {d}},
      {"model.layers.0.self_attn.k_norm.weight", {d}},
      {"model.layers.0.post_attention_layernorm.weight", {e}},
      {"model.layers.0.mlp.gate_proj.weight", {f, e}},
      {"model.layers.0.mlp.up_proj.weight", {f, e}},
      {"model.layers.0.mlp.down_proj.weight", {e, f}},
  };
  std::vector<gguf::testing::StEntry> entries;
  for (const auto& [name, shape] : shapes) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>((i * 7919) % 2001 - 1000) / 4096.0f;
    entries.push_back({name, "F32", shape, gguf::testing::F32Bytes(values)});
  }
  gguf::testing::WriteBytes(dir + "/model.safetensors", gguf::testing::BuildSafetensors(entries));
}

// Copies the GGUF at `in` to `out` with its tokenizer data changed by `edit` (metadata other
// than tokenizer.* and every tensor copied as they are).
inline void RewriteGgufTokenizer(const std::string& in, const std::string& out,
                                 const std::function<void(gguf::TokenizerData&)>& edit) {
  auto file = gguf::GgufFile::Open(in);
  ASSERT_TRUE(file.ok()) << file.status();
  auto tok = gguf::ReadTokenizerData(**file);
  ASSERT_TRUE(tok.ok()) << tok.status();
  edit(*tok);
  gguf::GgufWriter w((*file)->alignment());
  for (const gguf::KeyValue& kv : (*file)->metadata()) {
    if (kv.key.starts_with("tokenizer.") || kv.key == "general.alignment") continue;
    w.SetValue(kv.key, kv.value);
  }
  gguf::WriteTokenizerData(*tok, w);
  for (const gguf::TensorInfo& t : (*file)->tensors()) {
    const auto data = (*file)->TensorData(t);
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    ASSERT_TRUE(w.AddTensor(t.name, t.type, ne, std::vector<uint8_t>(data.begin(), data.end())).ok());
  }
  ASSERT_TRUE(w.Write(out).ok());
}

// A folder per test with the inputs and hostile paths; Snapshot() and Unchanged() show that a
// run left every input as it was, and NewNames() what it added.
class ToolsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "jllm_tools_" + info->test_suite_name() + "_" + info->name() +
           "_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ToolResult synth = Run(JLLM_SYNTH_PATH, {"--preset", "tiny", "--type", "q8_0", "--seed", "3",
                                             "-o", P("m.gguf")});
    ASSERT_EQ(synth.exit_code, 0) << synth.Describe();
    ToolResult compile = Run(JLLM_COMPILE_PATH, {P("m.gguf"), "-o", P("m.plan")});
    ASSERT_EQ(compile.exit_code, 0) << compile.Describe();
    WriteFile(P("passes.yaml"), "passes:\n  fuse-swiglu: false\n");
    WriteFile(P("prompt.txt"), "Hello from a file");
    WriteFile(P("ids.txt"), "72 101 108 108 111\n");
    WriteFile(P("text.jsonl"), "{\"text\": \"hello\"}\n{\"text\": \"world\"}\n");
    WriteHfCheckpoint(P("ck"));
    std::filesystem::create_directories(P("d"));
    ASSERT_EQ(mkfifo(P("fifo").c_str(), 0644), 0);
    ASSERT_EQ(symlink("m.gguf", P("link.gguf").c_str()), 0);
    baseline_ = Snapshot();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string P(const std::string& name) const { return dir_ + "/" + name; }

  static ToolResult Run(const std::string& tool, const std::vector<std::string>& args,
                        const ToolRunOptions& o = {}) {
    return RunTool(tool, args, o);
  }

  // Every path in the folder (ck/ included) and its state.
  std::map<std::string, FileState> Snapshot() const {
    std::map<std::string, FileState> s;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir_)) {
      const std::string rel = e.path().lexically_relative(dir_).string();  // links not followed
      s[rel] = StateOf(e.path().string());
    }
    return s;
  }
  // The inputs present at SetUp, each as it was; `what` says which run is checked.
  void ExpectInputsUnchanged(const std::string& what) const {
    const auto now = Snapshot();
    for (const auto& [name, state] : baseline_) {
      auto it = now.find(name);
      ASSERT_TRUE(it != now.end()) << what << ": input " << name << " is gone";
      EXPECT_TRUE(it->second == state) << what << ": input " << name << " was changed";
    }
  }
  // Names present now that were not at SetUp.
  std::set<std::string> NewNames() const {
    std::set<std::string> names;
    for (const auto& [name, state] : Snapshot()) {
      if (!baseline_.contains(name)) names.insert(name);
    }
    return names;
  }
  // Removes what runs added, back to the SetUp state.
  void RemoveNewNames() const {
    for (const std::string& name : NewNames()) std::filesystem::remove_all(P(name));
  }

  std::string dir_;
  std::map<std::string, FileState> baseline_;
};

}  // namespace jllm::testing
