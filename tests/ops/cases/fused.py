"""Fused blocks against numpy float64 compositions of the reference ops (tests/ops/nn_ref.py):
FusedResidualLN / FusedResidualRmsNorm (with and without bias / beta), FusedSwiGLU (gate_first,
cast_to, many rows, strided and float16 x), FusedAttentionBlock (biases, rope, every mask kind with Attention's semantics) and
FusedTransformerLayer (BERT post-norm, activations, masks); error cases."""
import numpy as np

import nn_ref as R
from opcase import DT, IS, Case, F, I, S, node

rng = np.random.default_rng(9)


def rnd(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def residual_cases():
    for shape in ((2, 3, 8), (5, 4), (6,)):
        e = shape[-1]
        x, r, bias, g, b = rnd(*shape), rnd(*shape), rnd(e), rnd(e, lo=0.5, hi=1.5), rnd(e)
        tag = "x".join(map(str, shape))
        for hb in (0, 1):
            s = x.astype(np.float64) + r + (bias if hb else 0)
            ins = {"x": x, "r": r, **({"bias": bias} if hb else {}), "g": g, "b": b}
            yield Case(f"resln_{tag}_bias{hb}", [node("FusedResidualLN", list(ins), ["y"], has_bias=I(hb))], ins,
                       {"y": R.layer_norm(s, g, b).astype(np.float32)}, atol=2e-5, rtol=2e-5)
            for beta in (0, 1):
                ins = {"x": x, "r": r, **({"bias": bias} if hb else {}), "g": g, **({"b": b} if beta else {})}
                yield Case(f"resrms_{tag}_bias{hb}_beta{beta}",
                           [node("FusedResidualRmsNorm", list(ins), ["y"], has_bias=I(hb), epsilon=F(1e-5))], ins,
                           {"y": R.rms_norm(s, g, b if beta else None, eps=1e-5).astype(np.float32)}, atol=2e-5,
                           rtol=2e-5)
    x = rnd(2, 4)
    for nm, op, ins, attrs in (
            ("resln_err_count", "FusedResidualLN", {"x": x, "r": x, "g": rnd(4), "b": rnd(4)}, {"has_bias": I(1)}),
            ("resln_err_shape", "FusedResidualLN", {"x": x, "r": x[:1], "g": rnd(4), "b": rnd(4)}, {}),
            ("resrms_err_gamma", "FusedResidualRmsNorm", {"x": x, "r": x, "g": rnd(3)}, {}),
            ("resrms_err_count", "FusedResidualRmsNorm", {"x": x, "r": x, "g": rnd(4)}, {"has_bias": I(1)})):
        yield Case(nm, [node(op, list(ins), ["y"], **attrs)], ins, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def swiglu_cases():
    for shape in ((8,), (2, 3, 6)):
        x = rnd(*shape, lo=-3, hi=3)
        n = shape[-1] // 2
        lo, hi = x[..., :n].astype(np.float64), x[..., n:].astype(np.float64)
        tag = "x".join(map(str, shape))
        yield Case(f"swiglu_{tag}", [node("FusedSwiGLU", ["x"], ["y"])], {"x": x},
                   {"y": (lo * R.silu(hi)).astype(np.float32)}, atol=2e-6, rtol=2e-5)
        yield Case(f"swiglu_gate_first_{tag}", [node("FusedSwiGLU", ["x"], ["y"], gate_first=I(1))], {"x": x},
                   {"y": (hi * R.silu(lo)).astype(np.float32)}, atol=2e-6, rtol=2e-5)
        yield Case(f"swiglu_cast_{tag}", [node("FusedSwiGLU", ["x"], ["y"], cast_to=DT("float16"))], {"x": x},
                   {"y": (lo * R.silu(hi)).astype(np.float16)}, atol=2e-3, rtol=2e-3)
    # many rows of an odd width (rlx's CPU kernel splits rows over its pool; SiLU 8 or 16 at a
    # time, then the tail), a strided x (a Transpose feeding it), float16 x (MLX ops)
    x = rnd(40, 2 * 67, lo=-6, hi=6)
    lo, hi = x[:, :67].astype(np.float64), x[:, 67:].astype(np.float64)
    for gf in (0, 1):
        want = (lo * R.silu(hi)) if not gf else (hi * R.silu(lo))
        yield Case(f"swiglu_rows_gate_first{gf}", [node("FusedSwiGLU", ["x"], ["y"], gate_first=I(gf))], {"x": x},
                   {"y": want.astype(np.float32)}, atol=2e-6, rtol=2e-5)
    yield Case("swiglu_strided", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])), node("FusedSwiGLU", ["x"], ["y"], gate_first=I(1))],
               {"xt": np.ascontiguousarray(x.T)}, {"y": (hi * R.silu(lo)).astype(np.float32)}, atol=2e-6, rtol=2e-5)
    x16 = rnd(3, 16, lo=-3, hi=3, dtype=np.float16)
    yield Case("swiglu_f16", [node("FusedSwiGLU", ["x"], ["y"], gate_first=I(1))], {"x": x16},
               {"y": (x16[:, 8:].astype(np.float64) * R.silu(x16[:, :8].astype(np.float64))).astype(np.float16)}, atol=3e-3, rtol=3e-3)
    for nm, x, attrs in (("odd", rnd(2, 5), {}), ("gate", rnd(4), {"gate_first": I(2)}),
                         ("cast", rnd(4), {"cast_to": DT("int32")})):
        yield Case(f"swiglu_err_{nm}", [node("FusedSwiGLU", ["x"], ["y"], **attrs)], {"x": x}, {},
                   expect_error="INVALID_ARGUMENT", modes=["lazy"])


