#!/usr/bin/env python3
"""How far an int8 KV cache moves the logits from the f16 cache over a long greedy run.

  scripts/kv_quality.py --bin BIN_DIR --gguf MODEL.gguf [--prompt TEXT] [-n 1024]
                        [--backend cuda|cpu] [--out RESULT.json]

Compiles the model twice (passes/default_passes.yaml with kv-dtype f16, and the same file with
int8), generates -n tokens greedily with the f16 plan (--dump-logits: every position's logits),
then feeds that same token sequence to the int8 plan as a prompt (--prompt-ids) and dumps its
logits. Per position: KL(p_f16 || p_int8) of the softmaxed logits and whether the arg-max agrees.
Prints mean / max KL, the KL of the last quarter (where the cache is longest), top-1 agreement,
and writes them as JSON. Needs numpy.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tool(bin_dir, name):
    for p in (os.path.join(bin_dir, "tools", name), os.path.join(bin_dir, name)):
        if os.path.exists(p):
            return p
    sys.exit(f"kv_quality: {name} not found in {bin_dir} or {bin_dir}/tools")


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"kv_quality: {' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r


def load_dump(path):
    with open(path + ".json") as f:
        meta = json.load(f)
    rows = np.fromfile(path, dtype=np.float32)
    n_vocab = rows.size // len(meta["token_ids"])
    return meta["token_ids"], rows.reshape(len(meta["token_ids"]), n_vocab)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompt", default="def fibonacci(n):")
    ap.add_argument("-n", type=int, default=1024)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--out")
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="jllm-kvq-")
    with open(os.path.join(ROOT, "passes", "default_passes.yaml")) as f:
        default_yaml = f.read()
    if "dtype: f16" not in default_yaml:
        sys.exit("kv_quality: passes/default_passes.yaml has no 'dtype: f16' to switch")
    int8_yaml = os.path.join(work, "int8.yaml")
    with open(int8_yaml, "w") as f:
        f.write(default_yaml.replace("dtype: f16", "dtype: int8", 1))

    compile_, run_ = tool(a.bin, "jllm-compile"), tool(a.bin, "jllm-run")
    plans = {}
    for kv, passes in (("f16", os.path.join(ROOT, "passes", "default_passes.yaml")), ("int8", int8_yaml)):
        plans[kv] = os.path.join(work, f"{kv}.plan")
        run([compile_, a.gguf, "-o", plans[kv], "--passes", passes])

    f16_dump = os.path.join(work, "f16.logits")
    run([run_, plans["f16"], "-p", a.prompt, "-n", str(a.n), "--temp", "0", "--backend", a.backend,
         "--no-display-prompt", "--dump-logits", f16_dump])
    ids, f16 = load_dump(f16_dump)
    ids_path = os.path.join(work, "ids.txt")
    with open(ids_path, "w") as f:
        f.write(" ".join(str(i) for i in ids))
    int8_dump = os.path.join(work, "int8.logits")
    run([run_, plans["int8"], "--prompt-ids", ids_path, "-n", "1", "--temp", "0", "--backend", a.backend,
         "--no-display-prompt", "--dump-logits", int8_dump])
    ids8, int8 = load_dump(int8_dump)
    n = len(ids)
    if ids8[:n] != ids:
        sys.exit("kv_quality: the int8 run did not see the f16 run's tokens")
    int8 = int8[:n]

    lp, lq = log_softmax(f16), log_softmax(int8)
    kl = (np.exp(lp) * (lp - lq)).sum(axis=1)
    top1 = (f16.argmax(axis=1) == int8.argmax(axis=1))
    tail = kl[3 * n // 4:]
    result = {
        "model": os.path.basename(a.gguf), "backend": a.backend, "positions": n,
        "mean_kl": float(kl.mean()), "max_kl": float(kl.max()), "mean_kl_last_quarter": float(tail.mean()),
        "top1_agreement": float(top1.mean()), "top1_disagreements": int((~top1).sum()),
    }
    print(f"{result['model']} ({a.backend}): {n} positions, KL(f16 || int8) mean {result['mean_kl']:.2e}, "
          f"max {result['max_kl']:.2e}, last quarter mean {result['mean_kl_last_quarter']:.2e}; "
          f"top-1 agreement {top1.sum()}/{n}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
