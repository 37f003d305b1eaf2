#!/usr/bin/env python3
"""Reference output of Hugging Face transformers for a synthesized Q4_K_M model.

`jllm-synth --preset tiny --type q4_k_m --seed N` writes a 4-layer Qwen3 (hidden 256, 4 heads /
2 KV heads x 64, FFN 768, byte-level vocabulary of 261) whose matrices are Q4_K and Q6_K, as
llama-quantize's Q4_K_M mix lays them out. This script loads those exact weights into
transformers' Qwen3ForCausalLM -- dequantized by the oracle's own numpy reader (gguf_reader.py,
written from FORMATS.md and checked bit for bit by check_gguf_reader.py), so the comparison is
with an implementation we did not write running the same numbers -- and records, for a fixed
byte prompt:

  - transformers' greedy continuation (cut before any step whose top-2 margin is below
    MIN_MARGIN, where f32 rounding could legitimately pick either token);
  - the full logits rows of every processed position (prompt + continuation but its last
    token), once in pure f32 and once with K/V rounded to f16 as jllm's default cache stores
    them (hf_reference.py), as base64 little-endian float32 [positions x vocab].

tests/oracle_cpu/synth_reference_test.cc regenerates the same GGUF with jllm's synthesizer
(checking its size and FNV-1a hash against the ones recorded here) and compares cpu_ref with
both rows. Needs torch + transformers + numpy (the GPU machine) and the jllm-synth binary:

    tests/oracle/make_synth_reference.py --bin BIN_DIR [--seed 7] \
        --out tests/data/synth_tiny_q4_k_m_reference.json
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PRESET, WEIGHTS = "tiny", "q4_k_m"
# A byte prompt: the tiny preset's vocabulary is bytes (ids 0..255) plus 5 special tokens.
PROMPT_TEXT = "def fibonacci(n):\n    return n\n"
N_GENERATE = 16
MIN_TOKENS = 8    # the C++ test requires at least this many greedy tokens
MIN_MARGIN = 0.05


def find_synth(bin_dir):
    for cand in (os.path.join(bin_dir, "tools", "jllm-synth"), os.path.join(bin_dir, "jllm-synth")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise SystemExit(f"make_synth_reference: jllm-synth not found in {bin_dir}/tools or {bin_dir}")


def fnv1a64(path):
    """FNV-1a, 64 bit, of the whole file (the C++ test computes the same)."""
    h = 0xCBF29CE484222325
    data = np.fromfile(path, dtype=np.uint8)
    for b in data.tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def b64_rows(rows):
    return base64.b64encode(np.ascontiguousarray(rows, dtype="<f4").tobytes()).decode("ascii")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with jllm-synth (a build folder or the binaries)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    import torch
    import hf_reference as ref
    from gguf_reader import GgufFile

    work = args.work or tempfile.mkdtemp(prefix="jllm-synth-ref-")
    os.makedirs(work, exist_ok=True)
    gguf_path = os.path.join(work, f"synth-{PRESET}-{WEIGHTS}-seed{args.seed}.gguf")
    synth_args = ["--preset", PRESET, "--type", WEIGHTS, "--seed", str(args.seed)]
    subprocess.run([find_synth(args.bin), *synth_args, "-o", gguf_path], check=True)

    ref.setup_torch()
    device = torch.device(args.device) if args.device else ref.default_device()
    g = GgufFile(gguf_path)
    types = sorted({g.tensors[n].type_name for n in g.tensors})
    spec = ref.spec_from_gguf(g)
    print(f"model {gguf_path}: {spec}; tensor types {types}", flush=True)
    if "Q4_K" not in types or "Q6_K" not in types:
        raise SystemExit(f"expected the Q4_K_M mix (Q4_K and Q6_K tensors), found {types}")
    model = ref.build_model(spec, device)
    ref.load_gguf_weights(model, g, device)

    # jllm ends generation at <|im_end|> and <|endoftext|> (and the GGUF's eos): so does this loop.
    vocab = g.metadata["tokenizer.ggml.tokens"]
    eog = {i for i, t in enumerate(vocab) if t in ("<|im_end|>", "<|endoftext|>")}
    if "tokenizer.ggml.eos_token_id" in g.metadata:
        eog.add(int(g.metadata["tokenizer.ggml.eos_token_id"]))
    prompt = list(PROMPT_TEXT.encode("utf-8"))
    seq = list(prompt)
    generated, margins, stop = [], [], "length"
    for _ in range(N_GENERATE):
        row = ref.logits_for(model, seq, device, kv_f16=True)[-1]
        top2 = np.sort(row)[-2:]
        if top2[1] - top2[0] < MIN_MARGIN:
            stop = "near-tie"
            break
        nxt = int(np.argmax(row))
        margins.append(float(top2[1] - top2[0]))
        generated.append(nxt)
        seq.append(nxt)
        if nxt in eog:
            stop = "end-of-generation"
            break
    if len(generated) < MIN_TOKENS:
        raise SystemExit(f"only {len(generated)} greedy tokens before a {stop} (need {MIN_TOKENS}): "
                         f"try another --seed")
    processed = prompt + generated[:-1]
    f16kv = ref.logits_for(model, processed, device, kv_f16=True)
    f32 = ref.logits_for(model, processed, device, kv_f16=False)
    for k, t in enumerate(generated):  # one pass must choose what the step-by-step loop chose
        p = len(prompt) - 1 + k
        if int(np.argmax(f16kv[p])) != t:
            raise RuntimeError(f"step {k}: the full-sequence pass picks {int(np.argmax(f16kv[p]))}, "
                               f"the greedy loop picked {t}")
    print(f"greedy: {len(generated)} tokens {generated} (stop: {stop}, min margin {min(margins):.3f}); "
          f"{len(processed)} positions x {f32.shape[1]} logits", flush=True)

    out = {
        "format": 1,
        "model": {"synth_args": " ".join(synth_args), "bytes": os.path.getsize(gguf_path),
                  "fnv1a64": fnv1a64(gguf_path), "tensor_types": types},
        "reference": "Hugging Face transformers Qwen3ForCausalLM, float32, eager attention, TF32 off; "
                     "weights dequantized from the GGUF by tests/oracle/gguf_reader.py; logits_f32: "
                     "pure f32; logits_f16kv: K/V rounded to f16 like jllm's default KV cache",
        "versions": ref.versions(),
        "prompt_ids": prompt,
        "greedy_ids": generated,
        "stop": stop,
        "min_margin": min(margins),
        "positions": len(processed),
        "n_vocab": int(f32.shape[1]),
        "logits_f32": b64_rows(f32),
        "logits_f16kv": b64_rows(f16kv),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
