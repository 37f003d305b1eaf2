#!/usr/bin/env python3
"""jllm's forward pass against Hugging Face transformers (an implementation we did not write).

For each model shape (a tiny one, untied, and the real Qwen3-0.6B shape, tied):
  1. transformers builds a Qwen3ForCausalLM with seeded random weights and saves it
     (save_pretrained: config.json + f32 safetensors, sharded for 0.6B);
  2. jllm-convert turns the folder into GGUF files: f32, q8_0, q4_k, q4_k_m;
  3. jllm-compile + jllm-run --backend cpu (and cuda, when built) process a fixed sequence of
     64 token ids (--prompt-ids) and generate 32 tokens greedily (--temp 0), dumping the
     logits of every processed position (--dump-logits);
  4. transformers runs the same positions on the weights read back from each GGUF, dequantized
     by our numpy reader (gguf_reader.py), so that for quantized files only arithmetic differs.

Checks, per run and per position p:  rel(p) = ||jllm(p) - hf(p)|| / ||hf(p)||
  cpu_ref, f32 KV cache vs pure-f32 transformers : max_p rel(p) <= 1e-4
  cpu_ref, f16 KV cache vs transformers with f16-rounded K/V : max_p rel(p) <= 1e-3
  cuda, f16 KV cache vs transformers with f16-rounded K/V : max_p rel(p) <= 5e-3   (BOUNDS below)
and the 32 generated tokens equal transformers' greedy choices at the same positions. A
mismatch is excused only as a near-tie: the position is within the bound and transformers' own
margin between its top token and jllm's is no larger than the logit error measured there (the
two implementations then legitimately disagree on a tie); it is reported as such.

For the cpu backend each GGUF is compiled twice: with the kv-dtype pass set to f32 (a plan for
validation: exact K/V, so the comparison with pure-f32 transformers is f32 against f32), and
with the default f16 cache. Against an f16 cache the reference rounds K and V to f16 at the same
point (hf_reference.py says why), but tiny f32 differences flip some of those roundings, which
is why that row gets the looser bound; its pure-f32 error is reported beside it. Writes OUTDIR/summary.json and OUTDIR/summary.md and
exits non-zero when any check fails.

    tests/oracle/run_oracle.py --build build --out out/oracle [--models tiny,0.6b]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Max over positions of ||a-b||/||b||, per (backend, KV cache type).
BOUNDS = {"cpu": 1e-4, "cpu-kv-f16": 1e-3, "cuda": 5e-3}
F32_KV_PASSES = "passes:\n  kv-dtype: {enabled: true, dtype: f32}\n"   # others keep their defaults
N_GENERATE = 32
N_PROMPT = 64

MODELS = {
    # CI-sized, untied (exercises output.weight), GQA 2:1, head_dim 64 != hidden/heads... (= 64)
    "tiny": {"vocab_size": 1024, "hidden_size": 256, "intermediate_size": 768,
             "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
             "head_dim": 64, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
             "rope_theta": 1e6, "tie_word_embeddings": False, "seed": 11},
    # The real Qwen3-0.6B config.json shape (head_dim 128 while hidden/heads = 64), tied.
    "0.6b": {"vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
             "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
             "head_dim": 128, "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
             "rope_theta": 1e6, "tie_word_embeddings": True, "seed": 12},
}
TYPES = ["f32", "q8_0", "q4_k", "q4_k_m"]


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def tool(build, name):
    for cand in (os.path.join(build, "tools", name), os.path.join(build, name)):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise SystemExit(f"run_oracle: {name} not found under {build}/tools or {build}")


def run(cmd, check=True):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    dt = time.time() - t0
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode} after {dt:.1f} s:\n"
                           f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p, dt


def init_random(model, seed, device):
    """Seeded weights that make every part of the network matter: projections N(0, 1/fan_in)
    (each layer's output is O(1), so deep layers are not a near-identity), norm weights
    1 + N(0, 0.2^2) (so a norm applied to the wrong tensor shows), embeddings N(0, 0.05^2)."""
    import torch
    g = torch.Generator(device=device).manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):   # a tied lm_head appears once
            if p.dim() == 1:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g, device=device))
            elif "embed_tokens" in name:
                p.copy_(0.05 * torch.randn(p.shape, generator=g, device=device))
            else:
                p.copy_(torch.randn(p.shape, generator=g, device=device) / (p.shape[1] ** 0.5))


def make_hf_folder(spec, folder, device):
    import torch
    import hf_reference as ref
    model = ref.build_model(spec, device)
    init_random(model, spec["seed"], device)
    if os.path.exists(folder):
        shutil.rmtree(folder)
    try:  # shard the big one, so the converter reads a sharded checkpoint with its index
        model.save_pretrained(folder, max_shard_size="1GB")
    except TypeError:
        model.save_pretrained(folder)
    shards = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    with open(os.path.join(folder, "config.json")) as f:
        saved = json.load(f)
    log(f"  saved {folder}: {len(shards)} shard(s), config dtype {saved.get('dtype', saved.get('torch_dtype'))}")
    originals = {n: p.detach().float().cpu().numpy() for n, p in model.named_parameters()}
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return originals, len(shards)


def read_dump(path):
    with open(path + ".json") as f:
        side = json.load(f)
    shape = side["shape"]
    logits = np.fromfile(path, dtype="<f4")
    if logits.size != shape[0] * shape[1]:
        raise RuntimeError(f"{path}: {logits.size} floats, sidecar says {shape}")
    return logits.reshape(shape), [int(t) for t in side["token_ids"]]


def compare(a, b, token_ids, n_prompt, bound):
    """a: jllm logits [P, V], b: transformers logits [P, V] on the same token_ids."""
    diff = a.astype(np.float64) - b.astype(np.float64)
    rel = np.linalg.norm(diff, axis=1) / np.linalg.norm(b.astype(np.float64), axis=1)
    max_abs = np.max(np.abs(diff), axis=1)
    P = a.shape[0]
    # jllm's generated tokens: the next processed id, and for the last row its argmax.
    generated, greedy_ok, ties, self_consistent = [], 0, [], True
    for p in range(n_prompt - 1, P):
        tok = token_ids[p + 1] if p + 1 < P else int(np.argmax(a[p]))
        if tok != int(np.argmax(a[p])):
            self_consistent = False
        generated.append(tok)
        hf_tok = int(np.argmax(b[p]))
        if tok == hf_tok:
            greedy_ok += 1
        elif b[p][hf_tok] - b[p][tok] <= max_abs[p] and rel[p] <= bound:
            greedy_ok += 1
            ties.append({"position": p, "jllm": tok, "hf": hf_tok,
                         "hf_margin": float(b[p][hf_tok] - b[p][tok]), "max_abs_err": float(max_abs[p])})
        else:
            ties.append({"position": p, "jllm": tok, "hf": hf_tok, "mismatch": True,
                         "hf_margin": float(b[p][hf_tok] - b[p][tok]), "max_abs_err": float(max_abs[p])})
    mismatches = [t for t in ties if t.get("mismatch")]
    ok = (float(rel.max()) <= bound and not mismatches and len(generated) == N_GENERATE
          and self_consistent)
    return {
        "positions": P, "max_rel": float(rel.max()), "mean_rel": float(rel.mean()),
        "worst_position": int(rel.argmax()), "max_abs": float(max_abs.max()),
        "generated": len(generated), "greedy_match": greedy_ok, "near_ties": [t for t in ties if not t.get("mismatch")],
        "mismatches": mismatches, "self_consistent": self_consistent, "bound": bound, "pass": bool(ok),
    }


def cuda_backend_state(jllm_run, plan, ids_file, work):
    """'ok', or why the CUDA backend cannot be checked ('not built', or the error)."""
    dump = os.path.join(work, "cuda-probe.f32")
    p, _ = run([jllm_run, plan, "--backend", "cuda", "--prompt-ids", ids_file, "--dump-logits", dump,
                "-n", "1", "--temp", "0", "-c", "256"], check=False)
    if p.returncode == 0:
        return "ok"
    text = (p.stdout + p.stderr).strip()
    if "not built" in text.lower():
        return "not built"
    return "error: " + text[-500:]


def check_type(args, hf_dir, model_name, wtype, model, originals, n_shards, prompt, ids_file, work,
               device, tools, cuda_state, notes, results):
    """Converts, compiles and runs one weight type on every backend; appends to results."""
    import hf_reference as ref
    from gguf_reader import GgufFile
    convert, compile_, jllm_run = tools
    gguf = os.path.join(work, f"{model_name}-{wtype}.gguf")
    plan = os.path.join(work, f"{model_name}-{wtype}.plan")
    plan32 = os.path.join(work, f"{model_name}-{wtype}-kvf32.plan")
    passes32 = os.path.join(work, "kv-f32-passes.yaml")
    with open(passes32, "w") as f:
        f.write(F32_KV_PASSES)
    # The random models have no tokenizer: prompts go in as ids (--prompt-ids), so the placeholder
    # vocabulary jllm-convert refuses without the flag is what this needs.
    _, t_conv = run([convert, hf_dir, "--type", wtype, "--allow-no-tokenizer", "-o", gguf])
    _, t_comp = run([compile_, gguf, "-o", plan])
    _, t_comp32 = run([compile_, gguf, "--passes", passes32, "-o", plan32])
    g = GgufFile(gguf)
    if wtype == "f32":  # the converter must carry f32 weights over bit for bit
        for name in g.tensors:
            w = g.dequantize(name)
            if not np.array_equal(w, originals[ref.hf_name(name)]):
                raise RuntimeError(f"{gguf}: tensor {name} differs from the saved checkpoint")
        log(f"  {wtype}: every GGUF tensor equals the saved HF weight")
    ref.load_gguf_weights(model, g, device)
    backends = []
    for b in args.backends.split(","):
        if b == "cuda":
            if cuda_state is None:
                cuda_state = cuda_backend_state(jllm_run, plan, ids_file, work)
                log(f"  CUDA backend: {cuda_state}")
                notes.append(f"CUDA backend: {cuda_state}")
            if cuda_state != "ok":
                continue
        backends.append(b)
    # (backend, KV cache type, plan, bound): cpu checks the f32-KV plan against pure f32 first.
    runs = []
    for b in backends:
        if b == "cpu":
            runs.append((b, "f32", plan32, BOUNDS["cpu"], t_comp32))
            runs.append((b, "f16", plan, BOUNDS["cpu-kv-f16"], t_comp))
        else:
            runs.append((b, "f16", plan, BOUNDS[b], t_comp))
    for b, kv, run_plan, bound, t_compile in runs:
        dump = os.path.join(work, f"{model_name}-{wtype}-{b}-kv{kv}.f32")
        _, t_run = run([jllm_run, run_plan, "--backend", b, "--prompt-ids", ids_file,
                        "--dump-logits", dump, "-n", str(N_GENERATE), "--temp", "0", "-c", "256"])
        a, token_ids = read_dump(dump)
        if token_ids[:N_PROMPT] != prompt:
            raise RuntimeError(f"{dump}.json: processed ids do not start with the prompt")
        b32 = ref.logits_for(model, token_ids, device, kv_f16=False)
        if kv == "f32":  # exact cache: compare with pure f32 only
            r = compare(a, b32, token_ids, N_PROMPT, bound)
            pure = r["max_rel"]
        else:            # f16 cache: the reference rounds K/V to f16 too; pure f32 beside it
            b16 = ref.logits_for(model, token_ids, device, kv_f16=True)
            r = compare(a, b16, token_ids, N_PROMPT, bound)
            pure = compare(a, b32, token_ids, N_PROMPT, bound)["max_rel"]
        r.update({"model": model_name, "type": wtype, "backend": b, "kv": kv, "shards": n_shards,
                  "reference": "pure f32" if kv == "f32" else "f16-rounded K/V",
                  "max_rel_pure_f32": pure,
                  "seconds": {"convert": round(t_conv, 1), "compile": round(t_compile, 1),
                              "run": round(t_run, 1)}})
        results.append(r)
        log(f"  {model_name} {wtype:6s} {b:4s} kv {kv}: max rel {r['max_rel']:.2e} vs {r['reference']} "
            f"(pure f32 {pure:.2e}), greedy {r['greedy_match']}/{N_GENERATE}, "
            f"{'PASS' if r['pass'] else 'FAIL'} (run {t_run:.1f} s)")
        os.remove(dump)
    os.remove(gguf)
    os.remove(plan)
    os.remove(plan32)
    return cuda_state


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build folder with tools/jllm-{convert,compile,run}")
    ap.add_argument("--out", required=True, help="where summary.json and summary.md go")
    ap.add_argument("--work", default=None, help="scratch folder for models (default: $TMPDIR/jllm-oracle-work, "
                    "else /tmp/jllm-oracle-work); needs about 6 GB for 0.6b")
    ap.add_argument("--models", default="tiny,0.6b")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--backends", default="cpu,cuda", help="cuda is skipped when not built")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    args = ap.parse_args()

    import torch
    import hf_reference as ref
    from gguf_reader import GgufFile

    ref.setup_torch()
    device = torch.device(args.device) if args.device else ref.default_device()
    os.makedirs(args.out, exist_ok=True)
    work = args.work or os.path.join(os.environ.get("TMPDIR", "/tmp"), "jllm-oracle-work")
    os.makedirs(work, exist_ok=True)
    convert, compile_, jllm_run = (tool(args.build, n) for n in ("jllm-convert", "jllm-compile", "jllm-run"))
    log(f"versions: {ref.versions()}; torch device {device}; work folder {work}")

    results, notes = [], []
    cuda_state = None
    t_start = time.time()
    for model_name in args.models.split(","):
        spec = MODELS[model_name]
        log(f"== {model_name}: building the transformers model")
        hf_dir = os.path.join(work, f"hf-{model_name}")
        originals, n_shards = make_hf_folder(spec, hf_dir, device)
        rng = np.random.default_rng(1000 + spec["seed"])
        prompt = [int(x) for x in rng.integers(0, spec["vocab_size"], N_PROMPT)]
        ids_file = os.path.join(work, f"{model_name}.ids")
        with open(ids_file, "w") as f:
            f.write(" ".join(map(str, prompt)) + "\n")
        model = ref.build_model(spec, device)
        for wtype in args.types.split(","):
            try:
                cuda_state = check_type(args, hf_dir, model_name, wtype, model, originals, n_shards,
                                        prompt, ids_file, work, device, (convert, compile_, jllm_run),
                                        cuda_state, notes, results)
            except Exception as e:  # one broken run must not hide the others
                log(f"  {model_name} {wtype}: ERROR {e}")
                results.append({"model": model_name, "type": wtype, "backend": "-", "error": str(e)[-2000:],
                                "pass": False})
        del model
        shutil.rmtree(hf_dir, ignore_errors=True)

    summary = {"bounds": BOUNDS, "prompt_tokens": N_PROMPT, "generated_tokens": N_GENERATE,
               "reference": "transformers Qwen3ForCausalLM, float32, eager attention, TF32 off; "
                            "pure f32 against jllm's f32 KV cache (cpu), K/V rounded to f16 against "
                            "its f16 KV cache (pure f32 reported beside)",
               "versions": ref.versions(), "notes": notes, "runs": results,
               "seconds": round(time.time() - t_start, 1),
               "pass": bool(results) and all(r["pass"] for r in results)}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    md = markdown(summary)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(md)
    print(md)
    return 0 if summary["pass"] else 1


def markdown(s):
    lines = [f"Oracle: jllm vs transformers ({s['versions']['transformers']}, torch "
             f"{s['versions']['torch']}, {s['versions']['device']}); {s['prompt_tokens']} prompt ids + "
             f"{s['generated_tokens']} greedy tokens; bound on max rel err: cpu f32 KV vs pure f32 "
             f"{s['bounds']['cpu']:g}, cpu f16 KV {s['bounds']['cpu-kv-f16']:g}, cuda {s['bounds']['cuda']:g}", "",
             "| model | weights | backend | KV cache | reference | positions | max rel err | mean rel err | "
             "max rel vs pure f32 | greedy | near-ties | result |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in s["runs"]:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['type']} | - | - | - | - | - | - | - | - | - | ERROR: "
                         f"{r['error'].splitlines()[0][:120]} |")
            continue
        lines.append(f"| {r['model']} | {r['type']} | {r['backend']} | {r['kv']} | {r['reference']} | "
                     f"{r['positions']} | {r['max_rel']:.2e} | "
                     f"{r['mean_rel']:.2e} | {r['max_rel_pure_f32']:.2e} | {r['greedy_match']}/{s['generated_tokens']} | "
                     f"{len(r['near_ties'])} | {'pass' if r['pass'] else 'FAIL'} |")
    for n in s["notes"]:
        lines.append(f"\n{n}")
    lines.append(f"\noverall: {'PASS' if s['pass'] else 'FAIL'} ({s['seconds']} s)")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
