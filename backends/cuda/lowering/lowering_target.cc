#include "backends/cuda/lowering/lowering_target.h"

#include <cctype>

namespace jllm::cuda {

LoweringTarget TargetForArch(std::string_view arch) {
  int cc = 0;
  if (arch.substr(0, 3) == "sm_") {
    for (char c : arch.substr(3)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) break;
      cc = 10 * cc + (c - '0');
    }
  }
  switch (cc) {
    case 90:
    case 100:
    case 103:
      return {kSmemPerBlockSm90, kSmsH200, true};
    case 80:
      return {kSmemPerBlockSm80, kSmsA100, false};
    case 87:
      return {kSmemPerBlockSm80, kSmsOrinNano, false};
    default:
      return {kSmemPerBlockSm86, kSmsH200, false};
  }
}

LoweringTarget TargetForDevice(std::string_view identity) {
  const size_t at = identity.find("(sm_");
  if (at == std::string_view::npos) return {};
  LoweringTarget t = TargetForArch(identity.substr(at + 1));
  // ", 132 SMs": the count before " SMs" after the architecture.
  const size_t sms = identity.find(" SMs", at);
  if (sms == std::string_view::npos) return t;
  size_t begin = sms;
  while (begin > at && std::isdigit(static_cast<unsigned char>(identity[begin - 1]))) --begin;
  int n = 0;
  for (size_t i = begin; i < sms && n < 100000; ++i) n = 10 * n + (identity[i] - '0');
  if (n > 0) t.sms = n;
  return t;
}

}  // namespace jllm::cuda
