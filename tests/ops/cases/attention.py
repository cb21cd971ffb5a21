"""Attention and Rope against numpy float64 references (tests/ops/nn_ref.py): rank-4 [B,H,S,D] and
packed rank-3 [B,S,H*D] layouts, grouped-query heads, score_scale, soft-capping, the five mask kinds
(causal and sliding-window bottom-right aligned when Sq != Sk, rows with no visible key give 0),
masks of rank 2..4 broadcasting to [B,H,Sq,Sk], distinct value head dims, float16, operands made
non-contiguous by a Transpose; Rope full/partial/packed/interleaved with per-batch tables; and
error cases."""
import numpy as np

import nn_ref as R
from opcase import IS, Case, F, I, S, node, sym

rng = np.random.default_rng(7)


def rnd(*shape, dtype=np.float32, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def att_attrs(num_heads, num_kv_heads=0, mask="none", window=0, scale=0.0, softcap=0.0):
    a = {"num_heads": I(num_heads), "mask": S(mask)}
    if num_kv_heads:
        a["num_kv_heads"] = I(num_kv_heads)
    if window:
        a["window"] = I(window)
    if scale:
        a["score_scale"] = F(scale)
    if softcap:
        a["softcap"] = F(softcap)
    return a


def qkv(layout, b, hq, hkv, sq, sk, d, dv=None, dtype=np.float32):
    dv = dv or d
    if layout == 4:
        return rnd(b, hq, sq, d, dtype=dtype), rnd(b, hkv, sk, d, dtype=dtype), rnd(b, hkv, sk, dv, dtype=dtype)
    return rnd(b, sq, hq * d, dtype=dtype), rnd(b, sk, hkv * d, dtype=dtype), rnd(b, sk, hkv * dv, dtype=dtype)


def att_case(name, q, k, v, num_heads, m=None, atol=2e-6, rtol=2e-5, **kw):
    inputs = {"q": q, "k": k, "v": v}
    if m is not None:
        inputs["m"] = m
    want = R.attention(q, k, v, num_heads, m=m, **kw).astype(q.dtype)
    return Case(name, [node("Attention", list(inputs), ["y"], **att_attrs(num_heads, **kw))], inputs, {"y": want},
                atol=atol, rtol=rtol)


def attention_cases():
    # every mask kind x layout x (MHA, GQA); Sq < Sk so causal alignment matters
    b, sq, sk, d = 2, 3, 5, 4
    for layout in (4, 3):
        for hq, hkv in ((2, 2), (6, 2), (4, 1)):
            q, k, v = qkv(layout, b, hq, hkv, sq, sk, d)
            tag = f"r{layout}_h{hq}kv{hkv}"
            yield att_case(f"att_none_{tag}", q, k, v, hq, num_kv_heads=hkv)
            yield att_case(f"att_causal_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="causal")
            yield att_case(f"att_sliding_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="sliding_window", window=1)
            cm = rng.integers(0, 2, size=(b, hq, sq, sk)).astype(bool)
            cm[..., 0] = True
            yield att_case(f"att_custom_{tag}", q, k, v, hq, m=cm, num_kv_heads=hkv, mask="custom")
            yield att_case(f"att_bias_{tag}", q, k, v, hq, m=rnd(b, hq, sq, sk, lo=-2, hi=2), num_kv_heads=hkv,
                           mask="bias")
            yield att_case(f"att_softcap_causal_{tag}", q, k, v, hq, num_kv_heads=hkv, mask="causal", softcap=0.7,
                           scale=1.3)
    # causal / sliding with Sq == Sk, Sq > Sk (rows before the diagonal see nothing: zeros), decode (Sq = 1)
    for sq, sk in ((4, 4), (5, 3), (1, 6)):
        q, k, v = qkv(4, 1, 2, 2, sq, sk, 8)
        yield att_case(f"att_causal_sq{sq}_sk{sk}", q, k, v, 2, mask="causal")
        yield att_case(f"att_causal_softcap_sq{sq}_sk{sk}", q, k, v, 2, mask="causal", softcap=2.0)
        for w in (1, 2, 7):
            yield att_case(f"att_sliding{w}_sq{sq}_sk{sk}", q, k, v, 2, mask="sliding_window", window=w)
    # a decode step over a KV cache (Sq <= 4: the CPU kernel's products without BLAS; 5: with it),
    # GQA, head dims not a multiple of 8, an additive mask hiding the unfilled positions; rank 4 and
    # packed (on the CPU the kernel reads packed operands as they are)
    for layout in (4, 3):
        for sq in (1, 3, 4, 5):
            q, k, v = qkv(layout, 1, 8, 2, sq, 40, 67)
            bm = np.where(np.arange(40)[None, :] <= 30 + np.arange(sq)[:, None], 0, -1e9).astype(np.float32)
            tag = f"sq{sq}" if layout == 4 else f"sq{sq}_r3"
            yield att_case(f"att_decode_{tag}", q, k, v, 8, m=bm, num_kv_heads=2, mask="bias")
            yield att_case(f"att_decode_causal_{tag}", q, k, v, 8, num_kv_heads=2, mask="causal")
    # an LLM's decode step: head dim 64, a cache of 300 positions of which 137 (+ row) are filled,
    # the rest hidden by -inf (on a GPU rlx's CUDA kernel, which skips hidden keys' rows)
    for sq in (1, 2):
        q, k, v = qkv(4, 1, 8, 2, sq, 300, 64)
        bm = np.where(np.arange(300)[None, :] <= 136 + np.arange(sq)[:, None], 0, -np.inf).astype(np.float32)
        yield att_case(f"att_decode_d64_sq{sq}", q, k, v, 8, m=bm, num_kv_heads=2, mask="bias", atol=1e-5, rtol=1e-4)
    # a cache's unfilled tail masked with -inf (the CPU kernel skips the keys no row can see) and
    # holding non-finite garbage, which must not leak into the result; decode (Sq 1, 3) and a
    # prefill of two 32-row blocks whose rows see different prefixes, rank 4 and packed
    for layout in (4, 3):
        for sq in (1, 3, 40):
            sk = 80
            q, k, v = qkv(layout, 1, 4, 2, sq, sk, 16)
            end = 20 + sq  # row r sees keys 0 .. 19 + r; keys end.. are seen by no row
            bm = np.where(np.arange(sk)[None, :] <= 19 + np.arange(sq)[:, None], 0, -np.inf).astype(np.float32)
            kg, vg = k.copy(), v.copy()
            seq = 2 if layout == 4 else 1
            for a in (kg, vg):
                idx = [slice(None)] * a.ndim
                idx[seq] = slice(end, None)
                a[tuple(idx)] = np.where(np.arange(a[tuple(idx)].size).reshape(a[tuple(idx)].shape) % 2, np.inf, np.nan)
            want = R.attention(q, k, v, 4, m=bm, num_kv_heads=2, mask="bias").astype(np.float32)
            yield Case(f"att_inf_tail_sq{sq}_r{layout}", [node("Attention", ["q", "k", "v", "m"], ["y"],
                                                              **att_attrs(4, num_kv_heads=2, mask="bias"))],
                       {"q": q, "k": kg, "v": vg, "m": bm}, {"y": want}, atol=1e-5, rtol=1e-4, cpu_only="the CPU kernel "
                       "skips the masked tail; MLX multiplies its NaN garbage by probability 0")
    # packed operands that are views: q and k narrowed from one [B,S,(Hq+Hkv)*D] tensor (an LLM's
    # stacked projection), v a strided slice of a cache
    qk, vc = rnd(2, 3, (4 + 2) * 5), rnd(2, 9, 2 * 6)
    q3, k3, v3 = qk[..., :20], qk[..., 20:], vc[:, 1:7:2]
    bm = rnd(3, 3, lo=-2, hi=2)
    want = R.attention(q3, k3, v3, 4, m=bm, num_kv_heads=2, mask="bias").astype(np.float32)
    yield Case("att_packed_views",
               [node("Slice", ["qk"], ["q"], starts=IS([0]), ends=IS([20]), axes=IS([2])),
                node("Slice", ["qk"], ["k"], starts=IS([20]), ends=IS([30]), axes=IS([2])),
                node("Slice", ["vc"], ["v"], starts=IS([1]), ends=IS([7]), axes=IS([1]), steps=IS([2])),
                node("Attention", ["q", "k", "v", "m"], ["y"], **att_attrs(4, num_kv_heads=2, mask="bias"))],
               {"qk": qk, "vc": vc, "m": bm}, {"y": want}, atol=2e-6, rtol=2e-5)
    # masks of rank 2, 3, 4 with size-1 (broadcast) dims; bool and 0/1 float custom masks
    q, k, v = qkv(4, 2, 3, 3, 4, 5, 4)
    for shape in ((4, 5), (1, 5), (3, 4, 5), (1, 4, 1), (2, 1, 4, 5), (2, 3, 1, 5), (1, 1, 1, 1)):
        cm = rng.integers(0, 3, size=shape) != 0
        tag = "x".join(map(str, shape))
        yield att_case(f"att_custom_bool_{tag}", q, k, v, 3, m=cm, mask="custom")
        yield att_case(f"att_custom_f32_{tag}", q, k, v, 3, m=cm.astype(np.float32), mask="custom")
        yield att_case(f"att_bias_{tag}", q, k, v, 3, m=rnd(*shape, lo=-3, hi=3), mask="bias")
    # a custom mask hiding every key of some rows: those rows are 0 (with and without softcap)
    cm = np.ones((4, 5), bool)
    cm[1] = False
    cm[3, 1:] = False
    yield att_case("att_custom_empty_rows", q, k, v, 3, m=cm, mask="custom")
    yield att_case("att_custom_empty_rows_softcap", q, k, v, 3, m=cm, mask="custom", softcap=1.5)
    # bias with -inf entries (additive, as ONNX float masks)
    bm = np.zeros((4, 5), np.float32)
    bm[:, 3:] = -np.inf
    yield att_case("att_bias_neg_inf", q, k, v, 3, m=bm, mask="bias")
    yield att_case("att_bias_neg_inf_softcap", q, k, v, 3, m=bm, mask="bias", softcap=0.5)
    # score_scale honoured; value head dim different from the query head dim
    yield att_case("att_scale", q, k, v, 3, scale=0.05)
    for layout in (4, 3):
        q2, k2, v2 = qkv(layout, 2, 4, 2, 3, 6, 4, dv=6)
        yield att_case(f"att_dv_r{layout}", q2, k2, v2, 4, num_kv_heads=2)
        yield att_case(f"att_dv_causal_r{layout}", q2, k2, v2, 4, num_kv_heads=2, mask="causal")
        yield att_case(f"att_dv_softcap_r{layout}", q2, k2, v2, 4, num_kv_heads=2, softcap=1.0)
    # the scores as a second output, at each stage (packed and rank 4, GQA, softcap, custom / bias masks)
    for layout, mask in ((4, "custom"), (3, "bias")):
        q, k, v = qkv(layout, 2, 4, 2, 3, 5, 4)
        m = rng.integers(0, 2, size=(3, 5)) != 0 if mask == "custom" else rnd(1, 3, 5, lo=-2, hi=2)
        kw = dict(num_kv_heads=2, mask=mask, softcap=1.5, m=m)
        f = R.attention_parts(q, k, v, 4, **kw)
        for stage, key in (("raw", "s"), ("capped", "t"), ("masked", "u"), ("probs", "p")):
            attrs = att_attrs(4, num_kv_heads=2, mask=mask, softcap=1.5)
            attrs["scores_output"] = S(stage)
            y = R.merge_heads(f["y"]) if layout == 3 else f["y"]
            yield Case(f"att_scores_{stage}_r{layout}", [node("Attention", ["q", "k", "v", "m"], ["y", "s"], **attrs)],
                       {"q": q, "k": k, "v": v, "m": m}, {"y": y.astype(np.float32), "s": f[key].astype(np.float32)},
                       atol=2e-6, rtol=2e-5)
    # symbolic sequence lengths (bound at run time), packed and rank 4
    for layout in (4, 3):
        q, k, v = qkv(layout, 2, 2, 2, 3, 5, 4)
        c = att_case(f"att_symbolic_r{layout}", q, k, v, 2, mask="sliding_window", window=2)
        seq = 2 if layout == 4 else 1
        c.dims = {nm: [sym(0 if nm == "q" else 1) if i == seq else d for i, d in enumerate(a.shape)]
                  for nm, a in (("q", q), ("k", k), ("v", v))}
        yield c
    # several 32-row query blocks per head (rlx's CPU kernel splits them over threads), a ragged
    # last one; packed (the heads are transposed views) and rank 4
    for layout in (3, 4):
        q, k, v = qkv(layout, 1, 4, 2, 70, 90, 16)
        yield att_case(f"att_blocks_causal_r{layout}", q, k, v, 4, num_kv_heads=2, mask="causal", atol=1e-5, rtol=1e-4)
        yield att_case(f"att_blocks_bias_r{layout}", q, k, v, 4, m=rnd(70, 90, lo=-2, hi=2), num_kv_heads=2,
                       mask="bias", atol=1e-5, rtol=1e-4)
    # size-1 dims everywhere: B = H = Sq = Sk = D = 1
    q1, k1, v1 = qkv(4, 1, 1, 1, 1, 1, 1)
    yield att_case("att_all_ones", q1, k1, v1, 1, mask="causal")
    # float16 (MLX computes in the input dtype; float16 tolerance)
    q, k, v = qkv(4, 2, 4, 2, 5, 5, 8, dtype=np.float16)
    yield att_case("att_f16", q, k, v, 4, num_kv_heads=2, mask="causal", atol=3e-3, rtol=3e-3)
    yield att_case("att_f16_softcap", q, k, v, 4, num_kv_heads=2, softcap=1.0, atol=3e-3, rtol=3e-3)
    # non-contiguous operands: q given as [B,S,H,D] and transposed to [B,H,S,D]; k sliced
    qt, kk, v = rnd(2, 3, 2, 4), rnd(2, 2, 7, 4), rnd(2, 2, 5, 4)
    q4, k4 = qt.transpose(0, 2, 1, 3), kk[:, :, 1:6]
    want = R.attention(q4, k4, v, 2, mask="causal").astype(np.float32)
    yield Case("att_noncontiguous",
               [node("Transpose", ["qt"], ["q"], perm=IS([0, 2, 1, 3])),
                node("Slice", ["kk"], ["k"], starts=IS([1]), ends=IS([6]), axes=IS([2])),
                node("Attention", ["q", "k", "v"], ["y"], **att_attrs(2, mask="causal"))],
               {"qt": qt, "kk": kk, "v": v}, {"y": want}, atol=2e-6, rtol=2e-5)


def bad(name, inputs, attrs, code="INVALID_ARGUMENT"):
    return Case(name, [node("Attention", list(inputs), ["y"], **attrs)], inputs, {}, expect_error=code, modes=["lazy"])


def attention_errors():
    q, k, v = qkv(4, 1, 2, 2, 3, 3, 4)
    m = np.ones((3, 3), bool)
    yield bad("att_err_mask_kind", {"q": q, "k": k, "v": v}, att_attrs(2, mask="alibi"))
    yield bad("att_err_mask_missing", {"q": q, "k": k, "v": v}, att_attrs(2, mask="custom"))
    yield bad("att_err_mask_extra", {"q": q, "k": k, "v": v, "m": m}, att_attrs(2, mask="causal"))
    yield bad("att_err_window", {"q": q, "k": k, "v": v}, att_attrs(2, mask="sliding_window"))
    yield bad("att_err_heads", {"q": q, "k": k, "v": v}, att_attrs(3))
    yield bad("att_err_gqa", {"q": q, "k": k, "v": v}, att_attrs(2, num_kv_heads=3))
    yield bad("att_err_softcap", {"q": q, "k": k, "v": v}, att_attrs(2, softcap=-1.0))
    yield bad("att_err_scores", {"q": q, "k": k, "v": v}, {**att_attrs(2), "scores_output": S("logits")})
    yield bad("att_err_dtype", {"q": q, "k": k.astype(np.float16), "v": v}, att_attrs(2))
    yield bad("att_err_rank", {"q": q[0, 0], "k": k[0, 0], "v": v[0, 0]}, att_attrs(2))
    yield bad("att_err_mask_shape", {"q": q, "k": k, "v": v, "m": np.ones((3, 4), bool)}, att_attrs(2, mask="custom"))
    yield bad("att_err_mask_rank", {"q": q, "k": k, "v": v, "m": np.ones((3,), bool)}, att_attrs(2, mask="bias"))
    yield bad("att_err_bias_dtype", {"q": q, "k": k, "v": v, "m": np.ones((3, 3), np.int32)}, att_attrs(2, mask="bias"))
    yield bad("att_err_head_dim", {"q": q, "k": k[..., :3], "v": v}, att_attrs(2))
    q3, k3, v3 = qkv(3, 1, 2, 2, 3, 3, 4)
    yield bad("att_err_packed", {"q": q3[..., :7], "k": k3, "v": v3}, att_attrs(2))


# ---- Rope ----

def rope_case(name, x, cos, sin, atol=2e-6, rtol=2e-5, **kw):
    want = R.rope(x, cos, sin, **kw).astype(x.dtype)
    attrs = {k: I(int(v)) for k, v in kw.items()}
    return Case(name, [node("Rope", ["x", "cos", "sin"], ["y"], **attrs)], {"x": x, "cos": cos, "sin": sin},
                {"y": want}, atol=atol, rtol=rtol)


def tables(n, r, dtype=np.float32):
    c, s = R.rope_tables(n, r)
    return c.astype(dtype), s.astype(dtype)


def rope_cases():
    for inter in (0, 1):
        t = f"_il{inter}"
        x = rnd(2, 3, 5, 8)
        yield rope_case("rope_full" + t, x, *tables(5, 8), interleaved=inter)
        yield rope_case("rope_partial" + t, x, *tables(5, 4), n_rot=4, interleaved=inter)
        yield rope_case("rope_long_tables" + t, x, *tables(9, 8), interleaved=inter)
        xp = rnd(2, 5, 3 * 8)  # packed [B,S,H*D]
        yield rope_case("rope_packed" + t, xp, *tables(5, 8), head_dim=8, interleaved=inter)
        yield rope_case("rope_packed_partial" + t, xp, *tables(6, 6), head_dim=8, n_rot=6, interleaved=inter)
        yield rope_case("rope_rank2" + t, rnd(4, 6), *tables(4, 6), interleaved=inter)
        # per-batch tables [B,S,R/2] (positions differ per sequence), and [1,S,R/2]
        c3, s3 = (np.stack([a[[0, 2, 4, 1, 3]], a[[4, 3, 2, 1, 0]]]).astype(np.float32) for a in R.rope_tables(5, 8))
        yield rope_case("rope_batch_tables" + t, x, c3, s3, interleaved=inter)
        yield rope_case("rope_batch_tables_packed" + t, xp, c3, s3, head_dim=8, interleaved=inter)
        yield rope_case("rope_batch1_tables" + t, x, c3[:1], s3[:1], interleaved=inter)
        yield rope_case("rope_f16" + t, x.astype(np.float16), *tables(5, 8, np.float16), interleaved=inter,
                        atol=2e-3, rtol=2e-3)
    # non-contiguous x: [B,S,H,D] transposed to [B,H,S,D]
    xt = rnd(2, 5, 3, 8)
    c, s = tables(5, 8)
    want = R.rope(xt.transpose(0, 2, 1, 3), c, s).astype(np.float32)
    xs = rnd(2, 3, 5, 8)
    c, s = tables(6, 8)
    yield Case("rope_symbolic_seq", [node("Rope", ["x", "c", "s"], ["y"])], {"x": xs, "c": c, "s": s},
               {"y": R.rope(xs, c, s).astype(np.float32)}, atol=2e-6, rtol=2e-5, dims={"x": [2, 3, sym(0), 8]})
    c, s = tables(5, 8)
    yield Case("rope_noncontiguous", [node("Transpose", ["xt"], ["x"], perm=IS([0, 2, 1, 3])),
                                      node("Rope", ["x", "c", "s"], ["y"])],
               {"xt": xt, "c": c, "s": s}, {"y": want}, atol=2e-6, rtol=2e-5)
    # errors: odd / too large n_rot, head_dim not dividing, short tables, wrong table rank, dtype
    x = rnd(1, 2, 4, 8)
    c, s = tables(4, 8)

    def rbad(name, xx, cc, ss, **attrs):
        return Case(name, [node("Rope", ["x", "c", "s"], ["y"], **{k: I(v) for k, v in attrs.items()})],
                    {"x": xx, "c": cc, "s": ss}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])

    yield rbad("rope_err_odd_rot", x, c, s, n_rot=3)
    yield rbad("rope_err_big_rot", x, c, s, n_rot=10)
    yield rbad("rope_err_head_dim", x, c, s, head_dim=3)
    yield rbad("rope_err_short_seq", x, c[:3], s[:3])
    yield rbad("rope_err_short_rot", x, c[:, :3], s[:, :3])
    yield rbad("rope_err_table_rank", x, c[None, None], s[None, None])
    yield rbad("rope_err_table_batch", x, np.stack([c, c, c]), np.stack([s, s, s]))
    yield rbad("rope_err_dtype", x, c.astype(np.float16), s)
    yield rbad("rope_err_interleaved", x, c, s, interleaved=2)
    # packed heads at rank 8: viewed as [..,S,H,D] of rank 9, over the IR's rank limit (fuzz_graph)
    x8 = rnd(1, 1, 1, 1, 1, 1, 4, 8)
    yield Case("rope_err_packed_rank8", [node("Rope", ["x", "c", "s"], ["y"], head_dim=I(4))], {"x": x8, "c": c, "s": s}, {},
               expect_error="UNIMPLEMENTED", modes=["lazy"])


def cases():
    yield from attention_cases()
    yield from attention_errors()
    yield from rope_cases()
