#!/usr/bin/env bash
# The one command for the lent GPU machine. Runs in the repository root there, with a Release
# build folder carried over from the build machine (binaries link Abseil, yaml-cpp and cudart
# statically; NVRTC comes from the machine's CUDA toolkit):
#
#   scripts/gpu-check.sh [BUILD_DIR]        (default: $JLLM_BUILD_DIR, else build/, else build-cuda/)
#
# Steps: GPU facts (nvidia-smi), build check, `ctest -L gpu`, `ctest -L nvrtc`, the kernel
# micro-benchmark (with a config sweep), and the SASS of the benchmarked kernels when cuobjdump is
# there (counts of 16-byte loads and local-memory spills; gzipped SASS next to the CUBINs).
# Each step's output goes to the terminal and to $OUT/gpu-check/<step>.log (or out/gpu-check/
# when OUT is unset). A failing step does not stop the others; the exit status is non-zero if any
# step failed. The summary table comes last.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin  # nvidia-smi, cuobjdump

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-${JLLM_BUILD_DIR:-}}
if [ -z "$build" ]; then
  for candidate in build build-cuda; do
    if [ -f "$candidate/CMakeCache.txt" ]; then build=$candidate; break; fi
  done
fi
build=${build:-build}
case "$build" in /*) ;; *) build=$root/$build ;; esac
out=${OUT:-$root/out}/gpu-check
mkdir -p "$out"

source "$root/scripts/lib/steps.sh"

# ctest and the tests find executables and sources by the absolute paths of the machine that
# configured the build. Where this checkout lives elsewhere, link those paths to here.
link_configured_paths() {
  local cache=$build/CMakeCache.txt
  local old_build old_source
  old_build=$(sed -n 's/^# For build in directory: //p' "$cache" | head -n1)
  old_source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache" | head -n1)
  for pair in "$old_source|$root" "$old_build|$build"; do
    local from=${pair%%|*} to=${pair#*|}
    if [ -n "$from" ] && [ "$from" != "$to" ] && [ ! -e "$from" ]; then
      mkdir -p "$(dirname "$from")" && ln -s "$to" "$from" && echo "linked $from -> $to"
    fi
  done
}

build_check() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "no build folder at $build (configure with -DCMAKE_BUILD_TYPE=Release and carry it)"
    return 1
  fi
  local type
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
  echo "build folder: $build (CMAKE_BUILD_TYPE=$type)"
  link_configured_paths
  local rc=0
  if [ "$type" != "Release" ]; then echo "WARNING: not a Release build; timings are meaningless"; rc=1; fi
  for exe in tools/jllm-kernel-bench tests/cuda/cuda_gpu_test tests/cuda/cuda_nvrtc_test; do
    if [ -x "$build/$exe" ]; then
      echo "found $exe"
    else
      echo "MISSING $build/$exe"
      rc=1
    fi
  done
  if [ -x "$build/tools/jllm-kernel-bench" ]; then
    echo "--- shared libraries of jllm-kernel-bench:"
    ldd "$build/tools/jllm-kernel-bench" || rc=1
    if ldd "$build/tools/jllm-kernel-bench" | grep -q "not found"; then rc=1; fi
  fi
  return $rc
}

sass_check() {
  local cubins=$out/cubins
  if ! command -v cuobjdump > /dev/null; then
    echo "cuobjdump not found; skipping the SASS check"
    return 0
  fi
  if ! ls "$cubins"/*.cubin > /dev/null 2>&1; then
    echo "no CUBINs in $cubins (did the benchmark run?)"
    return 1
  fi
  printf '%-72s %8s %8s %8s %8s\n' cubin LDG.128 LDGSTS LDS.128 "LDL/STL"
  local tmp
  tmp=$(mktemp -d)
  for f in "$cubins"/*.cubin; do
    local sass=$tmp/$(basename "$f" .cubin).sass
    cuobjdump -sass "$f" > "$sass" || return 1
    gzip -c "$sass" > "$out/cubins/$(basename "$f" .cubin).sass.gz"
    printf '%-72s %8s %8s %8s %8s\n' "$(basename "$f")" \
      "$(grep -cE 'LDG\.E[.A-Z0-9_]*\.128' "$sass")" "$(grep -c 'LDGSTS' "$sass")" \
      "$(grep -cE 'LDS(\.[A-Z0-9_]+)*\.128' "$sass")" "$(grep -cE '\b(LDL|STL)\b' "$sass")"
  done
  rm -rf "$tmp"
}

run_step nvidia-smi nvidia-smi
run_step build-check build_check
gpu_tests() {  # on the GPU machine a skipped GPU test is a failure (no device, driver mismatch)
  ctest --test-dir "$build" -L gpu --output-on-failure | tee "$out/gpu-tests.raw"
  local rc=${PIPESTATUS[0]}
  if grep -q "(Skipped)" "$out/gpu-tests.raw"; then
    echo "ERROR: GPU tests were skipped on the GPU machine (see the skip reasons above)"
    rc=1
  fi
  return "$rc"
}

run_step gpu-tests gpu_tests
run_step nvrtc-tests ctest --test-dir "$build" -L nvrtc --output-on-failure
mkdir -p "$out/cubins"
run_step kernel-bench "$build/tools/jllm-kernel-bench" --sweep --json "$out/kernel-bench.json" \
  --dump-cubin "$out/cubins"
run_step sass sass_check

echo
echo "=================== summary (logs in $out)"
print_step_summary
echo
grep -E "tests passed|tests failed" "$out/gpu-tests.log" 2>/dev/null | sed 's/^/  gpu tests: /'
sed -n '/^kernel /,/^%ceil/p' "$out/kernel-bench.log" 2>/dev/null
grep -E "^read ceiling" "$out/kernel-bench.log" 2>/dev/null
sed -n '/^cubin /,$p' "$out/sass.log" 2>/dev/null | grep -v "^===" | sed 's/^/  /'
exit $failed
