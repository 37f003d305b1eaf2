#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh needs on the lent GPU machine into .deps/device/ (ignored by
# git; name it in the device tool's `carry`): the Release tools and GPU test binaries (Abseil,
# yaml-cpp and cudart are linked statically; NVRTC comes from the machine's toolkit), the
# Qwen3 tokenizer files (jllm-synth --tokenizer) and the trained tiny-coder model, xz-compressed.
#
#   scripts/pack-device.sh [BUILD_DIR]     (default build/)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
dest=$root/.deps/device
mkdir -p "$dest"
cmake --build "$build" -j"$(nproc)" --target jllm-synth jllm-compile jllm-run jllm-bench jllm-inspect \
  jllm-convert cuda_gpu_test > /dev/null
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin"
for t in jllm-synth jllm-compile jllm-run jllm-bench jllm-inspect jllm-convert; do
  cp "$build/tools/$t" "$stage/bin/"
done
cp "$build/tests/cuda/cuda_gpu_test" "$stage/bin/"
strip "$stage/bin/"* 2>/dev/null || true
# What the binaries were built from: every tracked file but the docs and scripts, listed and
# hashed, so that gpu-check.sh can tell a pack older than the tree it runs in (a stale pack
# silently voids an A/B: it happened at stop 27).
(cd "$root" && git ls-files -z -- . ':!docs' ':!scripts' ':!*.md' > "$stage/bin/SOURCES.list" &&
  xargs -0 sha1sum < "$stage/bin/SOURCES.list" | sha1sum | cut -d' ' -f1 > "$stage/bin/SOURCES.sha1")
tar -C "$stage" -cJf "$dest/jllm-bin.tar.xz" bin
if [ -f "$root/.deps/qwen3-tokenizer/tokenizer.json" ]; then
  tar -C "$root/.deps" -cJf "$dest/qwen3-tokenizer.tar.xz" qwen3-tokenizer
fi
coder=$root/../shared/models/tiny-coder-q8_0.gguf
if [ -f "$coder" ] && { [ ! -f "$dest/tiny-coder-q8_0.gguf.xz" ] || [ "$coder" -nt "$dest/tiny-coder-q8_0.gguf.xz" ]; }; then
  xz -T0 -c "$coder" > "$dest/tiny-coder-q8_0.gguf.xz"
fi
du -sh "$dest"/*
