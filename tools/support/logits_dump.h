// jllm-run --dump-logits FILE: float32 rows [positions x n_vocab] in FILE, and FILE.json with
// the shape and the token id of every row. Both are fileio::OutputFiles: created (and checked
// against the run's inputs) before the run starts, committed together at the end, so a failed
// run leaves neither a partial dump nor a temporary file.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fileio/output_file.h"

namespace jllm::tools {

class LogitsDump {
 public:
  // `inputs`: every file the run reads (plan, GGUF, prompt files); neither output may be one.
  static absl::StatusOr<std::unique_ptr<LogitsDump>> Create(const std::string& path,
                                                            int64_t n_vocab,
                                                            absl::Span<const std::string> inputs);

  // Appends one row; a write error is kept and returned by Finish.
  void Add(int32_t token, absl::Span<const float> row);
  absl::Status Finish();

 private:
  LogitsDump() = default;
  std::unique_ptr<fileio::OutputFile> data_, side_;
  int64_t n_vocab_ = 0;
  std::vector<int32_t> token_ids_;
  absl::Status error_;
};

}  // namespace jllm::tools
