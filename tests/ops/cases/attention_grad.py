"""AttentionBackward (wrt query, key, value) and RopeBackward against two oracles computed in numpy
float64: the closed-form gradients (nn_ref.attention_grads, the inverse rotation) and central finite
differences of the forward reference; the two are checked against each other before a case is
written. Every mask kind, grouped-query heads, soft-capping, score_scale, both layouts, value head
dims != query head dims, empty rows, interleaved / partial / packed rotary embeddings."""
import numpy as np

import nn_ref as R
from cases.attention import att_attrs, qkv, rnd, tables
from opcase import Case, I, S, node

rng = np.random.default_rng(11)
WRT = ("query", "key", "value")


def att_grad_cases(name, q, k, v, num_heads, m=None, atol=2e-5, rtol=1e-4, **kw):
    """One case per wrt: expected = closed form, checked against finite differences."""
    dy = rnd(*R.attention(q, k, v, num_heads, m=m, **kw).shape)
    closed = R.attention_grads(q, k, v, dy, num_heads, m=m, **kw)
    ops = [q, k, v]
    inputs = {"q": q, "k": k, "v": v, "dy": dy}
    if m is not None:
        inputs["m"] = m
    for i, wrt in enumerate(WRT):
        def f(x, i=i):
            args = list(ops)
            args[i] = x
            return R.attention(*args, num_heads, m=m, **kw)

        R.check_close(f"{name}_{wrt}", closed[i], R.fd_grad(f, ops[i], dy), atol=1e-6, rtol=1e-5)
        attrs = att_attrs(num_heads, **kw)
        attrs["wrt"] = S(wrt)
        yield Case(f"{name}_d{wrt[0]}", [node("AttentionBackward", list(inputs), ["g"], **attrs)], inputs,
                   {"g": closed[i].astype(q.dtype)}, atol=atol, rtol=rtol)


def attention_grad_cases():
    b, sq, sk, d = 2, 3, 4, 4
    for layout in (4, 3):
        for hq, hkv in ((2, 2), (4, 2)):
            q, k, v = qkv(layout, b, hq, hkv, sq, sk, d)
            tag = f"r{layout}_h{hq}kv{hkv}"
            yield from att_grad_cases(f"attb_none_{tag}", q, k, v, hq, num_kv_heads=hkv)
            yield from att_grad_cases(f"attb_causal_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="causal")
            yield from att_grad_cases(f"attb_sliding_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="sliding_window",
                                      window=1)
            cm = rng.integers(0, 2, size=(hq, sq, sk)).astype(bool)
            cm[..., 0] = True
            yield from att_grad_cases(f"attb_custom_{tag}", q, k, v, hq, m=cm, num_kv_heads=hkv, mask="custom")
            yield from att_grad_cases(f"attb_bias_{tag}", q, k, v, hq, m=rnd(b, 1, sq, sk, lo=-2, hi=2),
                                      num_kv_heads=hkv, mask="bias")
            yield from att_grad_cases(f"attb_softcap_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="causal",
                                      softcap=0.8, scale=0.9)
    # value head dim != query head dim, GQA, softcap; Sq > Sk causal (first rows see nothing: 0 gradient)
    q, k, v = qkv(4, 1, 4, 2, 3, 5, 4, dv=3)
    yield from att_grad_cases("attb_dv", q, k, v, 4, num_kv_heads=2, softcap=1.2)
    q, k, v = qkv(4, 1, 2, 2, 5, 3, 4)
    yield from att_grad_cases("attb_causal_sq_gt_sk", q, k, v, 2, mask="causal")
    cm = np.ones((5, 3), np.float32)
    cm[2] = 0
    yield from att_grad_cases("attb_custom_empty_row", q, k, v, 2, m=cm, mask="custom", softcap=2.0)
    # errors
    q, k, v = qkv(4, 1, 2, 2, 3, 3, 4)
    dy = rnd(1, 2, 3, 4)
    for nm, ins, attrs in (("attb_err_wrt", {"q": q, "k": k, "v": v, "dy": dy}, {"wrt": S("mask")}),
                           ("attb_err_dy_shape", {"q": q, "k": k, "v": v, "dy": dy[:, :, :2]}, {"wrt": S("query")}),
                           ("attb_err_mask_missing", {"q": q, "k": k, "v": v, "dy": dy},
                            {"wrt": S("key"), "mask": S("bias")})):
        a = att_attrs(2)
        a.update(attrs)
        yield Case(nm, [node("AttentionBackward", list(ins), ["g"], **a)], ins, {}, expect_error="INVALID_ARGUMENT",
                   modes=["lazy"])


def rope_grad_cases():
    for inter in (0, 1):
        for name, x, (c, s), kw in (("full", rnd(2, 3, 5, 8), tables(5, 8), {}),
                                    ("partial", rnd(2, 5, 8), tables(6, 4), {"n_rot": 4}),
                                    ("packed", rnd(2, 5, 3 * 6), tables(5, 6), {"head_dim": 6})):
            dy = rnd(*x.shape)
            closed = R.rope(dy, c, s, interleaved=inter, inverse=True, **kw)
            fd = R.fd_grad(lambda z: R.rope(z, c, s, interleaved=inter, **kw), x, dy)
            R.check_close(f"ropeb_{name}", closed, fd)
            attrs = {k: I(v) for k, v in kw.items()}
            attrs["interleaved"] = I(inter)
            yield Case(f"ropeb_{name}_il{inter}", [node("RopeBackward", ["dy", "c", "s"], ["dx"], **attrs)],
                       {"dy": dy, "c": c, "s": s}, {"dx": closed.astype(np.float32)}, atol=2e-6, rtol=2e-5)
    c, s = tables(4, 8)
    yield Case("ropeb_err_rot", [node("RopeBackward", ["dy", "c", "s"], ["dx"], n_rot=I(5))],
               {"dy": rnd(1, 4, 8), "c": c, "s": s}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def cases():
    yield from attention_grad_cases()
    yield from rope_grad_cases()
