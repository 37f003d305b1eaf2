// jllm-inspect: shows what a GGUF file holds (header, metadata, tensor table, like gguf-dump),
// or one tensor's values dequantized, one row per line.
//
//   jllm-inspect model.gguf
//   jllm-inspect model.gguf --tensor blk.0.attn_norm.weight --rows 0:1
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "frontends/gguf/gguf_file.h"
#include "frontends/gguf/gguf_format.h"
#include "quant/quant.h"
#include "tools/support/flag_checks.h"
#include "tools/support/tool_main.h"

namespace {

using jllm::gguf::GgufFile;
using jllm::gguf::TensorInfo;

int Fail(const std::string& message) { return jllm::tools::Fail(message); }

void PrintSummary(const GgufFile& f, size_t max_items) {
  std::printf("%s: GGUF v%u, %llu bytes, alignment %u, tensor data at offset %llu\n",
              f.path().c_str(), f.version(), static_cast<unsigned long long>(f.file_size()),
              f.alignment(), static_cast<unsigned long long>(f.data_offset()));

  std::printf("\nmetadata: %zu keys\n", f.metadata().size());
  size_t key_width = 3;
  for (const auto& kv : f.metadata()) key_width = std::max(key_width, kv.key.size());
  for (const auto& kv : f.metadata()) {
    std::printf("  %-*s  %-9s  %s\n", static_cast<int>(key_width), kv.key.c_str(),
                jllm::gguf::ValueTypeLabel(kv.value).c_str(),
                jllm::gguf::FormatValue(kv.value, max_items).c_str());
  }

  std::printf("\ntensors: %zu\n", f.tensors().size());
  size_t name_width = 4, shape_width = 5;
  for (const TensorInfo& t : f.tensors()) {
    name_width = std::max(name_width, t.name.size());
    shape_width = std::max(shape_width, jllm::gguf::ShapeString(t).size());
  }
  std::printf("  %5s  %-*s  %-7s  %-*s  %14s  %14s  %14s\n", "#", static_cast<int>(name_width),
              "name", "type", static_cast<int>(shape_width), "shape", "elements", "bytes",
              "offset");
  unsigned long long total_elements = 0, total_bytes = 0;
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    const std::string type(jllm::GgmlTypeName(t.type));
    std::printf("  %5zu  %-*s  %-7s  %-*s  %14lld  %14llu  %14llu\n", i,
                static_cast<int>(name_width), t.name.c_str(), type.c_str(),
                static_cast<int>(shape_width), jllm::gguf::ShapeString(t).c_str(),
                static_cast<long long>(t.n_elements()), static_cast<unsigned long long>(t.nbytes),
                static_cast<unsigned long long>(t.offset));
    total_elements += static_cast<unsigned long long>(t.n_elements());
    total_bytes += t.nbytes;
  }
  const double bpw = total_elements > 0 ? 8.0 * total_bytes / total_elements : 0.0;
  std::printf("\ntotal: %zu tensors, %llu elements, %llu bytes (%.3f bits per weight)\n",
              f.tensors().size(), total_elements, total_bytes, bpw);
}

// Parses "A:B", "A:", ":B" or "A" (one row) into [begin, end) within [0, rows].
std::optional<std::pair<int64_t, int64_t>> ParseRows(const std::string& spec, int64_t rows) {
  auto number = [](std::string_view s, int64_t fallback) -> std::optional<int64_t> {
    if (s.empty()) return fallback;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
  };
  const size_t colon = spec.find(':');
  std::optional<int64_t> begin, end;
  if (colon == std::string::npos) {
    begin = number(spec, -1);
    if (begin && *begin >= 0) end = *begin + 1;
  } else {
    begin = number(std::string_view(spec).substr(0, colon), 0);
    end = number(std::string_view(spec).substr(colon + 1), rows);
  }
  if (!begin || !end || *begin < 0 || *begin > *end || *end > rows) return std::nullopt;
  return std::make_pair(*begin, *end);
}

int PrintTensor(const GgufFile& f, const std::string& name, const std::string& rows_spec) {
  const TensorInfo* t = f.FindTensor(name);
  if (t == nullptr) {
    return Fail(f.path() + ": no tensor named '" + name + "' (" +
                std::to_string(f.tensors().size()) + " tensors; run without --tensor to list them)");
  }
  const int64_t row_len = t->ne[0];
  const int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
  std::pair<int64_t, int64_t> range{0, rows};
  if (!rows_spec.empty()) {
    auto r = ParseRows(rows_spec, rows);
    if (!r) {
      return Fail("--rows '" + rows_spec + "' is not A:B with 0 <= A <= B <= " +
                  std::to_string(rows) + " (tensor '" + name + "' has " + std::to_string(rows) +
                  " rows)");
    }
    range = *r;
  }
  const int64_t row_bytes = jllm::RowBytes(t->type, row_len);
  const auto data = f.TensorData(*t);
  std::vector<float> values(static_cast<size_t>(row_len));
  for (int64_t r = range.first; r < range.second; ++r) {
    const uint8_t* src = data.data() + r * row_bytes;
    absl::Status s = jllm::quant::DequantizeRow(t->type, src, values.data(), row_len);
    if (!s.ok()) return Fail(f.path() + ": tensor '" + name + "': " + std::string(s.message()));
    std::string line;
    char buf[32];
    for (int64_t i = 0; i < row_len; ++i) {
      auto res = std::to_chars(buf, buf + sizeof(buf), values[static_cast<size_t>(i)]);
      if (i > 0) line += ' ';
      line.append(buf, res.ptr);
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

int Main(int argc, char** argv) {
  CLI::App app{"Shows a GGUF file's header, metadata and tensor table, or one tensor's values."};
  std::string path, tensor, rows;
  size_t max_items = 8;
  app.add_option("file", path, "GGUF file")->required();
  app.add_option("--tensor", tensor, "print this tensor's values, dequantized, one row per line");
  app.add_option("--rows", rows, "with --tensor: rows A:B (half-open; A:, :B or one row A)");
  app.add_option("--max-items", max_items, "array elements shown per metadata key")
      ->check(jllm::tools::IntRange(0, 1 << 20))
      ->default_val(8);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  if (!rows.empty() && tensor.empty()) return Fail("--rows needs --tensor");

  auto file = GgufFile::Open(path);
  if (!file.ok()) return Fail(std::string(file.status().message()));
  if (!tensor.empty()) return PrintTensor(**file, tensor, rows);
  PrintSummary(**file, max_items);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return jllm::tools::RunTool("jllm-inspect", argc, argv, Main); }
