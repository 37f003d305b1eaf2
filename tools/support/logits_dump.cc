#include "tools/support/logits_dump.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace jllm::tools {

absl::StatusOr<std::unique_ptr<LogitsDump>> LogitsDump::Create(
    const std::string& path, int64_t n_vocab, absl::Span<const std::string> inputs) {
  std::unique_ptr<LogitsDump> d(new LogitsDump());
  d->n_vocab_ = n_vocab;
  auto data = fileio::OutputFile::Create(path, inputs);
  if (!data.ok()) return data.status();
  auto side = fileio::OutputFile::Create(path + ".json", inputs);
  if (!side.ok()) return side.status();
  d->data_ = *std::move(data);
  d->side_ = *std::move(side);
  return d;
}

void LogitsDump::Add(int32_t token, absl::Span<const float> row) {
  if (!error_.ok()) return;
  if (static_cast<int64_t>(row.size()) != n_vocab_) {
    error_ = absl::InternalError(absl::StrCat("a logits row of ", row.size(), " values, not ", n_vocab_));
    return;
  }
  error_ = data_->Write(row.data(), row.size() * sizeof(float));
  token_ids_.push_back(token);
}

absl::Status LogitsDump::Finish() {
  if (!error_.ok()) return error_;
  nlohmann::json j;
  j["shape"] = {token_ids_.size(), n_vocab_};
  j["dtype"] = "float32";
  j["token_ids"] = token_ids_;
  if (absl::Status st = side_->Write(j.dump() + "\n"); !st.ok()) return st;
  if (absl::Status st = data_->Commit(); !st.ok()) return st;
  return side_->Commit();
}

}  // namespace jllm::tools
