#!/usr/bin/env bash
# jllm against Hugging Face transformers, on the lent GPU machine (docs/VALIDATION.md):
#
#   scripts/oracle-check.sh BIN_DIR [MODEL_DIR]
#
# BIN_DIR holds jllm-convert, jllm-compile, jllm-run, jllm-synth and jllm-inspect (a build
# folder, whose tools/ is searched, or a folder with just those five binaries). MODEL_DIR, if
# given, holds tiny-coder-q8_0.gguf[.gz] and the Qwen3 tokenizer.json[.gz]. Steps:
#   1. gguf-reader: the oracle's numpy dequantizer against jllm-inspect, every type, bit for bit;
#   2. oracle: tests/oracle/run_oracle.py (random-weight tiny and Qwen3-0.6B-shaped models,
#      f32/q8_0/q4_k/q4_k_m, cpu_ref and, when built, CUDA) against transformers;
#   3. synth-q4_k_m: tests/oracle/make_synth_reference.py synthesizes `jllm-synth --preset tiny
#      --type q4_k_m --seed 7` and writes transformers' logits for it to
#      $OUT/oracle/synth_tiny_q4_k_m_reference.json (copy it to tests/data/);
#   4. tiny-coder (with MODEL_DIR): tests/oracle/make_tiny_coder_reference.py writes
#      $OUT/oracle/tiny_coder_reference.json (copy it to tests/data/). Needs no jllm binary.
# Logs and results go to $OUT/oracle/ (out/oracle/ when OUT is unset); the summary table comes
# last. Exit status non-zero if any step failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin=${1:?usage: scripts/oracle-check.sh BIN_DIR [MODEL_DIR]}
case "$bin" in /*) ;; *) bin=$root/$bin ;; esac
models=${2:-}
out=${OUT:-$root/out}/oracle
mkdir -p "$out"
export PYTHONUNBUFFERED=1

# Where the tools are: BIN_DIR/tools (a build folder) or BIN_DIR itself. The Python steps look
# in both; check here so a missing binary is one clear line.
missing=0
for t in jllm-convert jllm-compile jllm-run jllm-synth jllm-inspect; do
  if [ ! -x "$bin/tools/$t" ] && [ ! -x "$bin/$t" ]; then echo "MISSING $t in $bin or $bin/tools"; missing=1; fi
done
[ "$missing" = 0 ] || exit 2

python3 -c 'import torch, transformers, numpy; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "transformers", transformers.__version__, "numpy", numpy.__version__)'

source "$root/scripts/lib/steps.sh"

run_step gguf-reader python3 tests/oracle/check_gguf_reader.py --build "$bin"
run_step oracle python3 tests/oracle/run_oracle.py --build "$bin" --out "$out" \
  --work "${TMPDIR:-/tmp}/jllm-oracle-work"
run_step synth-q4_k_m python3 tests/oracle/make_synth_reference.py --bin "$bin" --seed 7 \
  --out "$out/synth_tiny_q4_k_m_reference.json"
if [ -n "$models" ]; then
  first() { for f in "$@"; do [ -f "$f" ] && { echo "$f"; return; }; done; echo "$1"; }
  run_step tiny-coder python3 tests/oracle/make_tiny_coder_reference.py \
    --gguf "$(first "$models/tiny-coder-q8_0.gguf" "$models/tiny-coder-q8_0.gguf.gz")" \
    --tokenizer "$(first "$models/tokenizer.json" "$models/tokenizer.json.gz")" \
    --out "$out/tiny_coder_reference.json"
fi

echo
echo "=================== summary (logs and summary.json in $out)"
print_step_summary
tail -n 1 "$out/gguf-reader.log" 2>/dev/null | sed 's/^/  gguf-reader: /'
grep -E "^greedy|^wrote" "$out/synth-q4_k_m.log" 2>/dev/null | sed 's/^/  synth-q4_k_m: /'
if [ -n "$models" ]; then
  grep -E "^'|^wrote" "$out/tiny-coder.log" 2>/dev/null | sed 's/^/  tiny-coder: /'
fi
echo
cat "$out/summary.md" 2>/dev/null || echo "  (no summary.md: the oracle did not finish)"
exit $failed
