"""rlx_llm (rlx/llm.h) against an independent numpy forward pass of the Llama-family decoder.

The test writes GGUF files with gguf-py's GGUFWriter (llama.cpp's Python package) from seeded
random weights at several sizes and weight types (F32, F16, Q8_0 through gguf.quants.quantize, a
quantized token_embd, tied and separate output, qwen2's biases and NeoX rope, partial rotary,
linear rope scaling), opens them through librlx (ctypes), runs a prompt (prefill) and then several
one-token decode steps (teacher-forced: the next input is fixed by the test, not the model's
choice) and compares every step's logits with numpy.

The numpy oracle is written here from the formulas, in float64, recomputing the whole sequence
with causal attention (no KV cache): RMSNorm x / sqrt(mean(x^2) + eps) * g (Zhang & Sennrich
2019); RoPE (Su et al. 2021) with theta_i = base^(-2i/n_rot) at position p / scale, rotating
adjacent pairs (x[2i], x[2i+1]) for llama (llama.cpp's normal mode; GGUF's llama Q/K rows are in
that layout) and halves (x[i], x[i + n_rot/2]) for qwen2 (NeoX mode), dims past n_rot unchanged;
grouped-query attention softmax(q k^T / sqrt(D)) v with query head h reading kv head
h // (H / Hkv); SwiGLU (silu(x Wg) * (x Wu)) Wd; a GGUF weight of ggml shape [K, N] is the numpy
[N, K] matrix W and a projection is x W^T. Quantized weights enter the oracle as gguf-py's own
dequantization (gguf.quants.dequantize), F16 as its float16 values.

Tolerance: rlx computes in float32; the oracle in float64. Each logit is a sum over a few hundred
products through 2-3 layers, so float32 rounding (2^-24 relative per operation, growing ~sqrt(n)
with n accumulated terms) leaves errors of order 1e-6 of the logit range; we require the max
abs error over every step's logits to be below 1e-4 of the logit range (100x margin for MLX's
blocked sums and fast rsqrt/exp), and the argmax of every row to agree wherever the oracle's
top-2 margin exceeds that bound.

usage: test_llama.py BUILD_DIR"""
import ctypes
import os
import sys
import tempfile

import gguf
import numpy as np

build = sys.argv[1]
lib = ctypes.CDLL(os.path.join(build, "librlx.so"))
vp = ctypes.c_void_p
lib.rlx_status_message.restype = ctypes.c_char_p
lib.rlx_status_message.argtypes = [vp]
lib.rlx_status_free.argtypes = [vp]
lib.rlx_llm_open.restype = vp
lib.rlx_llm_open.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
lib.rlx_llm_close.argtypes = [vp]
lib.rlx_llm_step.restype = vp
lib.rlx_llm_step.argtypes = [vp, ctypes.POINTER(ctypes.c_int32), ctypes.c_int64, ctypes.POINTER(ctypes.c_float),
                             ctypes.POINTER(ctypes.c_int32)]
failures = []


def ok(st, what):
    if st:
        msg = lib.rlx_status_message(st).decode()
        lib.rlx_status_free(st)
        raise RuntimeError(f"{what}: {msg}")


Q = gguf.GGMLQuantizationType


