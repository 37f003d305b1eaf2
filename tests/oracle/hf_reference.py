"""Hugging Face transformers as the reference implementation of Qwen3 for jllm's oracle.

Shared by run_oracle.py (random-weight models) and make_tiny_coder_reference.py (the trained
tiny-coder). Everything runs in float32 with eager attention and TF32 off, so only the order of
f32 arithmetic differs from jllm's cpu_ref.

The one deliberate change to transformers: jllm stores the KV cache in f16 (its default, as is
llama.cpp's), so cpu_ref attends over K (after q/k-norm and RoPE) and V rounded to f16. With
kv_f16=True the reference rounds key and value states to f16 at the same point, inside the
attention function, so that storage precision is not counted as an arithmetic difference.
Results with kv_f16=False (pure f32) are reported beside them for information.
"""

import math

import numpy as np
import torch

from gguf_reader import GgufFile

_STATE = {"kv_f16": True, "calls": 0, "installed": False}


def setup_torch():
    """Plain f32 everywhere: no TF32 matmuls, no reduced-precision reductions."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"):
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.set_float32_matmul_precision("highest")


def default_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def install_kv_rounding():
    """Wraps transformers' Qwen3 eager attention so K and V can be rounded to f16 first."""
    if _STATE["installed"]:
        return
    import transformers.models.qwen3.modeling_qwen3 as mq
    original = mq.eager_attention_forward

    def eager_with_f16_kv(module, query, key, value, attention_mask, *args, **kwargs):
        _STATE["calls"] += 1
        if _STATE["kv_f16"]:
            key = key.to(torch.float16).to(query.dtype)
            value = value.to(torch.float16).to(query.dtype)
        return original(module, query, key, value, attention_mask, *args, **kwargs)

    mq.eager_attention_forward = eager_with_f16_kv
    _STATE["installed"] = True


def qwen3_config(spec):
    """A transformers Qwen3Config from a plain dict (keys as in config.json)."""
    from transformers import Qwen3Config
    common = dict(
        vocab_size=spec["vocab_size"], hidden_size=spec["hidden_size"],
        intermediate_size=spec["intermediate_size"], num_hidden_layers=spec["num_hidden_layers"],
        num_attention_heads=spec["num_attention_heads"],
        num_key_value_heads=spec["num_key_value_heads"], head_dim=spec["head_dim"],
        max_position_embeddings=spec["max_position_embeddings"], rms_norm_eps=spec["rms_norm_eps"],
        tie_word_embeddings=spec["tie_word_embeddings"], hidden_act="silu", attention_bias=False,
        use_sliding_window=False)
    theta = float(spec["rope_theta"])
    try:  # transformers 5: RoPE settings live in rope_parameters
        cfg = Qwen3Config(rope_parameters={"rope_type": "default", "rope_theta": theta}, **common)
    except TypeError:
        cfg = Qwen3Config(rope_theta=theta, **common)
    try:  # transformers 4.x reads config.rope_theta; check_model verifies what was built
        cfg.rope_theta = theta
    except Exception:
        pass
    return cfg


def build_model(spec, device):
    """An f32 Qwen3ForCausalLM with eager attention (weights as transformers initializes them)."""
    from transformers import Qwen3ForCausalLM
    install_kv_rounding()
    cfg = qwen3_config(spec)
    with torch.device(device):
        model = Qwen3ForCausalLM(cfg)
    model = model.to(device=device, dtype=torch.float32).eval()
    try:
        model.set_attn_implementation("eager")
    except Exception:  # older API
        model.config._attn_implementation = "eager"
    check_model(model, spec)
    return model


def check_model(model, spec):
    """Fails loudly if transformers did not take the config as meant (RoPE base, tying)."""
    d = spec["head_dim"]
    want = 1.0 / (float(spec["rope_theta"]) ** (np.arange(0, d, 2, dtype=np.float64) / d))
    got = model.model.rotary_emb.inv_freq.detach().double().cpu().numpy()
    if not np.allclose(got, want, rtol=1e-5):
        raise RuntimeError(f"transformers built RoPE inv_freq {got[:3]}..., expected {want[:3]}... "
                           f"(rope_theta {spec['rope_theta']} not applied)")
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    if tied != bool(spec["tie_word_embeddings"]):
        raise RuntimeError(f"lm_head tied = {tied}, config says {spec['tie_word_embeddings']}")


