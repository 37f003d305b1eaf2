#!/usr/bin/env python3
"""Checks the oracle's numpy GGUF dequantizer (gguf_reader.py) against jllm's own
(`jllm-inspect --tensor`): two independent implementations of FORMATS.md §2 must agree bit for
bit on every tensor of a synthesized model of each weight type. Needs only numpy.

    tests/oracle/check_gguf_reader.py --build BUILD_DIR [--work DIR]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_reader import GgufFile  # noqa: E402

TYPES = ["f32", "f16", "bf16", "q8_0", "q4_k", "q5_k", "q6_k", "q4_k_m"]
MAX_ROWS = 6  # rows compared per tensor (all tensors of every file)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    def tool(name):  # a build folder's tools/, or a folder of binaries
        for cand in (os.path.join(args.build, "tools", name), os.path.join(args.build, name)):
            if os.access(cand, os.X_OK):
                return cand
        raise SystemExit(f"check_gguf_reader: {name} not found under {args.build}")
    synth, inspect = tool("jllm-synth"), tool("jllm-inspect")
    work = args.work or tempfile.mkdtemp(prefix="jllm-gguf-reader-")
    failures, compared, seen_types = 0, 0, set()
    for wtype in TYPES:
        path = os.path.join(work, f"reader-{wtype}.gguf")
        subprocess.run([synth, "--preset", "tiny", "--type", wtype, "--seed", "5", "--threads", "2",
                        "-o", path], check=True, stdout=subprocess.DEVNULL)
        g = GgufFile(path)
        for name, t in g.tensors.items():
            seen_types.add(t.type_name)
            rows = min(MAX_ROWS, t.n_elements // t.ne[0])
            mine = g.dequantize(name).reshape(-1, t.ne[0])[0:rows]
            out = subprocess.run([inspect, path, "--tensor", name, "--rows", f"0:{rows}"], check=True,
                                 stdout=subprocess.PIPE, text=True).stdout
            theirs = np.array([[float(x) for x in line.split()] for line in out.splitlines() if line],
                              dtype=np.float32)
            compared += 1
            if theirs.shape != mine.shape or not np.array_equal(theirs, mine):
                failures += 1
                diff = np.max(np.abs(theirs - mine)) if theirs.shape == mine.shape else "shape"
                print(f"MISMATCH {wtype} {name} ({t.type_name}): max diff {diff}")
        os.remove(path)
    print(f"gguf_reader: {compared} tensors compared with jllm-inspect over types "
          f"{sorted(seen_types)}: {compared - failures} identical, {failures} different")
    print(f"{compared - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