def write_model(path, cfg, rng):
    """Writes a GGUF file; returns the weights as the oracle sees them (float64)."""
    arch = cfg["arch"]
    E, H, Hkv, F, V, L = cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["ffn"], cfg["vocab"], cfg["layers"]
    D = E // H
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(L)
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(E)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_layer_norm_rms_eps(cfg["eps"])
    w.add_rope_freq_base(cfg["base"])
    if cfg.get("n_rot"):
        w.add_rope_dimension_count(cfg["n_rot"])
    if cfg.get("rope_scale"):
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(cfg["rope_scale"])
    seen = {}

    def put(name, a, qtype):
        a = a.astype(np.float32)
        if qtype == Q.F32:
            w.add_tensor(name, a)
            seen[name] = a.astype(np.float64)
        elif qtype == Q.F16:
            h = a.astype(np.float16)
            w.add_tensor(name, h)
            seen[name] = h.astype(np.float64)
        else:
            q = gguf.quants.quantize(a, qtype)
            w.add_tensor(name, q, raw_dtype=qtype)
            seen[name] = gguf.quants.dequantize(q, qtype).astype(np.float64).reshape(a.shape)

    mt, et = cfg["wtype"], cfg.get("embd_type", Q.F32)
    put("token_embd.weight", rng.standard_normal((V, E)), et)
    for l in range(L):
        p = f"blk.{l}."
        put(p + "attn_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
        put(p + "attn_q.weight", rng.standard_normal((H * D, E)) / np.sqrt(E), mt)
        put(p + "attn_k.weight", rng.standard_normal((Hkv * D, E)) / np.sqrt(E), mt)
        put(p + "attn_v.weight", rng.standard_normal((Hkv * D, E)) / np.sqrt(E), mt)
        if cfg.get("bias"):
            for n, rows in (("attn_q", H * D), ("attn_k", Hkv * D), ("attn_v", Hkv * D)):
                put(p + n + ".bias", 0.1 * rng.standard_normal(rows), Q.F32)
        put(p + "attn_output.weight", rng.standard_normal((E, H * D)) / np.sqrt(H * D), mt)
        put(p + "ffn_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
        put(p + "ffn_gate.weight", rng.standard_normal((F, E)) / np.sqrt(E), mt)
        put(p + "ffn_up.weight", rng.standard_normal((F, E)) / np.sqrt(E), mt)
        put(p + "ffn_down.weight", rng.standard_normal((E, F)) / np.sqrt(F), mt)
    put("output_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
    if not cfg.get("tied"):
        put("output.weight", 2 * rng.standard_normal((V, E)) / np.sqrt(E), mt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return seen


def rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rope(x, nh, D, n_rot, base, scale, neox):
    """x [S, nh*D] -> rotated, positions 0..S-1."""
    S = x.shape[0]
    x = x.reshape(S, nh, D).copy()
    i = np.arange(n_rot // 2)
    ang = (np.arange(S)[:, None] / scale) * base ** (-2.0 * i / n_rot)  # [S, n_rot/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        a, b = x[..., : n_rot // 2].copy(), x[..., n_rot // 2: n_rot].copy()
        x[..., : n_rot // 2], x[..., n_rot // 2: n_rot] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., 0:n_rot:2].copy(), x[..., 1:n_rot:2].copy()
        x[..., 0:n_rot:2], x[..., 1:n_rot:2] = a * c - b * s, b * c + a * s
    return x.reshape(S, nh * D)


def forward(W, cfg, tokens):
    E, H, Hkv, L = cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["layers"]
    D = E // H
    n_rot, neox = cfg.get("n_rot") or D, cfg["arch"] == "qwen2"
    S = len(tokens)
    h = W["token_embd.weight"][tokens]
    mask = np.triu(np.full((S, S), -np.inf), 1)
    for l in range(L):
        p = f"blk.{l}."
        x = rms(h, W[p + "attn_norm.weight"], cfg["eps"])
        q, k, v = (x @ W[p + n + ".weight"].T + W.get(p + n + ".bias", 0) for n in ("attn_q", "attn_k", "attn_v"))
        q = rope(q, H, D, n_rot, cfg["base"], cfg.get("rope_scale", 1), neox)
        k = rope(k, Hkv, D, n_rot, cfg["base"], cfg.get("rope_scale", 1), neox)
        out = np.zeros((S, H * D))
        for hh in range(H):
            g = hh // (H // Hkv)
            sc = q[:, hh * D:(hh + 1) * D] @ k[:, g * D:(g + 1) * D].T / np.sqrt(D) + mask
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            pr /= pr.sum(-1, keepdims=True)
            out[:, hh * D:(hh + 1) * D] = pr @ v[:, g * D:(g + 1) * D]
        h = h + out @ W[p + "attn_output.weight"].T
        x = rms(h, W[p + "ffn_norm.weight"], cfg["eps"])
        gt, up = x @ W[p + "ffn_gate.weight"].T, x @ W[p + "ffn_up.weight"].T
        h = h + (gt / (1 + np.exp(-gt)) * up) @ W[p + "ffn_down.weight"].T
    h = rms(h, W["output_norm.weight"], cfg["eps"])
    return h @ W.get("output.weight", W["token_embd.weight"]).T


CONFIGS = [
    dict(name="llama-f32", arch="llama", dim=64, heads=4, kv_heads=2, ffn=96, vocab=80, layers=2, ctx=64, eps=1e-5, base=10000.0,
         wtype=Q.F32),
    dict(name="llama-f16-partial-rope-scaled", arch="llama", dim=64, heads=4, kv_heads=4, ffn=128, vocab=100, layers=2, ctx=48, eps=1e-6,
         base=500000.0, n_rot=8, rope_scale=4.0, wtype=Q.F16, embd_type=Q.F16, tied=True),
    dict(name="qwen2-f16-bias-tied", arch="qwen2", dim=96, heads=6, kv_heads=2, ffn=160, vocab=120, layers=3, ctx=64, eps=1e-6,
         base=1000000.0, wtype=Q.F16, bias=True, tied=True),
    dict(name="mistral-q8_0", arch="mistral", dim=128, heads=4, kv_heads=1, ffn=256, vocab=96, layers=2, ctx=64, eps=1e-5, base=10000.0,
         wtype=Q.Q8_0),
    dict(name="llama-q8_0-embd-tied", arch="llama", dim=64, heads=2, kv_heads=1, ffn=128, vocab=64, layers=2, ctx=32, eps=1e-5,
         base=10000.0, wtype=Q.Q8_0, embd_type=Q.Q8_0, tied=True),
]

with tempfile.TemporaryDirectory() as tmp:
    for ci, cfg in enumerate(CONFIGS):
        rng = np.random.default_rng(1000 + ci)
        path = os.path.join(tmp, cfg["name"] + ".gguf")
        W = write_model(path, cfg, rng)
        V = cfg["vocab"]
        prompt_len, n_decode = 7, 6
        seq = rng.integers(0, V, prompt_len + n_decode).astype(np.int32)
        ref = forward(W, cfg, seq)  # [S, V]
        m = vp()
        ok(lib.rlx_llm_open(path.encode(), None, ctypes.byref(m)), "open " + cfg["name"])
        try:
            got = np.zeros((len(seq), V), np.float32)
            nxt = ctypes.c_int32()
            fp = ctypes.POINTER(ctypes.c_float)
            ok(lib.rlx_llm_step(m, seq.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), prompt_len, got.ctypes.data_as(fp), ctypes.byref(nxt)),
               "prefill")
            if nxt.value != int(np.argmax(got[prompt_len - 1])):
                failures.append(f"{cfg['name']}: greedy next {nxt.value} != argmax of its own logits")
            for i in range(prompt_len, len(seq)):
                row = got[i:]
                ok(lib.rlx_llm_step(m, seq[i:].ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), 1, row.ctypes.data_as(fp), None),
                   f"decode {i}")
        finally:
            lib.rlx_llm_close(m)
        rng_l = ref.max() - ref.min()
        err = np.abs(got - ref).max(axis=1)
        bound = 1e-4 * rng_l
        srt = np.sort(ref, axis=1)
        margin = srt[:, -1] - srt[:, -2]
        am_bad = [(i, float(margin[i])) for i in range(len(seq)) if margin[i] > bound and got[i].argmax() != ref[i].argmax()]
        print(f"{cfg['name']}: logit range {rng_l:.3f}, max abs err prefill {err[:prompt_len].max():.2e}, decode "
              f"{err[prompt_len:].max():.2e} (bound {bound:.2e}); argmax disagreements {am_bad}")
        if err.max() > bound:
            failures.append(f"{cfg['name']}: max abs logit error {err.max():.3e} > {bound:.3e} (rows {np.nonzero(err > bound)[0].tolist()})")
        if am_bad:
            failures.append(f"{cfg['name']}: argmax differs at {am_bad}")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