def attn_block_ref(h, qkv_w, out_w, heads, qkv_b=None, out_b=None, cos=None, sin=None, **mask):
    e = h.shape[-1]
    qkv = h.astype(np.float64) @ qkv_w + (qkv_b if qkv_b is not None else 0)
    q, k, v = qkv[..., :e], qkv[..., e:2 * e], qkv[..., 2 * e:]
    if cos is not None:
        q, k = R.rope(q, cos, sin, head_dim=e // heads), R.rope(k, cos, sin, head_dim=e // heads)
    a = R.attention(q, k, v, heads, **mask)
    return a @ out_w + (out_b if out_b is not None else 0)


MASKS = ("none", "causal", "sliding_window", "custom", "bias")


def mask_input(kind, b, heads, s):
    if kind == "custom":
        m = rng.integers(0, 2, size=(b, 1, s, s)).astype(bool)
        m[..., 0] = True
        return m
    if kind == "bias":
        return rnd(heads, s, s, lo=-2, hi=2)
    return None


def attention_block_cases():
    b, s, e, heads = 2, 5, 8, 2
    h, qkv_w, out_w = rnd(b, s, e), rnd(e, 3 * e, lo=-0.5, hi=0.5), rnd(e, e, lo=-0.5, hi=0.5)
    qkv_b, out_b = rnd(3 * e), rnd(e)
    cos, sin = (t.astype(np.float32) for t in R.rope_tables(7, e // heads))
    for kind in MASKS:
        m = mask_input(kind, b, heads, s)
        mk = {"mask": kind, "window": 2 if kind == "sliding_window" else 0, "m": m}
        for hb in (0, 1):
            for hr in (0, 1):
                ins = {"h": h, "qkv_w": qkv_w, "out_w": out_w, **({"m": m} if m is not None else {}),
                       **({"qkv_b": qkv_b, "out_b": out_b} if hb else {}), **({"cos": cos, "sin": sin} if hr else {})}
                want = attn_block_ref(h, qkv_w, out_w, heads, qkv_b if hb else None, out_b if hb else None,
                                      cos if hr else None, sin if hr else None, **mk)
                attrs = {"num_heads": I(heads), "has_bias": I(hb), "has_rope": I(hr), "mask": S(kind)}
                if kind == "sliding_window":
                    attrs["window"] = I(2)
                yield Case(f"attnblock_{kind}_bias{hb}_rope{hr}", [node("FusedAttentionBlock", list(ins), ["y"], **attrs)],
                           ins, {"y": want.astype(np.float32)}, atol=2e-5, rtol=1e-4)
    # a 0/1 float custom mask means "may attend" (not an additive bias)
    m = np.ones((s, s), np.float32)
    m[:, 3:] = 0
    ins = {"h": h, "qkv_w": qkv_w, "out_w": out_w, "m": m}
    yield Case("attnblock_custom_float", [node("FusedAttentionBlock", list(ins), ["y"], num_heads=I(heads), mask=S("custom"))],
               ins, {"y": attn_block_ref(h, qkv_w, out_w, heads, mask="custom", m=m).astype(np.float32)}, atol=2e-5,
               rtol=1e-4)
    for nm, ins, attrs in (
            ("count", {"h": h, "qkv_w": qkv_w, "out_w": out_w}, {"mask": S("bias")}),
            ("heads", {"h": h, "qkv_w": qkv_w, "out_w": out_w}, {"num_heads": I(3)}),
            ("qkv_w", {"h": h, "qkv_w": qkv_w[:, :16], "out_w": out_w}, {}),
            ("rope", {"h": h, "qkv_w": qkv_w, "out_w": out_w, "c": cos[:3], "s": sin[:3]}, {"has_rope": I(1)}),
            ("mask_kind", {"h": h, "qkv_w": qkv_w, "out_w": out_w}, {"mask": S("alibi")})):
        a = {"num_heads": I(heads), **attrs}
        yield Case(f"attnblock_err_{nm}", [node("FusedAttentionBlock", list(ins), ["y"], **a)], ins, {},
                   expect_error="INVALID_ARGUMENT", modes=["lazy"])


def transformer_cases():
    b, s, e, f, heads = 2, 4, 8, 12, 2
    p = {"h": rnd(b, s, e), "qkv_w": rnd(e, 3 * e, lo=-0.5, hi=0.5), "qkv_b": rnd(3 * e),
         "out_w": rnd(e, e, lo=-0.5, hi=0.5), "out_b": rnd(e), "ln1_g": rnd(e, lo=0.5, hi=1.5), "ln1_b": rnd(e),
         "ff1_w": rnd(e, f, lo=-0.5, hi=0.5), "ff1_b": rnd(f), "ff2_w": rnd(f, e, lo=-0.5, hi=0.5), "ff2_b": rnd(e),
         "ln2_g": rnd(e, lo=0.5, hi=1.5), "ln2_b": rnd(e)}
    order = ["h", "qkv_w", "qkv_b", "out_w", "out_b", "ln1_g", "ln1_b", "ff1_w", "ff1_b", "ff2_w", "ff2_b", "ln2_g", "ln2_b"]
    for kind, act, hb in (("none", "Gelu", 1), ("custom", "Relu", 1), ("bias", "GeluApprox", 0), ("causal", "Gelu", 0),
                          ("sliding_window", "none", 1)):
        m = mask_input(kind, b, heads, s)
        names = [k for k in order if hb or not k.endswith("_b") or k.startswith("ln")]
        ins = {k: p[k] for k in names}
        if m is not None:
            ins["m"] = m
        get = (lambda k: p[k] if hb else None)
        a = attn_block_ref(p["h"], p["qkv_w"], p["out_w"], heads, get("qkv_b"), get("out_b"), mask=kind,
                           window=1 if kind == "sliding_window" else 0, m=m)
        y1 = R.layer_norm(p["h"] + a, p["ln1_g"], p["ln1_b"], eps=1e-5)
        ff = R.ACTIVATIONS[act](y1 @ p["ff1_w"] + (p["ff1_b"] if hb else 0)) @ p["ff2_w"] + (p["ff2_b"] if hb else 0)
        want = R.layer_norm(y1 + ff, p["ln2_g"], p["ln2_b"], eps=1e-6)
        attrs = {"num_heads": I(heads), "has_bias": I(hb), "activation": S(act), "mask": S(kind), "epsilon1": F(1e-5),
                 "epsilon2": F(1e-6)}
        if kind == "sliding_window":
            attrs["window"] = I(1)
        yield Case(f"layer_{kind}_{act}_bias{hb}", [node("FusedTransformerLayer", list(ins), ["y"], **attrs)], ins,
                   {"y": want.astype(np.float32)}, atol=5e-5, rtol=1e-4)
    ins = {k: p[k] for k in order}
    for nm, attrs in (("act", {"activation": S("Softmax")}), ("count", {"has_bias": I(0)}),
                      ("mask", {"mask": S("custom")})):
        yield Case(f"layer_err_{nm}", [node("FusedTransformerLayer", list(ins), ["y"], num_heads=I(heads), **attrs)], ins,
                   {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def cases():
    yield from residual_cases()
    yield from swiglu_cases()
    yield from attention_block_cases()
    yield from transformer_cases()
