#include "backends/cuda/lowering/kernel_spec.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/absl_compat.h"
#include "ir/fields.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  }
  return true;
}

}  // namespace

std::string KernelSpec::ModuleKey() const { return absl::StrCat(source, "|", kernel, "|", defines); }

int64_t KernelSpec::PersistentGridX(int resident, int sm_count) const {
  const int64_t per_sm = max_per_sm > 0 ? std::min<int64_t>(resident, max_per_sm) : resident;
  return std::clamp<int64_t>(per_sm * sm_count, min_grid_x, grid_x);
}

std::vector<std::pair<std::string, std::string>> KernelSpec::DefineList() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view item : absl::StrSplit(defines, ' ', absl::SkipEmpty())) {
    const size_t eq = item.find('=');
    out.emplace_back(std::string(item.substr(0, eq)),
                     eq == absl::string_view::npos ? "1" : std::string(item.substr(eq + 1)));
  }
  return out;
}

int64_t KernelSpec::GridX(int64_t n_tokens) const {
  return token_dim == 1 ? grid_x * ((n_tokens + token_tile - 1) / token_tile) : grid_x;
}
int64_t KernelSpec::GridY(int64_t n_tokens) const {
  return token_dim == 2 ? grid_y * ((n_tokens + token_tile - 1) / token_tile) : grid_y;
}

std::string KernelSpecToText(const KernelSpec& spec) { return ir::fields::ToText(spec); }

void WriteKernelSpec(const KernelSpec& spec, ir::ByteWriter& w) { ir::fields::Write(spec, w); }

absl::StatusOr<KernelSpec> ReadKernelSpec(ir::ByteReader& r) {
  KernelSpec spec;
  RETURN_IF_ERROR(ir::fields::Read(r, &spec));
  RETURN_IF_ERROR(ValidateKernelSpec(spec));
  return spec;
}

absl::Status ValidateKernelSpec(const KernelSpec& spec) {
  auto bad = [&](std::string why) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel spec '", spec.label, "' (", spec.source, "): ", why));
  };
  if (spec.source.size() < 4 || spec.source.substr(spec.source.size() - 3) != ".cu" ||
      spec.source.find('/') != std::string::npos) {
    return bad("source must be a kernel file name like gemv.cu");
  }
  if (!IsIdentifier(spec.kernel)) return bad("kernel must be a C identifier");
  for (absl::string_view item : absl::StrSplit(spec.defines, ' ', absl::SkipEmpty())) {
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos || !IsIdentifier(item.substr(0, eq)) || eq + 1 == item.size()) {
      return bad(absl::StrCat("define '", item, "' is not NAME=VALUE"));
    }
  }
  if (spec.threads < 1 || spec.threads > 1024 || spec.threads % 32 != 0) {
    return bad(absl::StrCat("threads = ", spec.threads, " (must be a multiple of 32 in 32..1024)"));
  }
  if (spec.grid_x < 1 || spec.grid_x > (int64_t{1} << 31) - 1 || spec.grid_y < 1 ||
      spec.grid_y > 65535) {
    return bad(absl::StrCat("grid ", spec.grid_x, "x", spec.grid_y, " is outside CUDA's limits"));
  }
  if (spec.token_dim < 0 || spec.token_dim > 2 || spec.token_tile < 1) {
    return bad(absl::StrCat("token_dim = ", spec.token_dim, ", token_tile = ", spec.token_tile));
  }
  if (spec.max_per_sm < 0 || spec.max_per_sm > 64) {
    return bad(absl::StrCat("max_per_sm = ", spec.max_per_sm, " (must be in 0..64)"));
  }
  if (spec.smem < 0 || spec.smem > (int64_t{1} << 20)) {
    return bad(absl::StrCat("dynamic shared memory of ", spec.smem, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace jllm::cuda
