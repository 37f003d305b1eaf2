#include "runtime/plan_weights.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/status.h"

namespace jllm::runtime {

PlanWeights::PlanWeights(std::unique_ptr<MappedFile> file, uint64_t data_offset,
                         std::vector<TensorHash> tensors, std::string plan_path)
    : file_(std::move(file)),
      blob_(file_->bytes().subspan(data_offset)),
      source_(blob_),
      tensors_(std::move(tensors)),
      verified_(new std::atomic<bool>[tensors_.size()]),
      plan_path_(std::move(plan_path)) {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    tensor_at_.emplace(tensors_[i].offset, i);
    verified_[i].store(false, std::memory_order_relaxed);
  }
}

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
  RETURN_IF_ERROR(CheckGgufFingerprint(want, got, path, plan_path,
                                       path_override.empty() ? "" : info.gguf_path));
  return std::unique_ptr<PlanWeights>(
      new PlanWeights(*std::move(file), want.data_offset, info.tensors, plan_path));
}

absl::Status PlanWeights::CheckTensor(const ir::WeightRef& w,
                                      absl::Span<const uint8_t> bytes) const {
  if (tensors_.empty()) return absl::OkStatus();
  const auto it = tensor_at_.find(w.offset);
  if (it == tensor_at_.end() || tensors_[it->second].nbytes != w.nbytes) {
    return absl::DataLossError(absl::StrCat(
        plan_path_, ": tensor '", w.name, "' has no recorded hash (the plan's graph and weight "
        "list disagree). Re-run `jllm-compile ", path(), " -o ", plan_path_, "`"));
  }
  const size_t i = it->second;
  if (verified_[i].load(std::memory_order_acquire)) return absl::OkStatus();
  const uint64_t got = TensorBytesHash(bytes);
  if (got != tensors_[i].xxh3) {
    return absl::DataLossError(absl::StrFormat(
        "%s: tensor '%s' differs from the one %s was compiled with (XXH3 %016x, recorded "
        "%016x): the model file changed after jllm-compile. Re-run `jllm-compile %s -o %s`",
        path(), w.name, plan_path_, got, tensors_[i].xxh3, path(), plan_path_));
  }
  verified_[i].store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const uint8_t>> PlanWeights::Bytes(const ir::WeightRef& w) const {
  auto bytes = source_.Bytes(w);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat(path(), ": ", bytes.status().message()));
  RETURN_IF_ERROR(CheckTensor(w, *bytes));
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
                                                     uint64_t data_offset,
                                                     absl::Span<const ir::WeightRef> tensors) {
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(path, ": ", ec.message()));
  WeightSourceInfo info;
  info.gguf_path = abs.lexically_normal().string();
  ASSIGN_OR_RETURN(info.fingerprint, ComputeGgufFingerprint(file_bytes, data_offset));
  auto hashes = HashTensors(tensors, file_bytes.subspan(data_offset));
  if (!hashes.ok()) return absl::Status(hashes.status().code(), absl::StrCat(path, ": ", hashes.status().message()));
  info.tensors = *std::move(hashes);
  return info;
}

}  // namespace jllm::runtime
