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
  # The emulated CUDA session (tests/cuda/emu_model_test.cc) runs for ~10 minutes under the
  # sanitizers, a quarter of this pass; its code paths stay covered here by EmuModelTest and the
  # emulated op table, and the Release pass runs it in full. Likewise the GEMV ring variant over
  # every one-token matmul: the group-only variants keep the ring's code under the sanitizers.
  ctest --test-dir "$JLLM_BUILD_DIR" -L cpu -E '^(EmuModelSessionTest\.|Variants/EmuCudaVariantOpTest\.MatchesDoubleReference/ring3_r2_spread__)' \
    --output-on-failure -j"$(nproc)"
else
  "$root/scripts/build.sh"
  ctest --test-dir "${JLLM_BUILD_DIR:-$root/build}" --output-on-failure -j"$(nproc)"
fi
