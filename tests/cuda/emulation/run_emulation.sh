#!/usr/bin/env bash
# Runs a GEMV kernel's real source on the CPU (see emu_main.cc) for one shape and config:
#   tests/cuda/emulation/run_emulation.sh q4|q6 ROWS COLS R NRG KS [STAGES [GRID]]
# GRID (q6 only) caps the persistent grid, so that CTAs loop over several tiles.
# Examples that passed (worst |err| / sum|w x| below 3e-7):
#   q4 37 2560 4 4 1;  q4 48 9728 4 4 2;  q4 21 9728 1 4 4;  q6 37 2560 2 4 2 3 3;
#   q6 22 9728 2 2 5 3 2;  q6 101 512 2 2 1 2 4
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kernels=$here/../../../backends/cuda/kernels
k=$1 rows=$2 cols=$3 R=$4 NRG=$5 KS=$6 stages=${7:-3} grid=${8:-1000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{ cat "$here/cuda_host_shim.cuh"; sed -n '/^\/\/ Byte `b`/,$p' "$kernels/jllm_common.cuh"; } > "$work/jllm_common.cuh"
cp "$kernels/${k}_k_gemv.cu" "$work/kernel.cu"
if [ "$k" = q6 ]; then
  # Dynamic shared memory and its size come from the harness.
  sed -i 's/extern __shared__ __align__(16) jllm_u8 smem\[\];/jllm_u8* smem = emu_dynamic_smem;/;
          s/asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic_bytes));/dynamic_bytes = emu_dynamic_smem_bytes;/' \
    "$work/kernel.cu"
  grep -q emu_dynamic_smem_bytes "$work/kernel.cu" || { echo "q6 kernel no longer matches the sed patterns"; exit 1; }
  extra="-DEMU_Q6 -DEMU_KERNEL=q6_k_gemv"
else
  extra="-DEMU_KERNEL=q4_k_gemv"
fi
g++ -std=c++20 -O1 -w -I"$work" -DJLLM_ROWS="$rows" -DJLLM_COLS="$cols" -DJLLM_R="$R" -DJLLM_NRG="$NRG" \
  -DJLLM_KS="$KS" -DJLLM_STAGES="$stages" $extra -x c++ "$work/kernel.cu" -x c++ "$here/emu_main.cc" \
  -o "$work/emu" -lpthread
"$work/emu" "$grid"
