#!/usr/bin/env bash
# The main job, end to end on this machine: build jllm, synthesize a small Qwen3 model with the
# real Qwen3 tokenizer, and print its summary. (Later: compile it to a plan and run a prompt.)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JLLM_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
mkdir -p "$root/out"
tok=()
[ -f "$root/.deps/qwen3-tokenizer/tokenizer.json" ] && tok=(--tokenizer "$root/.deps/qwen3-tokenizer")
"$build/tools/jllm-synth" --preset tiny --type q4_k_m "${tok[@]}" --seed 1 -o "$root/out/tiny-q4_k_m.gguf"
"$build/tools/jllm-inspect" "$root/out/tiny-q4_k_m.gguf"
