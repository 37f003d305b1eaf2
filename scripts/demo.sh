#!/usr/bin/env bash
# The main job, end to end on this machine: build jllm, synthesize a small Qwen3 model (random
# weights, the real Qwen3 tokenizer when set-up fetched it), compile it into a plan and run a
# prompt on the CPU reference backend. Random weights make random text: this shows the pipeline
# working (passes, plan, tokenizer, sampling, streaming, statistics), not a model's quality.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${JLLM_BUILD_DIR:-$root/build}
"$root/scripts/build.sh"
mkdir -p "$root/out"
tok=()
[ -f "$root/.deps/qwen3-tokenizer/tokenizer.json" ] && tok=(--tokenizer "$root/.deps/qwen3-tokenizer")
"$build/tools/jllm-synth" --preset tiny --type q4_k_m "${tok[@]}" --seed 1 -o "$root/out/tiny-q4_k_m.gguf"
"$build/tools/jllm-compile" "$root/out/tiny-q4_k_m.gguf" -o "$root/out/tiny-q4_k_m.plan"
"$build/tools/jllm-run" "$root/out/tiny-q4_k_m.plan" -p "The capital of France is" -n 32 --seed 1
