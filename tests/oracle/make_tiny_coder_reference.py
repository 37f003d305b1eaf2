#!/usr/bin/env python3
"""Reference output of Hugging Face transformers for the trained tiny-coder model.

Loads the exact weights of tiny-coder-q8_0.gguf into transformers' Qwen3ForCausalLM
(dequantized by our numpy reader, gguf_reader.py: Q8_0 -> f32 is exact), tokenizes a few fixed
prompts with Hugging Face `tokenizers` (tokenizer.json, optionally gzipped), and writes, per
prompt, transformers' greedy continuation and, for every processed position, the top-5 logits,
logsumexp, the L2 norm of the row and the logits of a few fixed ids. The C++ test
tests/oracle_cpu/tiny_coder_reference_test.cc checks cpu_ref against this file in CI.

Float32, eager attention, TF32 off; K and V are rounded to f16 as jllm's cache stores them
(hf_reference.py). Needs no jllm binary.

    tests/oracle/make_tiny_coder_reference.py --gguf PATH/tiny-coder-q8_0.gguf[.gz] \
        --tokenizer PATH/tokenizer.json[.gz] --out tests/data/tiny_coder_reference.json

Both inputs may be gzipped (so that they travel to the GPU machine within its size limit).
"""

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PROMPTS = [
    "def fibonacci(n):",
    "import os\n",
    "class Stack:\n    def __init__(self):",
    "for i in range(",
    "def read_json(path):\n    with open(path) as f:\n",
]
N_GENERATE = 48        # greedy tokens per prompt before any cut (the test needs >= 32)
MIN_TOKENS = 32
# A continuation is cut before a step whose top-2 logits are closer than this: there f32
# rounding could legitimately pick either token, so the golden tokens would test luck.
MIN_MARGIN = 0.05
# Fixed entries recorded at every position, besides the top 5: a spread over the vocabulary,
# the ASCII/whitespace region Python code lives in, and the special tokens.
LOGIT_IDS = [0, 1, 11, 13, 25, 198, 220, 256, 271, 284, 304, 330, 1000, 4210, 10000, 50000,
             100000, 151643, 151645, 151935]


def load_tokenizer(path):
    from tokenizers import Tokenizer
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return Tokenizer.from_str(f.read())
    return Tokenizer.from_file(path)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--tokenizer", required=True, help="Qwen3 tokenizer.json (or .json.gz)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()

    import torch
    import hf_reference as ref
    from gguf_reader import GgufFile

    ref.setup_torch()
    device = torch.device(args.device) if args.device else ref.default_device()
    gguf_path = args.gguf
    if gguf_path.endswith(".gz"):  # the reader maps the file: unpack it first
        gguf_path = os.path.join(tempfile.mkdtemp(prefix="tiny-coder-"), os.path.basename(gguf_path)[:-3])
        with gzip.open(args.gguf, "rb") as src, open(gguf_path, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 22)
    g = GgufFile(gguf_path)
    spec = ref.spec_from_gguf(g)
    print(f"model {gguf_path}: {spec}", flush=True)
    model = ref.build_model(spec, device)
    ref.load_gguf_weights(model, g, device)

    tok = load_tokenizer(args.tokenizer)
    vocab = g.metadata["tokenizer.ggml.tokens"]
    eog = set()
    for name in ("<|im_end|>", "<|endoftext|>"):
        i = tok.token_to_id(name)
        if i is not None:
            eog.add(i)
    if "tokenizer.ggml.eos_token_id" in g.metadata:
        eog.add(int(g.metadata["tokenizer.ggml.eos_token_id"]))

    prompts = []
    for text in PROMPTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        for i in ids:  # the GGUF's vocabulary must spell these ids as tokenizer.json does
            if vocab[i] != tok.id_to_token(i):
                raise RuntimeError(f"id {i}: GGUF token {vocab[i]!r} vs tokenizer.json {tok.id_to_token(i)!r}")
        seq = list(ids)
        generated, margins, stop = [], [], "length"
        for _ in range(N_GENERATE):
            row = ref.logits_for(model, seq, device, kv_f16=True)[-1]
            top2 = np.sort(row)[-2:]
            nxt = int(np.argmax(row))
            if top2[1] - top2[0] < MIN_MARGIN:
                stop = "near-tie"
                break
            margins.append(float(top2[1] - top2[0]))
            generated.append(nxt)
            seq.append(nxt)
            if nxt in eog:
                stop = "end-of-generation"
                break
        if len(generated) < MIN_TOKENS and stop != "end-of-generation":
            print(f"WARNING: {text!r}: only {len(generated)} tokens before a near-tie", flush=True)
        # One pass over every processed position: the prompt and the generated tokens fed back
        # (the last generated token is not processed).
        processed = ids + generated[:-1]
        logits = ref.logits_for(model, processed, device, kv_f16=True)
        positions = []
        for p in range(len(processed)):
            row = logits[p]
            top = np.argsort(-row, kind="stable")[:5]
            positions.append({
                "top_ids": [int(t) for t in top],
                "top_logits": [float(row[t]) for t in top],
                "logsumexp": ref.logsumexp(row),
                "norm": float(np.linalg.norm(row.astype(np.float64))),
                "logits_at": [float(row[t]) for t in LOGIT_IDS],
            })
        # The single pass must choose the same tokens as the step-by-step greedy loop.
        for k, t in enumerate(generated):
            p = len(ids) - 1 + k
            if int(np.argmax(logits[p])) != t:
                raise RuntimeError(f"{text!r}: step {k}: full-sequence pass picks {int(np.argmax(logits[p]))}, "
                                   f"greedy loop picked {t}")
        decoded = tok.decode(generated, skip_special_tokens=False)
        print(f"{text!r} -> {decoded!r} ({len(generated)} tokens, stop: {stop}, "
              f"min margin {min(margins) if margins else 0:.3f})", flush=True)
        prompts.append({"text": text, "prompt_ids": ids, "greedy_ids": generated, "greedy_text": decoded,
                        "stop": stop, "min_margin": min(margins) if margins else None,
                        "positions": positions})

    out = {
        "format": 1,
        "model": {"file": os.path.basename(gguf_path), "bytes": os.path.getsize(gguf_path),
                  "sha256": sha256(gguf_path)},
        "reference": "Hugging Face transformers Qwen3ForCausalLM, float32, eager attention, TF32 off, "
                     "K/V rounded to f16 like jllm's KV cache; weights dequantized from the GGUF by "
                     "tests/oracle/gguf_reader.py; prompts tokenized by Hugging Face tokenizers",
        "versions": ref.versions(),
        "logit_ids": LOGIT_IDS,
        "prompts": prompts,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {args.out}: {len(prompts)} prompts, "
          f"{sum(len(p['greedy_ids']) for p in prompts)} greedy tokens", flush=True)
    short = [p["text"] for p in prompts if len(p["greedy_ids"]) < MIN_TOKENS and p["stop"] != "end-of-generation"]
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
