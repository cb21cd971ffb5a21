"""numpy float64 references (independent of rlx) for the activations, attention, rotary,
normalization and fused ops, and the central finite-difference helpers for checking the backward
ops."""
import math

import numpy as np

# ---- activations (float64; formulas as in rlx/op_table.h) ----

erf = np.vectorize(math.erf, otypes=[np.float64])


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def gelu(x):
    """Exact GELU, x/2 (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016)."""
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def gelu_tanh(x):
    """The tanh approximation of GELU."""
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# the activation attribute of the fused ops: "none" or a float unary op
ACTIVATIONS = {"none": lambda x: x, "Relu": lambda x: np.maximum(x, 0), "Gelu": gelu, "GeluApprox": gelu_tanh, "Silu": silu,
               "Sigmoid": sigmoid, "Tanh": np.tanh, "Exp": np.exp}



def softmax(s, axis=-1):
    """softmax along axis; a row that is -inf everywhere gives zeros (rlx's empty-row rule)."""
    m = np.max(s, axis=axis, keepdims=True)
    empty = np.isneginf(m)
    e = np.exp(s - np.where(empty, 0, m))
    tot = np.sum(e, axis=axis, keepdims=True)
    return np.where(empty, 0, e / np.where(empty, 1, tot))


def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


# ---- attention ----

