// jllm-tokenize: encode text with a model's tokenizer.
//   jllm-tokenize MODEL.gguf -p "Hello"          one "id -> 'piece'" line per token
//   echo Hello | jllm-tokenize MODEL.gguf --ids  one line of space-separated ids
//   jllm-tokenize MODEL.gguf --jsonl in.jsonl    each {"text": ...} line echoed with "ids" added
//   jllm-tokenize MODEL.gguf --bench big.txt     encode throughput in MB/s
// --hf-tokenizer DIR reads a Hugging Face tokenizer folder instead of a GGUF file.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "fileio/read_file.h"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/tokenizer_data.h"
#include "nlohmann/json.hpp"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/utf8.h"
#include "tools/support/flag_checks.h"
#include "tools/support/tool_main.h"

namespace {

using jllm::runtime::EncodeOptions;
using jllm::runtime::Tokenizer;

using jllm::tools::Fail;

// Bench and --jsonl inputs are read whole; a text corpus larger than this is not meant.
constexpr uint64_t kMaxInputBytes = uint64_t{1} << 30;

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

// The first byte offset of `s` that does not start a well-formed UTF-8 sequence, or npos.
size_t FirstInvalidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = static_cast<unsigned char>(s[i]) < 0x80
                           ? 1
                           : jllm::runtime::WellFormedSequenceLength(s.substr(i));
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

int RunJsonl(const Tokenizer& tok, const std::string& path, const EncodeOptions& options) {
  auto text = jllm::fileio::ReadFile(path, "--jsonl file", kMaxInputBytes);
  if (!text.ok()) return Fail(text.status());
  int line_no = 0, rows = 0;
  for (absl::string_view piece : absl::StrSplit(*text, '\n')) {
    std::string_view line(piece.data(), piece.size());
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_no);
    if (const size_t bad = FirstInvalidUtf8(line); bad != std::string_view::npos) {
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(line[bad]));
      return Fail(where + ": not valid UTF-8 (byte " + byte + " at column " +
                  std::to_string(bad + 1) + "); JSON text must be UTF-8");
    }
    nlohmann::ordered_json row =
        nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded()) return Fail(where + ": not valid JSON");
    if (!row.is_object() || !row.contains("text") || !row["text"].is_string()) {
      return Fail(where + ": expected an object with a string \"text\"");
    }
    auto ids = tok.Encode(row["text"].get<std::string>(), options);
    if (!ids.ok()) return Fail(where + ": " + std::string(ids.status().message()));
    row["ids"] = *ids;
    ++rows;
    std::cout << row.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }
  if (rows == 0) return Fail(path + ": no JSON lines (the --jsonl file is empty)");
  return 0;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Wall time and this thread's CPU time: on a busy machine the CPU figure is the one-core speed.