# GGUF tensor name -> HF parameter name (FORMATS.md §5; the converter's table, written again
# here so the oracle does not share the C++ mapping it checks).
_LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj",
          "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
          "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
          "attn_k_norm": "self_attn.k_norm", "ffn_norm": "post_attention_layernorm",
          "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def hf_name(gguf_name):
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if gguf_name in fixed:
        return fixed[gguf_name]
    parts = gguf_name.split(".")
    if len(parts) == 4 and parts[0] == "blk" and parts[3] == "weight" and parts[2] in _LAYER:
        return f"model.layers.{int(parts[1])}.{_LAYER[parts[2]]}.weight"
    raise KeyError(f"GGUF tensor '{gguf_name}' is not in the Qwen3 table")


def spec_from_gguf(g: GgufFile):
    """The model's config.json-style dict, read from GGUF metadata (FORMATS.md §5)."""
    m = g.metadata
    if m.get("general.architecture") != "qwen3":
        raise RuntimeError(f"{g.path}: architecture {m.get('general.architecture')!r}, not qwen3")
    head_dim = int(m["qwen3.attention.key_length"])
    return {
        "vocab_size": len(m["tokenizer.ggml.tokens"]),
        "hidden_size": int(m["qwen3.embedding_length"]),
        "intermediate_size": int(m["qwen3.feed_forward_length"]),
        "num_hidden_layers": int(m["qwen3.block_count"]),
        "num_attention_heads": int(m["qwen3.attention.head_count"]),
        "num_key_value_heads": int(m.get("qwen3.attention.head_count_kv", m["qwen3.attention.head_count"])),
        "head_dim": head_dim,
        "max_position_embeddings": int(m["qwen3.context_length"]),
        "rms_norm_eps": float(m["qwen3.attention.layer_norm_rms_epsilon"]),
        "rope_theta": float(m.get("qwen3.rope.freq_base", 10000.0)),
        "tie_word_embeddings": "output.weight" not in g.tensors,
    }


@torch.no_grad()
def load_gguf_weights(model, g: GgufFile, device):
    """Copies every GGUF tensor, dequantized to f32 by gguf_reader, into the HF model."""
    params = dict(model.named_parameters())
    assigned = set()
    for name, info in g.tensors.items():
        target = hf_name(name)
        w = torch.from_numpy(np.ascontiguousarray(g.dequantize(name)))
        p = params[target]
        if tuple(p.shape) != tuple(w.shape):
            raise RuntimeError(f"{name}: GGUF shape {tuple(w.shape)} vs HF {tuple(p.shape)}")
        p.copy_(w.to(device))
        assigned.add(target)
    missing = set(params) - assigned
    if model.config.tie_word_embeddings:
        missing.discard("lm_head.weight")
    if missing:
        raise RuntimeError(f"{g.path}: no GGUF tensor for {sorted(missing)[:5]}")


@torch.no_grad()
def logits_for(model, token_ids, device, kv_f16=True):
    """float32 logits [len(token_ids), vocab] of one causal pass over token_ids."""
    _STATE["kv_f16"] = kv_f16
    _STATE["calls"] = 0
    ids = torch.tensor([list(token_ids)], dtype=torch.long, device=device)
    out = model(input_ids=ids, use_cache=False)
    if _STATE["calls"] != model.config.num_hidden_layers:
        raise RuntimeError(f"the f16-KV attention wrapper ran {_STATE['calls']} times for "
                           f"{model.config.num_hidden_layers} layers: transformers did not use "
                           f"eager attention ({model.config._attn_implementation!r})")
    return out.logits[0].float().cpu().numpy()


def logsumexp(row):
    m = float(np.max(row))
    return m + math.log(float(np.sum(np.exp(row.astype(np.float64) - m))))


def versions():
    import transformers
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "numpy": np.__version__,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}