def split_heads(x, h):
    """[B,S,H*D] -> [B,H,S,D]"""
    b, s, hd = x.shape
    return x.reshape(b, s, h, hd // h).transpose(0, 2, 1, 3)


def merge_heads(x):
    """[B,H,S,D] -> [B,S,H*D]"""
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def causal_valid(sq, sk, window=0):
    """bool [Sq,Sk]: key j visible to query i, bottom-right aligned (j <= i + Sk - Sq), and within
    `window` keys before the diagonal when window > 0."""
    i = np.arange(sq)[:, None] + (sk - sq)
    j = np.arange(sk)[None, :]
    ok = j <= i
    if window > 0:
        ok &= j >= i - window
    return ok


def attention_parts(q, k, v, num_heads, num_kv_heads=0, mask="none", window=0, scale=0.0, softcap=0.0, m=None):
    """Forward pieces in float64 on [B,H,S,D] operands (kv heads repeated): q, k, v, s (scaled
    scores), t (soft-capped), u (masked: -inf where hidden), valid (bool or None), p
    (probabilities), y."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    hkv = num_kv_heads or num_heads
    if q.ndim == 3:
        q, k, v = split_heads(q, num_heads), split_heads(k, hkv), split_heads(v, hkv)
    rep = num_heads // hkv
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)  # query head h uses kv head h // rep
    sc = scale if scale else 1 / np.sqrt(q.shape[-1])
    s = sc * q @ np.swapaxes(k, -1, -2)
    t = softcap * np.tanh(s / softcap) if softcap > 0 else s
    valid, bias = None, None
    full = s.shape
    if mask in ("causal", "sliding_window"):
        valid = np.broadcast_to(causal_valid(s.shape[-2], s.shape[-1], window if mask == "sliding_window" else 0), full)
    elif mask == "custom":
        valid = np.broadcast_to(np.asarray(m) != 0, full)
    elif mask == "bias":
        bias = np.broadcast_to(np.asarray(m, np.float64), full)
    u = t + bias if bias is not None else t
    if valid is not None:
        u = np.where(valid, u, -np.inf)
    p = softmax(u)
    return dict(q=q, k=k, v=v, s=s, t=t, u=u, sc=sc, valid=valid, p=p, y=p @ v, rep=rep)


def attention(q, k, v, num_heads, **kw):
    """Attention in q's layout (float64)."""
    y = attention_parts(q, k, v, num_heads, **kw)["y"]
    return merge_heads(y) if np.ndim(q) == 3 else y


def attention_grads(q, k, v, dy, num_heads, num_kv_heads=0, softcap=0.0, **kw):
    """Closed-form gradients (dq, dk, dv) of Attention in the inputs' layouts (float64)."""
    f = attention_parts(q, k, v, num_heads, num_kv_heads=num_kv_heads, softcap=softcap, **kw)
    hkv = num_kv_heads or num_heads
    dy = np.asarray(dy, np.float64)
    if dy.ndim == 3:
        dy = split_heads(dy, num_heads)
    p = f["p"]
    dv = np.swapaxes(p, -1, -2) @ dy
    dp = dy @ np.swapaxes(f["v"], -1, -2)
    du = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
    ds = du * (1 - np.tanh(f["s"] / softcap) ** 2) if softcap > 0 else du
    dq = f["sc"] * ds @ f["k"]
    dk = f["sc"] * np.swapaxes(ds, -1, -2) @ f["q"]

    def fold(g):  # sum the repeated kv heads back into their group
        b, h, s, d = g.shape
        return g.reshape(b, hkv, h // hkv, s, d).sum(axis=2)

    dk, dv = fold(dk), fold(dv)
    if np.ndim(q) == 3:
        dq, dk, dv = merge_heads(dq), merge_heads(dk), merge_heads(dv)
    return dq, dk, dv


# ---- rotary embedding ----

def rope(x, cos, sin, head_dim=0, n_rot=0, interleaved=False, inverse=False):
    """Rotary embedding (float64). x [..,S,D] or packed [..,S,H*D] (head_dim D); cos/sin [S',>=R/2]
    or [B|1,S',>=R/2] (per-batch tables)."""
    x = np.asarray(x, np.float64)
    last, s = x.shape[-1], x.shape[-2]
    d = head_dim or last
    r = n_rot or d
    packed = d != last
    xs = x.reshape(x.shape[:-1] + (last // d, d)) if packed else x
    c = np.asarray(cos, np.float64)[..., :s, : r // 2]
    sn = np.asarray(sin, np.float64)[..., :s, : r // 2] * (-1 if inverse else 1)
    if c.ndim == 3:  # [B,S,R/2] -> [B,1..,S,R/2]
        c = c.reshape((c.shape[0],) + (1,) * (x.ndim - 3) + c.shape[1:])
        sn = sn.reshape(c.shape)
    if packed:
        c, sn = c[..., None, :], sn[..., None, :]
    rot = xs[..., :r]
    x1, x2 = (rot[..., 0::2], rot[..., 1::2]) if interleaved else (rot[..., : r // 2], rot[..., r // 2:])
    y1, y2 = x1 * c - x2 * sn, x2 * c + x1 * sn
    yr = np.stack([y1, y2], axis=-1).reshape(rot.shape) if interleaved else np.concatenate([y1, y2], axis=-1)
    y = np.concatenate([yr, xs[..., r:]], axis=-1)
    return y.reshape(x.shape)


def rope_tables(n, r, base=10000.0):
    """cos/sin tables [n, r/2] for positions 0..n-1 (float64)."""
    inv = base ** (-np.arange(0, r // 2) * 2.0 / r)
    ang = np.arange(n)[:, None] * inv[None, :]
    return np.cos(ang), np.sin(ang)


# ---- normalization ----

def layer_norm(x, g, b=None, axis=-1, eps=1e-5):
    x = np.asarray(x, np.float64)
    axis = axis % x.ndim
    shp = [1] * x.ndim
    shp[axis] = -1
    mu = x.mean(axis=axis, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axis, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * np.reshape(g, shp)
    return y + np.reshape(b, shp) if b is not None else y


def rms_norm(x, g, b=None, axis=-1, eps=1e-6):
    x = np.asarray(x, np.float64)
    axis = axis % x.ndim
    shp = [1] * x.ndim
    shp[axis] = -1
    y = x / np.sqrt((x ** 2).mean(axis=axis, keepdims=True) + eps) * np.reshape(g, shp)
    return y + np.reshape(b, shp) if b is not None else y


def group_norm(x, g, b, groups, eps=1e-5):
    x = np.asarray(x, np.float64)
    n, c = x.shape[:2]
    xg = x.reshape(n, groups, -1)
    mu = xg.mean(axis=2, keepdims=True)
    var = ((xg - mu) ** 2).mean(axis=2, keepdims=True)
    y = ((xg - mu) / np.sqrt(var + eps)).reshape(x.shape)
    shp = (1, c) + (1,) * (x.ndim - 2)
    return y * np.reshape(g, shp) + np.reshape(b, shp)


# ---- finite differences ----

def fd_elementwise(f, x, h=1e-6):
    """f'(x) of an elementwise f by central differences."""
    return (f(x + h) - f(x - h)) / (2 * h)


def fd_grad(f, x, dy, eps=1e-6):
    """d/dx sum(f(x) * dy) by central differences in float64 (x is not modified)."""
    x = np.array(x, np.float64)
    dy = np.asarray(dy, np.float64)
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        hi = np.sum(f(x) * dy)
        flat[i] = old - eps
        lo = np.sum(f(x) * dy)
        flat[i] = old
        gf[i] = (hi - lo) / (2 * eps)
    return g


def check_close(name, a, b, atol=1e-6, rtol=1e-5):
    """Asserts two oracles agree (closed form vs finite differences) before a case is written."""
    if not np.allclose(a, b, atol=atol, rtol=rtol):
        raise AssertionError(f"{name}: closed form and finite differences disagree by {np.max(np.abs(a - b)):.3g}")
