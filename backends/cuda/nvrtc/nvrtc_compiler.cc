#include "backends/cuda/nvrtc/nvrtc_compiler.h"

#include <cctype>
#include <cstdlib>

#include <nvrtc.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/absl_compat.h"
#include "backends/cuda/nvrtc/nvrtc_status.h"
#include "ir/status.h"

namespace jllm::cuda {
namespace {

// Owns an nvrtcProgram for the length of one compilation.
class Program {
 public:
  explicit Program(nvrtcProgram program) : program_(program) {}
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() { nvrtcDestroyProgram(&program_); }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_;
};

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateArch(std::string_view arch) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU architecture '", Sv(arch), "': ", Sv(why), " (expected e.g. sm_87 or sm_90)"));
  };
  if (arch.substr(0, 3) != "sm_") return bad("does not start with sm_");
  std::string_view rest = arch.substr(3);
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  if (digits < 2 || digits > 3) return bad("needs a 2- or 3-digit compute capability");
  const std::string_view suffix = rest.substr(digits);
  if (!(suffix.empty() || suffix == "a" || suffix == "f")) return bad("unknown suffix");
  const int number = std::atoi(std::string(rest.substr(0, digits)).c_str());
  if (number < 80) return bad("jllm kernels need sm_80 or newer (cp.async)");
  return absl::OkStatus();
}

std::vector<std::string> NvrtcFlags(const NvrtcOptions& options) {
  std::vector<std::string> flags = {
      absl::StrCat("--gpu-architecture=", options.arch),
      "--std=c++17",
      "--device-as-default-execution-space",
      // Line tables let profilers and compute-sanitizer point at kernel source lines.
      "--generate-line-info",
  };
  for (const auto& [name, value] : options.defines) {
    flags.push_back(absl::StrCat("-D", name, "=", value));
  }
  if (options.ptxas_verbose) flags.push_back("--ptxas-options=-v");
  return flags;
}

std::string NvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

bool LooksLikeCubin(std::string_view image) {
  return image.size() >= 4 && image.substr(0, 4) == std::string_view("\x7f" "ELF", 4);
}

absl::StatusOr<CompiledCubin> CompileSource(std::string_view name, std::string_view source,
                                            absl::Span<const KernelSourceFile> headers,
                                            const NvrtcOptions& options) {
  RETURN_IF_ERROR(ValidateArch(options.arch));
  for (const auto& define : options.defines) {
    if (!IsIdentifier(define.first)) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", Sv(name), ": bad -D name '", define.first, "'"));
    }
  }
  const std::string name_z(name);
  const std::string source_z(source);
  std::vector<std::string> header_texts, header_names;
  for (const KernelSourceFile& header : headers) {
    header_texts.emplace_back(header.text);
    header_names.emplace_back(header.name);
  }
  std::vector<const char*> header_text_ptrs, header_name_ptrs;
  for (size_t i = 0; i < headers.size(); ++i) {
    header_text_ptrs.push_back(header_texts[i].c_str());
    header_name_ptrs.push_back(header_names[i].c_str());
  }

  nvrtcProgram raw = nullptr;
  RETURN_IF_ERROR(NvrtcStatus(
      nvrtcCreateProgram(&raw, source_z.c_str(), name_z.c_str(), static_cast<int>(headers.size()),
                         header_text_ptrs.data(), header_name_ptrs.data()),
      absl::StrCat("creating program ", Sv(name))));
  Program program(raw);

  const std::vector<std::string> flags = NvrtcFlags(options);
  std::vector<const char*> flag_ptrs;
  for (const std::string& flag : flags) flag_ptrs.push_back(flag.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(program.get(), static_cast<int>(flag_ptrs.size()), flag_ptrs.data());
  CompiledCubin out;
  out.log = ProgramLog(program.get());
  if (compiled != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NVRTC could not compile kernel ", Sv(name), " for ", options.arch, " (",
        nvrtcGetErrorString(compiled), ") with flags [", absl::StrJoin(flags, " "), "]:\n",
        out.log));
  }
  size_t size = 0;
  RETURN_IF_ERROR(NvrtcStatus(nvrtcGetCUBINSize(program.get(), &size),
                              absl::StrCat("CUBIN size of ", Sv(name))));
  if (size == 0) {
    return absl::InternalError(absl::StrCat("NVRTC produced an empty CUBIN for kernel ", Sv(name),
                                            " (arch ", options.arch, ")"));
  }
  out.cubin.resize(size);
  RETURN_IF_ERROR(
      NvrtcStatus(nvrtcGetCUBIN(program.get(), out.cubin.data()), absl::StrCat("CUBIN of ", Sv(name))));
  return out;
}

absl::StatusOr<CompiledCubin> CompileKernel(std::string_view source_name,
                                            const NvrtcOptions& options) {
  ASSIGN_OR_RETURN(std::string_view source, FindKernelSource(source_name));
  const std::vector<KernelSourceFile> headers = KernelHeaders();
  return CompileSource(source_name, source, headers, options);
}

}  // namespace jllm::cuda