int RunBench(Tokenizer& tok, const std::string& path, const EncodeOptions& options, double seconds) {
  auto read = jllm::fileio::ReadFile(path, "--bench file", kMaxInputBytes);
  if (!read.ok()) return Fail(read.status());
  const std::string& text = *read;
  if (text.empty()) return Fail(path + ": the --bench file is empty");
  const double mb = static_cast<double>(text.size()) / 1e6;
  using Clock = std::chrono::steady_clock;
  size_t n_tokens = 0;
  absl::Status error;
  const auto encode_once = [&](double* cpu) {
    const auto start = Clock::now();
    const double cpu_start = ThreadCpuSeconds();
    auto ids = tok.Encode(text, options);
    if (ids.ok()) {
      n_tokens = ids->size();
    } else {
      error = ids.status();
    }
    *cpu += ThreadCpuSeconds() - cpu_start;
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double first_cpu = 0;
  const double first = encode_once(&first_cpu);  // cold: the word cache starts empty
  if (!error.ok()) return Fail(path + ": " + std::string(error.message()));
  double total = 0, total_cpu = 0;
  int runs = 0;
  while (total < seconds || runs < 3) {
    total += encode_once(&total_cpu);
    ++runs;
  }
  std::printf("file: %s (%.2f MB, %zu tokens, %.2f bytes/token)\n", path.c_str(), mb, n_tokens,
              static_cast<double>(text.size()) / static_cast<double>(std::max<size_t>(1, n_tokens)));
  std::printf("first pass (cold word cache): %.2f MB/s wall, %.2f MB/s CPU\n", mb / first, mb / first_cpu);
  std::printf("steady state (%d passes): %.2f MB/s wall, %.2f MB/s CPU, %.2f Mtokens/s CPU\n", runs,
              mb * runs / total, mb * runs / total_cpu, static_cast<double>(n_tokens) * runs / total_cpu / 1e6);
  return 0;
}


// How long --bench may measure at most: long enough for any real measurement.
constexpr double kMaxBenchSeconds = 3600;

int Main(int argc, char** argv) {
  CLI::App app{"Encode text with a model's tokenizer (GGUF tokenizer.ggml.* metadata)."};
  std::string model_path, hf_dir, prompt, jsonl_path, bench_path;
  bool ids_only = false, no_parse_special = false, no_cache = false;
  double bench_seconds = 3.0;
  app.add_option("model", model_path, "GGUF file whose tokenizer to use");
  app.add_option("--hf-tokenizer", hf_dir, "use a Hugging Face tokenizer folder instead of a GGUF file");
  app.add_option("-p,--prompt", prompt, "text to encode (default: standard input)");
  app.add_flag("--ids", ids_only, "print only the ids, space-separated on one line");
  app.add_flag("--no-parse-special", no_parse_special, "encode control-token text such as <|im_start|> as plain text");
  app.add_option("--jsonl", jsonl_path, "encode each {\"text\": ...} line, printing it back with \"ids\" added")
      ->check(jllm::tools::NonEmpty("a file"));
  app.add_option("--bench", bench_path, "measure encode throughput on this file")
      ->check(jllm::tools::NonEmpty("a file"));
  app.add_option("--bench-seconds", bench_seconds, "how long to measure (default 3)")
      ->check(jllm::tools::RealRange(0, kMaxBenchSeconds, /*min_exclusive=*/true, "seconds"));
  app.add_flag("--no-cache", no_cache, "disable the BPE word cache (for --bench)");
  CLI11_PARSE(app, argc, argv);

  if (model_path.empty() == hf_dir.empty()) return Fail("give either MODEL.gguf or --hf-tokenizer DIR");
  if (!jsonl_path.empty() && !bench_path.empty()) return Fail("give --jsonl or --bench, not both");
  if (app.count("--prompt") > 0 && (!jsonl_path.empty() || !bench_path.empty())) {
    return Fail("-p cannot be combined with --jsonl or --bench (they read their own file)");
  }
  if (app.count("--bench-seconds") > 0 && bench_path.empty()) return Fail("--bench-seconds needs --bench FILE");
  jllm::gguf::TokenizerData data;
  if (!hf_dir.empty()) {
    auto imported = jllm::gguf::ImportHfTokenizer(hf_dir, 0);
    if (!imported.ok()) return Fail(imported.status());
    data = *std::move(imported);
  } else {
    auto file = jllm::gguf::GgufFile::Open(model_path);
    if (!file.ok()) return Fail(file.status());
    auto read = jllm::gguf::ReadTokenizerData(**file);
    if (!read.ok()) return Fail(read.status());
    data = *std::move(read);
  }
  auto created = Tokenizer::Create(data);
  if (!created.ok()) return Fail((hf_dir.empty() ? model_path : hf_dir) + ": " + std::string(created.status().message()));
  std::unique_ptr<Tokenizer> tok = *std::move(created);
  if (no_cache) tok->set_bpe_cache_enabled(false);
  const EncodeOptions options{.parse_special = !no_parse_special};

  if (!jsonl_path.empty()) return RunJsonl(*tok, jsonl_path, options);
  if (!bench_path.empty()) return RunBench(*tok, bench_path, options, bench_seconds);
  if (app.count("--prompt") == 0) {
    auto in = jllm::fileio::ReadStdin("text to encode", kMaxInputBytes);
    if (!in.ok()) return Fail(in.status());
    prompt = *std::move(in);
  }
  auto ids = tok->Encode(prompt, options);
  if (!ids.ok()) return Fail(ids.status());
  PrintTokens(*tok, *ids, ids_only);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-tokenize", argc, argv, Main); }
