#!/usr/bin/env bash
# Builds jllm and runs its tests: every cpu and nvrtc test (gpu tests skip without a device).
#   scripts/test.sh            Release build in build/, all tests
#   scripts/test.sh --sanitize AddressSanitizer + UBSan build in build-asan/, cpu tests only
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ "${1:-}" = "--sanitize" ]; then
  export JLLM_BUILD_DIR=$root/build-asan
  # -O1 without -g: sanitizers need no more, and it keeps the second build short on CI's two cores.
  "$root/scripts/build.sh" -DJLLM_SANITIZE=ON -DJLLM_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # The emulated CUDA kernels are plain g++ -O1 modules keyed by their sources and defines, the
  # same for both builds: reuse the ones the Release pass compiled (most of the emulated tests'
  # time on a cold cache) rather than compile them again.
  export JLLM_EMU_CACHE=${JLLM_EMU_CACHE:-$root/build/emu-cache}
  ctest --test-dir "$JLLM_BUILD_DIR" -L cpu \
    --output-on-failure -j"$(nproc)"
else
  "$root/scripts/build.sh"
  ctest --test-dir "${JLLM_BUILD_DIR:-$root/build}" --output-on-failure -j"$(nproc)"
fi
