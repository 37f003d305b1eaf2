#include "runtime/plan_weights.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "ir/status.h"

namespace jllm::runtime {

PlanWeights::PlanWeights(std::unique_ptr<MappedFile> file, uint64_t data_offset)
    : file_(std::move(file)),
      blob_(file_->bytes().subspan(data_offset)),
      source_(blob_) {}

absl::StatusOr<std::unique_ptr<PlanWeights>> PlanWeights::Open(const WeightSourceInfo& info,
                                                               const std::string& plan_path,
                                                               const std::string& path_override) {
  const std::string& path = path_override.empty() ? info.gguf_path : path_override;
  auto file = MappedFile::Open(path);
  if (!file.ok()) {
    if (absl::IsNotFound(file.status())) {
      if (!path_override.empty()) {
        return absl::NotFoundError(absl::StrCat("model file ", path, " does not exist"));
      }
      return absl::NotFoundError(absl::StrCat(
          plan_path, ": the model file it was compiled from, ", path,
          ", is missing (moved or deleted). Re-run `jllm-compile MODEL.gguf -o ", plan_path,
          "`, or pass the model's new path (jllm-run --model PATH)"));
    }
    return file.status();
  }
  const GgufFingerprint& want = info.fingerprint;
  ASSIGN_OR_RETURN(GgufFingerprint got,
                   ComputeGgufFingerprint((*file)->bytes(),
                                          std::min<uint64_t>(want.data_offset,
                                                             (*file)->bytes().size())));
  RETURN_IF_ERROR(CheckGgufFingerprint(want, got, path, plan_path));
  return std::unique_ptr<PlanWeights>(new PlanWeights(*std::move(file), want.data_offset));
}

absl::StatusOr<absl::Span<const uint8_t>> PlanWeights::Bytes(const ir::WeightRef& w) const {
  auto bytes = source_.Bytes(w);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat(path(), ": ", bytes.status().message()));
  return bytes;
}

void PlanWeights::Release(const ir::WeightRef& w, uint64_t begin, uint64_t end) const {
  if (begin >= end || end > w.nbytes) return;
  const uint64_t blob_start = file_->bytes().size() - blob_.size();
  file_->DropPages(blob_start + w.offset + begin, end - begin);
}

void PlanWeights::ReleasePages() const { file_->DropPages(0, file_->bytes().size()); }

absl::StatusOr<WeightSourceInfo> DescribeGgufWeights(const std::string& path,
                                                     absl::Span<const uint8_t> file_bytes,
                                                     uint64_t data_offset) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(path, ": ", ec.message()));
  WeightSourceInfo info;
  info.gguf_path = abs.lexically_normal().string();
  ASSIGN_OR_RETURN(info.fingerprint, ComputeGgufFingerprint(file_bytes, data_offset));
  return info;
}

}  // namespace jllm::runtime
