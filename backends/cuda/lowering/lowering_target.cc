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
      return {kSmemPerBlockSm90};
    case 80:
    case 87:
      return {kSmemPerBlockSm80};
    default:
      return {kSmemPerBlockSm86};
  }
}

}  // namespace jllm::cuda
