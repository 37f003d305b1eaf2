#!/usr/bin/env bash
# The one command for the lent GPU machine (after scripts/pack-device.sh here; carry .deps/device):
#
#   scripts/gpu-check.sh [quick|full] [STEP...]
#
# Unpacks the carried binaries, then runs the steps (default: all of the mode's): GPU facts, the
# gpu tests (op table on the GPU, sampler, faults, tiny-coder against cpu_ref with each pass off),
# the tiny model end to end (run, --validate, --profile) and under compute-sanitizer (memcheck,
# racecheck), then the synthesized presets (quick: 0.6b and 4b; full: also 14b): --validate,
# jllm-bench (pp512, tg128, tg128 @ d8192 and d32768 for 4b), --profile, the host memory of
# loading; only when named: `tune` runs jllm-compile --tune and benches the tuned plans against
# the built-in choices, `ncu-source` profiles three 4b GEMVs per SASS instruction (SOURCE_MODEL:
# another model of the models step, e.g. 4b-q8_0)
# (scripts/ncu_source_summary.py sums them by phase), `ncu-attn` decode attention at 8k,
# `ncu-dram` the HBM bytes each decode GEMV reads against its weights' (DRAM_PRESETS),
# `kernel-info` each 4b kernel's registers, spills and shared memory (KINFO_VARIANTS: switches),
# `probe` the device microbenchmarks of jllm-bench --probe (PROBES),
# `ab2` and `ab3` further A/B sets (AB2_VARIANTS, AB2_PRESETS, ...; `ab` below says how), `trace-ab`
# the in-step trace of each of TRACE_VARIANTS (TRACE_ARGS: more jllm-run flags, e.g. --temp 0 for
# the greedy step, whose logits GEMV draws the token).
# Each step's output goes to the terminal and to a log; the logs come back as
# $OUT/gpu-check-logs.tar.gz, the benchmark JSON as $OUT/bench.json. A failing step does not
# stop the others; the exit status says whether any failed. The summary table comes last.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${1:-quick}
shift || true
only=("$@")
work=/tmp/jllm-gpu-check
out=$work/logs
mkdir -p "$out" "$work/models"
source "$root/scripts/lib/steps.sh"
export JLLM_SOURCE_DIR=$root JLLM_CUBIN_CACHE=$work/cubin-cache

