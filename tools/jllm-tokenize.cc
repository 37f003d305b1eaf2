// jllm-tokenize: encode text with a model's tokenizer.
//   jllm-tokenize MODEL.gguf -p "Hello"          one "id -> 'piece'" line per token
//   echo Hello | jllm-tokenize MODEL.gguf --ids  one line of space-separated ids
//   jllm-tokenize MODEL.gguf --jsonl in.jsonl    each {"text": ...} line echoed with "ids" added
//   jllm-tokenize MODEL.gguf --bench big.txt     encode throughput in MB/s
// --hf-tokenizer DIR reads a Hugging Face tokenizer folder instead of a GGUF file.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/tokenizer_data.h"
#include "nlohmann/json.hpp"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/utf8.h"

namespace {

using jllm::runtime::EncodeOptions;
using jllm::runtime::Tokenizer;

[[noreturn]] void Die(const std::string& message) {
  std::cerr << "jllm-tokenize: " << message << "\n";
  std::exit(1);
}

template <typename T>
T ValueOrDie(absl::StatusOr<T> v) {
  if (!v.ok()) Die(std::string(v.status().message()));
  return *std::move(v);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// A token's bytes made readable: control characters and bytes that are not (yet) valid UTF-8
// are escaped, so a piece holding part of a character still prints on one line.
std::string Printable(const std::string& bytes) {
  std::string out;
  size_t i = 0;
  char buf[8];
  while (i < bytes.size()) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n') { out += "\\n"; ++i; continue; }
    if (c == '\t') { out += "\\t"; ++i; continue; }
    if (c == '\r') { out += "\\r"; ++i; continue; }
    if (c == '\\') { out += "\\\\"; ++i; continue; }
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
      ++i;
      continue;
    }
    const size_t len = c < 0x80 ? 1 : jllm::runtime::WellFormedSequenceLength(std::string_view(bytes).substr(i));
    if (len == 0) {
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
      ++i;
    } else {
      out.append(bytes, i, len);
      i += len;
    }
  }
  return out;
}

void PrintTokens(const Tokenizer& tok, const std::vector<int32_t>& ids, bool ids_only) {
  if (ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
    return;
  }
  for (int32_t id : ids) std::cout << id << " -> '" << Printable(tok.TokenBytes(id)) << "'\n";
}

int RunJsonl(const Tokenizer& tok, const std::string& path, const EncodeOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die(path + ": cannot open");
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.empty()) continue;
    nlohmann::ordered_json row = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded() || !row.is_object() || !row.contains("text") || !row["text"].is_string()) {
      Die(path + ":" + std::to_string(line_no) + ": expected an object with a string \"text\"");
    }
    row["ids"] = ValueOrDie(tok.Encode(row["text"].get<std::string>(), options));
    std::cout << row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }
  return 0;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Wall time and this thread's CPU time: on a busy machine the CPU figure is the one-core speed.
int RunBench(Tokenizer& tok, const std::string& path, const EncodeOptions& options, double seconds) {
  std::string text;
  if (!ReadFile(path, &text)) Die(path + ": cannot read");
  const double mb = static_cast<double>(text.size()) / 1e6;
  using Clock = std::chrono::steady_clock;
  size_t n_tokens = 0;
  const auto encode_once = [&](double* cpu) {
    const auto start = Clock::now();
    const double cpu_start = ThreadCpuSeconds();
    n_tokens = ValueOrDie(tok.Encode(text, options)).size();
    *cpu += ThreadCpuSeconds() - cpu_start;
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double first_cpu = 0;
  const double first = encode_once(&first_cpu);  // cold: the word cache starts empty
  double total = 0, total_cpu = 0;
  int runs = 0;
  while (total < seconds || runs < 3) {
    total += encode_once(&total_cpu);
    ++runs;
  }
  std::printf("file: %s (%.2f MB, %zu tokens, %.2f bytes/token)\n", path.c_str(), mb, n_tokens,
              static_cast<double>(text.size()) / static_cast<double>(n_tokens));
  std::printf("first pass (cold word cache): %.2f MB/s wall, %.2f MB/s CPU\n", mb / first, mb / first_cpu);
  std::printf("steady state (%d passes): %.2f MB/s wall, %.2f MB/s CPU, %.2f Mtokens/s CPU\n", runs,
              mb * runs / total, mb * runs / total_cpu, static_cast<double>(n_tokens) * runs / total_cpu / 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Encode text with a model's tokenizer (GGUF tokenizer.ggml.* metadata)."};
  std::string model_path, hf_dir, prompt, jsonl_path, bench_path;
  bool ids_only = false, no_parse_special = false, no_cache = false;
  double bench_seconds = 3.0;
  app.add_option("model", model_path, "GGUF file whose tokenizer to use");
  app.add_option("--hf-tokenizer", hf_dir, "use a Hugging Face tokenizer folder instead of a GGUF file");
  app.add_option("-p,--prompt", prompt, "text to encode (default: standard input)");
  app.add_flag("--ids", ids_only, "print only the ids, space-separated on one line");
  app.add_flag("--no-parse-special", no_parse_special, "encode control-token text such as <|im_start|> as plain text");
  app.add_option("--jsonl", jsonl_path, "encode each {\"text\": ...} line, printing it back with \"ids\" added");
  app.add_option("--bench", bench_path, "measure encode throughput on this file");
  app.add_option("--bench-seconds", bench_seconds, "how long to measure (default 3)");
  app.add_flag("--no-cache", no_cache, "disable the BPE word cache (for --bench)");
  CLI11_PARSE(app, argc, argv);

  if (model_path.empty() == hf_dir.empty()) Die("give either MODEL.gguf or --hf-tokenizer DIR");
  jllm::gguf::TokenizerData data;
  if (!hf_dir.empty()) {
    data = ValueOrDie(jllm::gguf::ImportHfTokenizer(hf_dir, 0));
  } else {
    auto file = ValueOrDie(jllm::gguf::GgufFile::Open(model_path));
    data = ValueOrDie(jllm::gguf::ReadTokenizerData(*file));
  }
  std::unique_ptr<Tokenizer> tok = ValueOrDie(Tokenizer::Create(data));
  if (no_cache) tok->set_bpe_cache_enabled(false);
  const EncodeOptions options{.parse_special = !no_parse_special};

  if (!jsonl_path.empty()) return RunJsonl(*tok, jsonl_path, options);
  if (!bench_path.empty()) return RunBench(*tok, bench_path, options, bench_seconds);
  if (app.count("--prompt") == 0) {
    std::ostringstream in;
    in << std::cin.rdbuf();
    prompt = in.str();
  }
  PrintTokens(*tok, ValueOrDie(tok->Encode(prompt, options)), ids_only);
  return 0;
}