wanted() {  # wanted STEP: run it unless a step list was given without it
  [ ${#only[@]} -eq 0 ] && return 0
  local s
  for s in "${only[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}
step() {  # step NAME TIMEOUT_S COMMAND... (a shell function runs in a subshell with a deadline)
  local name=$1 limit=$2
  shift 2
  wanted "$name" || return 0
  if declare -F "$1" > /dev/null; then
    run_step "$name" timeout --kill-after=10 "$limit" bash -c "$(declare -f); $(declare -p bin work out root presets mode 2>/dev/null); $*"
  else
    run_step "$name" timeout --kill-after=10 "$limit" "$@"
  fi
}

unpack() {
  local d=$root/.deps/device
  tar -C "$work" -xJf "$d/jllm-bin.tar.xz" || return 1
  [ -f "$d/qwen3-tokenizer.tar.xz" ] && tar -C "$work" -xJf "$d/qwen3-tokenizer.tar.xz"
  [ -f "$d/tiny-coder-q8_0.gguf.xz" ] && xz -dc "$d/tiny-coder-q8_0.gguf.xz" > "$work/models/tiny-coder-q8_0.gguf"
  ls -la "$work/bin" "$work/models"
  # The binaries must come from this tree's sources (scripts/pack-device.sh lists and hashes them).
  local now
  if [ ! -f "$work/bin/SOURCES.list" ] || [ ! -f "$work/bin/SOURCES.sha1" ]; then
    echo "unpack: the carried binaries do not say what they were built from: run scripts/pack-device.sh"
    return 1
  fi
  now=$(cd "$root" && xargs -0 sha1sum < "$work/bin/SOURCES.list" 2>/dev/null | sha1sum | cut -d' ' -f1)
  if [ "$now" != "$(cat "$work/bin/SOURCES.sha1")" ]; then
    echo "unpack: the carried binaries were built from other sources than this tree: run scripts/pack-device.sh"
    return 1
  fi
}
run_step unpack unpack
bin=$work/bin
export JLLM_TINY_CODER=$work/models/tiny-coder-q8_0.gguf

step nvidia-smi 30 nvidia-smi
# OP_FILTER: a gtest filter for part of the table (e.g. 'Variants/*aligned*:Variants/*slot_skip*').
op_table() {  # 8 shards at once: each case compiles its own kernels
  local i rc=0 pids=()
  for i in 0 1 2 3 4 5 6 7; do
    GTEST_TOTAL_SHARDS=8 GTEST_SHARD_INDEX=$i "$bin/cuda_gpu_test" \
      --gtest_filter="${OP_FILTER:-AllOps/*:Variants/*:GpuSampleKernel.*}" \
      --gtest_brief=1 > "$work/op-table-$i.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || rc=1; done
  cat "$work"/op-table-*.txt
  grep -h "PASSED\|FAILED\|SKIPPED" "$work"/op-table-*.txt | sort | uniq -c
  return $rc
}
step gpu-op-table 600 op_table
gpu_faults() {  # each in its own process: a faulted context stays broken
  local rc=0 t
  for t in GpuFault.IllegalAddressIsAnErrorNamingTheStep GpuFault.NvrtcFailureNamesTheSpec \
           GpuFault.CubinsForAnotherArchitectureFallBackToNvrtc GpuFault.CubinForThisArchitectureIsUsed; do
    "$bin/cuda_gpu_test" --gtest_filter="$t" --gtest_brief=1 || rc=1
  done
  return $rc
}
step gpu-faults 300 gpu_faults
step gpu-tiny-coder 900 "$bin/cuda_gpu_test" --gtest_filter='*TinyCoder*' --gtest_brief=1

tiny() {
  local m=$work/models
  "$bin/jllm-synth" --preset tiny -o "$m/tiny.gguf" > /dev/null &&
  "$bin/jllm-compile" "$m/tiny.gguf" -o "$m/tiny.plan" > /dev/null &&
  "$bin/jllm-run" "$m/tiny.plan" -p "Hello, world" -n 32 --temp 0 --backend cuda &&
  "$bin/jllm-run" "$m/tiny.plan" -p "Hello, world" -n 32 --temp 0.8 --seed 7 --backend cuda &&
  "$bin/jllm-run" "$m/tiny.plan" -p "Hello, world" -n 32 --validate &&
  "$bin/jllm-run" "$m/tiny.plan" -p "Hello, world" --profile --backend cuda &&
  "$bin/jllm-compile" "$JLLM_TINY_CODER" -o "$m/coder.plan" > /dev/null &&
  "$bin/jllm-run" "$m/coder.plan" -p "def fibonacci(n):" -n 48 --temp 0 --backend cuda &&
  "$bin/jllm-run" "$m/coder.plan" -p "def fibonacci(n):" -n 48 --validate
}
step tiny 300 tiny
# The prompt is long enough (~25 tokens) that the newest position lies past warp 0's first tile
# of decode attention: the warp that appends it (attention_mma.cu, FUSED_HEAD) is another than
# warp 0, so an append by the wrong warp is a shared-memory race racecheck reports (stop 32).
# The tiny-coder plan too (every matrix q8_0: the GEMVs' scale-tail paths, TAIL_PREFETCH and
# D_AHEAD, which the tiny preset's types do not take).
sanitize() {
  local m=$work/models rc=0 tool plan
  for plan in tiny coder; do
    for tool in memcheck racecheck; do
      echo "--- $tool $plan"
      compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$bin/jllm-run" "$m/$plan.plan" -p "Hello, world. Hello, world. Hello, world. Hello, world. Hello, world." \
        -n 4 --temp 0 --backend cuda || rc=1
    done
  done
  return $rc
}
step sanitizer 600 sanitize

presets=(0.6b 4b)
[ "$mode" = full ] && presets+=(14b)
models() {
  local p
  for p in "${presets[@]}"; do
    [ -f "$work/models/$p.gguf" ] || "$bin/jllm-synth" --preset "$p" --tokenizer "$work/qwen3-tokenizer" \
      -o "$work/models/$p.gguf" | tail -3 || return 1
    # Ahead-of-time CUBINs for this GPU: loading takes them from the plan, no NVRTC.
    "$bin/jllm-compile" "$work/models/$p.gguf" -o "$work/models/$p.plan" --arch sm_90 2>&1 | tail -2 || return 1
  done
  # MODEL_TYPES="4b:q8_0 4b:bf16": a preset with every matrix of one type, as model PRESET-TYPE
  # (for AB_PRESETS, TRACE_PRESETS, DRAM_PRESETS): the GEMVs of the other weight types in the step.
  local pt t
  for pt in ${MODEL_TYPES:-}; do
    p=${pt%%:*} t=${pt#*:}
    [ -f "$work/models/$p-$t.gguf" ] || "$bin/jllm-synth" --preset "$p" --type "$t" --fill pool \
      --tokenizer "$work/qwen3-tokenizer" -o "$work/models/$p-$t.gguf" | tail -3 || return 1
    "$bin/jllm-compile" "$work/models/$p-$t.gguf" -o "$work/models/$p-$t.plan" --arch sm_90 2>&1 | tail -2 || return 1
  done
  df -h /tmp | tail -1
}
step models 900 models
load_memory() {  # peak host memory of loading each preset on the GPU (streamed upload)
  local p
  for p in "${presets[@]}"; do
    echo "--- $p"
    "$bin/jllm-run" "$work/models/$p.plan" -p "Hi" -n 1 --temp 0 --backend cuda 2>&1 | grep -E "loaded in|backend,|weights"
  done
}
step load-memory 300 load_memory
validate() {  # every preset of the mode: a bug may show on one model's layer types only (stop 17)
  local p rc=0
  for p in "${presets[@]}"; do
    "$bin/jllm-run" "$work/models/$p.plan" -p "The quick brown fox jumps over the lazy dog." -n 16 --validate || rc=1
  done
  return $rc
}
step validate 600 validate
bench() {
  local plans=() p
  for p in "${presets[@]}"; do plans+=("$work/models/$p.plan"); done
  "$bin/jllm-bench" "${plans[@]}" -p 512 -n 128 -r 3 --json-out "${OUT:-$root/out}/bench.json" &&
  "$bin/jllm-bench" "$work/models/4b.plan" -p 0 -n 128 -d 8192,32768 -r 3
}
step bench 900 bench
# Per-shape tuning (jllm-compile --tune, issue 11 item 3): each preset tuned on this GPU (its
# log in tune-P.log), then the tuned plan against the built-in choices in one jllm-bench run
# (TUNE_SHAPES=N limits the search to the N largest shapes; TUNE_PRESETS, default the mode's).
tune() {
  local p rc=0
  for p in ${TUNE_PRESETS:-${presets[@]}}; do
    echo "--- $p"
    "$bin/jllm-compile" "$work/models/$p.gguf" -o "$work/models/$p-tuned.plan" --arch sm_90 --tune \
      --tune-shapes "${TUNE_SHAPES:-0}" > "$out/tune-$p.out" 2> "$out/tune-$p.log" || { tail -5 "$out/tune-$p.log"; rc=1; continue; }
    cat "$out/tune-$p.out"
    "$bin/jllm-bench" "$work/models/$p.plan" "$work/models/$p-tuned.plan" -p 0 -n 128 -r 3 2>&1 | grep -E "tg[0-9]|error" || rc=1
    "$bin/jllm-run" "$work/models/$p-tuned.plan" -p "The quick brown fox jumps over the lazy dog." -n 16 --validate 2>&1 | tail -1
  done
  return $rc
}
[ ${#only[@]} -gt 0 ] && step tune "${TUNE_LIMIT:-580}" tune  # minutes: only when named (TUNE_LIMIT: its deadline in s)
# Device microbenchmarks (jllm-bench --probe; only when named): what each form of L2 prefetch
# leaves in L2 (PROBES: a space-separated list, default l2-prefetch).
probe() {
  local n rc=0
  for n in ${PROBES:-l2-prefetch}; do
    "$bin/jllm-bench" --probe "$n" --backend cuda || rc=1
  done
  return $rc
}
[ ${#only[@]} -gt 0 ] && step probe 300 probe
profile() {
  local p
  for p in "${presets[@]}"; do
    echo "--- $p"
    "$bin/jllm-run" "$work/models/$p.plan" -p "$(printf 'word %.0s' $(seq 1 200))" --profile --backend cuda
  done
}
step profile 300 profile
# A/B of the switches (docs/PERF.md): tuning overrides at lowering, PDL at run. Each variant of
# AB_VARIANTS ("name:VAR=v VAR2=w;name2:...", default below) is compiled and benched
# (AB_BENCH, default tg128 -r 2) on every preset of AB_PRESETS (default 4b); with AB_VALIDATE=1
# each is also run with --validate on 0.6b and 4b (how far from cpu_ref it moves the logits).
# AB_CLOCKS=1: the GPU's SM and memory clocks, power and temperature sampled every 200 ms through
# the set (clocks.csv in the logs; each variant's line carries its start time to match them).
# Steps ab2 and ab3 (only when named) do the same with AB2_* and AB3_* (no default variants):
# three A/B sets of different presets and bench arguments in one visit.
ab_set() {  # ab_set PREFIX DEFAULT_VARIANTS
  local prefix=$1
  local variants_var=${prefix}_VARIANTS presets_var=${prefix}_PRESETS bench_var=${prefix}_BENCH
  local validate_var=${prefix}_VALIDATE
  local variants=${!variants_var:-$2}
  local presets=${!presets_var:-4b} bench=${!bench_var:--p 0 -n 128 -r 2} validate=${!validate_var:-0}
  [ -n "$variants" ] || { echo "$variants_var is empty"; return 1; }
  local v name env p
  IFS=';' read -ra list <<< "$variants"
  for v in "${list[@]}"; do
    name=${v%%:*} env=${v#*:}
    for p in $presets; do
      echo "--- $name $p ($env) $(date +%T)"
      env $env "$bin/jllm-compile" "$work/models/$p.gguf" -o "$work/models/ab.plan" > /dev/null 2>&1 || return 1
      env $env "$bin/jllm-bench" "$work/models/ab.plan" $bench 2>&1 | grep -E "pp[0-9]|tg[0-9]|error"
    done
    [ "$validate" = 1 ] || continue
    for p in 0.6b 4b; do
      echo "--- $name $p against cpu_ref"
      env $env "$bin/jllm-compile" "$work/models/$p.gguf" -o "$work/models/ab.plan" > /dev/null 2>&1 &&
      env $env "$bin/jllm-run" "$work/models/ab.plan" -p "The quick brown fox jumps over the lazy dog." \
        -n 16 --validate 2>&1 | tail -1
    done
  done
  return 0
}
ab() {
  local sampler=""
  if [ "${AB_CLOCKS:-0}" = 1 ]; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 \
      > "$out/clocks.csv" &
    sampler=$!
  fi
  local rc=0
  ab_set AB "default:;pdl-off:JLLM_PDL=0;registers:JLLM_GEMV_RING=0 JLLM_GEMV_R=1 JLLM_GEMV_MINB=3 JLLM_GEMV_SPREAD=0;prefetch:JLLM_PREFETCH=1;x-f32:JLLM_GEMV_X=f32;x-i8:JLLM_GEMV_X=i8" || rc=1
  [ -n "$sampler" ] && kill "$sampler"
  return $rc
}
step ab 600 ab
[ ${#only[@]} -gt 0 ] && step ab2 600 ab_set AB2 ""  # only when named
[ ${#only[@]} -gt 0 ] && step ab3 600 ab_set AB3 ""  # only when named
# The in-step trace of each variant (only when named): TRACE_VARIANTS as AB_VARIANTS, on
# TRACE_PRESETS (default 4b): each compiled with its switches and run with JLLM_TRACE=1 --profile
# after a prompt of TRACE_WORDS words (default 200; ~one token a word, the context sized to fit);
# the "in the captured step" table (release, staging, stream, tail, spread per kernel) is printed,
# and with TRACE_CTAS=1 which CTAs end each kernel late (JLLM_TRACE_DUMP, scripts/trace_ctas.py;
# the per-CTA rows stay in the logs as trace-ctas-<variant>-<preset>.tsv).
trace_ab() {
  local v name env p dump words=${TRACE_WORDS:-200}
  [ -n "${TRACE_VARIANTS:-}" ] || { echo "TRACE_VARIANTS is empty"; return 1; }
  IFS=';' read -ra list <<< "$TRACE_VARIANTS"
  for v in "${list[@]}"; do
    name=${v%%:*} env=${v#*:}
    for p in ${TRACE_PRESETS:-4b}; do
      echo "--- $name $p ($env)"
      env $env "$bin/jllm-compile" "$work/models/$p.gguf" -o "$work/models/ab.plan" > /dev/null 2>&1 || return 1
      dump=""
      [ "${TRACE_CTAS:-0}" = 1 ] && dump=$out/trace-ctas-$name-$p.tsv
      env $env JLLM_TRACE=1 JLLM_TRACE_DUMP="$dump" "$bin/jllm-run" "$work/models/ab.plan" \
        -p "$(printf 'word %.0s' $(seq 1 "$words"))" \
        -c $((words + 512)) --profile --backend cuda ${TRACE_ARGS:-} 2>&1 | sed -n '/^decode step/p; /in the captured step/,$p'
      if [ -n "$dump" ]; then python3 "$root/scripts/trace_ctas.py" "$dump" || return 1; fi
    done
  done
}
[ ${#only[@]} -gt 0 ] && step trace-ab 600 trace_ab  # only when named
ncu_kernels() {  # hardware counters of the decode kernels that matter (4b): throughput, occupancy, stalls
  ncu --clock-control none --graph-profiling node -k 'regex:gemv|attention_(decode|rows|mma)|head_ops' \
    --launch-skip 60 --launch-count 12 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats "$bin/jllm-run" "$work/models/4b.plan" -p "$(printf 'word %.0s' $(seq 1 200))" \
    -n 4 --temp 0 --backend cuda > "$work/ncu.txt" 2>&1
  local rc=$?
  grep -E "^  [a-z_]+.*\(|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Theoretical Occupancy|Stall|One or More|No Eligible|Issued Warp" "$work/ncu.txt" | head -250
  cp "$work/ncu.txt" "$out/ncu-full.txt"
  return $rc
}
step ncu 300 ncu_kernels
# Where inside a kernel the time goes (only when named): per SASS instruction, executions and warp
# stall samples of one QKV, one attn-out and one gate+up GEMV of 4b (gemv launches 61..63: the
# prefill's logits GEMV is launch 0, then 4 a layer), as CSV under $OUT (ncu-source-N.csv) — what
# the stop-21 notes could only infer from issue rates.
ncu_source() {
  local i rep rc=0
  for i in 0 1 2; do
    rep=$work/gemv-source-$i
    ncu --clock-control none --graph-profiling node -k regex:gemv --launch-skip $((61 + i)) --launch-count 1 \
      --section LaunchStats --section SourceCounters --section WarpStateStats --section InstructionStats -o "$rep" -f \
      "$bin/jllm-run" "$work/models/${SOURCE_MODEL:-4b}.plan" -p "$(printf 'word %.0s' $(seq 1 200))" -n 4 --temp 0 --backend cuda \
      > "$out/ncu-source-run-$i.txt" 2>&1 || { tail -20 "$out/ncu-source-run-$i.txt"; rc=1; continue; }
    ncu --import "$rep.ncu-rep" --page details > "$out/ncu-source-details-$i.txt" 2>&1
    grep -E "gemv|Duration|Executed Instructions|Issued Warp|No Eligible|Grid Size|Block Size" "$out/ncu-source-details-$i.txt" | head -20
    ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "${OUT:-$root/out}/ncu-source-$i.csv" 2>&1 ||
      { head -5 "${OUT:-$root/out}/ncu-source-$i.csv"; rc=1; }
    python3 "$root/scripts/ncu_source_summary.py" "${OUT:-$root/out}/ncu-source-$i.csv" > "$out/ncu-source-summary-$i.txt" 2>&1
    head -70 "$out/ncu-source-summary-$i.txt"
  done
  ls -la "${OUT:-$root/out}"
  return $rc
}
[ ${#only[@]} -gt 0 ] && step ncu-source 300 ncu_source  # only when named

# Decode attention at 8k cached positions (only when named): attention_mma.cu takes ~21 µs a
# layer there where its 33.5 MB of cache would take 7.5 µs (docs/PERF.md) — counters of two
# decode launches (the prefill's attention is another kernel) after two tokens' worth.
# ATTN_DEPTH: the cached positions (default 8192; 64 is tg128's depth, where attention is a chain
# of round trips in 8 CTAs); ATTN_SOURCE=1 adds per-SASS-instruction stall samples of the first
# launch as CSV under $OUT (ncu-attn-source.csv) with scripts/ncu_source_summary.py's summary.
ncu_attn() {
  local rc source=() rep=$work/attn-source
  [ "${ATTN_SOURCE:-0}" = 1 ] && source=(--section SourceCounters --section InstructionStats -o "$rep" -f)
  ncu --clock-control none --graph-profiling node -k regex:attention_mma --launch-skip 72 --launch-count 2 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats "${source[@]}" \
    "$bin/jllm-bench" "$work/models/4b.plan" -p 0 -n 4 -d "${ATTN_DEPTH:-8192}" -r 1 > "$out/ncu-attn.txt" 2>&1
  rc=$?
  if [ ${#source[@]} -gt 0 ]; then
    ncu --import "$rep.ncu-rep" --page details > "$out/ncu-attn.txt" 2>&1
    ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "${OUT:-$root/out}/ncu-attn-source.csv" 2>&1 || rc=1
    python3 "$root/scripts/ncu_source_summary.py" "${OUT:-$root/out}/ncu-attn-source.csv" > "$out/ncu-attn-source-summary.txt" 2>&1
    head -70 "$out/ncu-attn-source-summary.txt"
  fi
  grep -E "^  [a-z_]+.*\(|Duration|Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|Eligible|Issued Warp|L2 Hit|L1/TEX Hit" "$out/ncu-attn.txt" | head -80
  return $rc
}
[ ${#only[@]} -gt 0 ] && step ncu-attn 300 ncu_attn  # only when named

# HBM bytes each decode GEMV reads against its weights' bytes (only when named; DRAM_PRESETS,
# default "4b 14b"): a ratio above 1 is over-fetch — a ring box whose rows start or end inside a
# DRAM access that the next box's request fetches again. Each kernel alone, caches flushed
# (ncu's default), so x and gamma come from HBM too (a few KB). Two layers' four GEMVs, then the
# last layer's and the logits GEMV (launch 145 on 4b's 36 layers, 161 on 14b's 40).
ncu_dram() {
  local p layers skip rc=0
  for p in ${DRAM_PRESETS:-4b 14b}; do
    layers=$("$bin/jllm-inspect" "$work/models/$p.gguf" 2>/dev/null | awk '/block_count/ { print $NF; exit }')
    for skip in 61 $((4 * ${layers:-36} - 3)); do
      echo "--- $p, gemv launches from $skip"
      ncu --clock-control none --graph-profiling node -k regex:gemv --launch-skip "$skip" --launch-count 5 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
        "$bin/jllm-run" "$work/models/$p.plan" -p "$(printf 'word %.0s' $(seq 1 60))" -n 3 --temp 0 --backend cuda \
        > "$out/ncu-dram-$p-$skip.csv" 2> "$out/ncu-dram-$p-$skip.err" || { tail -5 "$out/ncu-dram-$p-$skip.err"; rc=1; }
      grep -E '"(gpu__time_duration.sum|dram__bytes_read.sum)"' "$out/ncu-dram-$p-$skip.csv" |
        awk -F'","' '{ printf "%-4s block %-12s grid %-12s %-24s %s %s\n", $1, $8, $9, $(NF-2), $(NF-1), $NF }'
    done
  done
  return $rc
}
[ ${#only[@]} -gt 0 ] && step ncu-dram 300 ncu_dram  # only when named

# Registers, spills and shared memory of each 4b kernel as the driver loaded it (only when named;
# JLLM_KERNEL_INFO=1, cudart_device.cc): budgets for kernel changes come from here, not from a
# local nvcc. With KINFO_VARIANTS ("name:VAR=v;..."), also each variant's kernels that differ.
kernel_info() {
  local v name env
  IFS=';' read -ra list <<< "default:;${KINFO_VARIANTS:-}"
  for v in "${list[@]}"; do
    [ -z "$v" ] && continue
    name=${v%%:*} env=${v#*:}
    echo "--- $name ($env)"
    env $env JLLM_KERNEL_INFO=1 "$bin/jllm-run" "$work/models/4b.plan" -p Hi -n 1 --temp 0 --backend cuda 2>&1 |
      grep "jllm: kernel" | sort -u
  done
}
[ ${#only[@]} -gt 0 ] && step kernel-info 300 kernel_info  # only when named

echo
echo "=================== summary (logs in \$OUT/gpu-check-logs.tar.gz)"
print_step_summary
tar -C "$work" -czf "${OUT:-$root/out}/gpu-check-logs.tar.gz" logs 2>/dev/null
grep -hE "tests? (passed|failed)|PASSED|FAILED|validate:|t/s|ceiling|peak host" "$out"/*.log 2>/dev/null | tail -60
exit $failed
