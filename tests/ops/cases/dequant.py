"""DequantMatMul against independent oracles. GGUF block types: the weights are random GGUF blocks
(random bytes, with the float16/float32 block scales set to chosen values), dequantized by PyPI
gguf's numpy code (gguf.quants.dequantize, pinned in scripts/requirements.txt; Q8_K, which gguf-py
does not decode, from ggml-common.h's block_q8_K: d * qs), and y = x @ W^T in float64. Exactness of
the dequantization itself: x = the identity, so y = W^T bit for bit (up to fused multiply-adds),
including edge scales (zero, -0, the largest float16, float16 subnormals, large and small E8M0
exponents). The int8/int4 block schemes against a dequantize-then-matmul oracle for block sizes
32/64/128. MX (mxfp4, mxfp8), NVFP4 and FP8 (fp8_e4m3, fp8_e5m2): random codes and scales
decoded by ml_dtypes, every code once with edge scales (E8M0 NaN and 2^127, E4M3 NaN and
subnormals, float scales 0, inf, subnormal), float64 oracle. Errors: malformed packed data (a row
of the wrong byte count, K not a multiple of the block; the message names the param and the
expected size), dtypes, shapes, unknown schemes. DequantGroupedMatMul (mixture of experts): every
kind of scheme, through each lowering path (gather_qmm; the selected experts' weights when M <= E;
all experts when M > E), negative and out-of-range expert indices, against per-token numpy
products. Dequantize (GGUF rows decoded on their own): every GGUF scheme against gguf-py, exactly."""
import ml_dtypes
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize, quantize

from opcase import IS, Case, I, S, error_case as err, node, simple

rng = np.random.default_rng(23)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# scheme: (ggml type, block elements, block bytes, [(offset, kind) of the block scales])
GGUF = {
    "gguf_q4_0": (T.Q4_0, 32, 18, [(0, "f16")]),
    "gguf_q4_1": (T.Q4_1, 32, 20, [(0, "f16"), (2, "f16")]),
    "gguf_q5_0": (T.Q5_0, 32, 22, [(0, "f16")]),
    "gguf_q5_1": (T.Q5_1, 32, 24, [(0, "f16"), (2, "f16")]),
    "gguf_q8_0": (T.Q8_0, 32, 34, [(0, "f16")]),
    "gguf_q2k": (T.Q2_K, 256, 84, [(80, "f16"), (82, "f16")]),
    "gguf_q3k": (T.Q3_K, 256, 110, [(108, "f16")]),
    "gguf_q4k": (T.Q4_K, 256, 144, [(0, "f16"), (2, "f16")]),
    "gguf_q5k": (T.Q5_K, 256, 176, [(0, "f16"), (2, "f16")]),
    "gguf_q6k": (T.Q6_K, 256, 210, [(208, "f16")]),
    "gguf_q8k": (T.Q8_K, 256, 292, [(0, "f32")]),
    "gguf_mxfp4": (T.MXFP4, 32, 17, [(0, "e8m0")]),
    "gguf_nvfp4": (T.NVFP4, 64, 36, []),  # its UE4M3 scales: any byte is finite
}


def gguf_dequant(scheme, packed, k):
    """W[N,K] float32: gguf-py, or for Q8_K the block_q8_K definition (d float32, qs int8[256])."""
    qt, qk, bb, _ = GGUF[scheme]
    if qt == T.Q8_K:
        b = packed.reshape(-1, bb)
        d = b[:, :4].copy().view(np.float32)
        return (d * b[:, 4:260].copy().view(np.int8).astype(np.float32)).reshape(packed.shape[0], k)
    return dequantize(packed, qt).reshape(packed.shape[0], k)


def blocks(scheme, n, k, scales=None):
    """Random packed rows uint8[N, K/QK*B]; each block scale field gets a value drawn from
    `scales` (default: random magnitudes 2^-8..1 of either sign)."""
    _, qk, bb, fields = GGUF[scheme]
    b = rng.integers(0, 256, size=(n * (k // qk), bb), dtype=np.uint8)
    for off, kind in fields:
        cnt = b.shape[0]
        if kind == "e8m0":
            v = rng.integers(118, 131, size=cnt) if scales is None else rng.choice(scales, size=cnt)
            b[:, off] = np.asarray(v, np.uint8)
            continue
        dt = np.float16 if kind == "f16" else np.float32
        v = (rng.choice([-1.0, 1.0], cnt) * 2.0 ** rng.uniform(-8, 0, cnt)) if scales is None else rng.choice(scales, cnt)
        b[:, off:off + np.dtype(dt).itemsize] = np.asarray(v, dt).reshape(cnt, 1).view(np.uint8)
    return b.reshape(n, -1)


def gguf_case(name, scheme, n, k, xshape, xdtype=np.float32, rtol=1e-5, scales=None):
    packed = blocks(scheme, n, k, scales)
    w = gguf_dequant(scheme, packed, k).astype(np.float64)
    x = uni(xshape + (k,), dtype=xdtype)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = x64 @ w.T
    atol = rtol * max(float((np.abs(x64) @ np.where(np.isfinite(w), np.abs(w), 0).T).max()), 1e-30)
    return Case(name, [node("DequantMatMul", ["x", "w"], ["y"], scheme=S(scheme))], {"x": x}, {"y": want.astype(xdtype)},
                atol=atol, rtol=rtol, params={"w": packed})


def exact_case(name, scheme, n, k, scales=None):
    """x = I: y = W^T, the dequantized weights themselves."""
    packed = blocks(scheme, n, k, scales)
    w = gguf_dequant(scheme, packed, k)
    return Case(name, [node("DequantMatMul", ["x", "w"], ["y"], scheme=S(scheme))], {"x": np.eye(k, dtype=np.float32)},
                {"y": np.ascontiguousarray(w.T)}, atol=0, rtol=2e-7, params={"w": packed})


F16_EDGES = [0.0, -0.0, 65504.0, -65504.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -14 - 2.0 ** -24, 1.0, -0.5]


def gguf_cases():
    for scheme, (_, qk, _, fields) in GGUF.items():
        k = 2 * qk if qk == 256 else 4 * qk
        yield gguf_case(f"DequantMatMul_{scheme}", scheme, 5, k, (3,))
        yield exact_case(f"DequantMatMul_{scheme}_exact", scheme, 4, k)
        kinds = {kind for _, kind in fields}
        if "f16" in kinds:
            yield exact_case(f"DequantMatMul_{scheme}_edge_scales", scheme, 6, k, scales=F16_EDGES)
        if "f32" in kinds:
            yield exact_case(f"DequantMatMul_{scheme}_edge_scales", scheme, 6, k,
                             scales=[0.0, -0.0, 1e36, -1e-38, 1e-45, 1.0])
        if "e8m0" in kinds:  # 2^(e-127): subnormal (e 0, 1), small, one, large (6 * 2^123 is finite)
            yield exact_case(f"DequantMatMul_{scheme}_edge_scales", scheme, 6, k, scales=[0, 1, 2, 3, 127, 200, 250])
    # Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 and the K-quants but Q8_K past 4 rows of x: dequantized (GPU) or tiles of rlx's kernel (CPU)
    for scheme in ["gguf_q4_0", "gguf_q4_1", "gguf_q5_0", "gguf_q5_1", "gguf_q8_0", "gguf_q4k", "gguf_q6k", "gguf_q5k", "gguf_q3k", "gguf_q2k"]:
        yield gguf_case(f"DequantMatMul_{scheme}_prefill_rows", scheme, 6, 512, (2, 5))
    # the CPU kernel for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q6_K, Q5_K, Q3_K and Q2_K: 1..4 rows of x row by row, more through
    # tiles of 64 rows of W (N = 150: a partial one); infinite and NaN scales (weights formed as
    # gguf-py forms them: inf times codes of mixed signs gives NaN, not the inf of scale times sum)
    # among finite ones
    for scheme in ["gguf_q8_0", "gguf_q4_0", "gguf_q4_1", "gguf_q5_0", "gguf_q5_1", "gguf_q4k", "gguf_q6k", "gguf_q5k", "gguf_q3k", "gguf_q2k"]:
        for xs in [(1,), (2,), (3,), (4,), (9,), (2, 35)]:
            yield gguf_case(f"DequantMatMul_{scheme}_kernel_{'x'.join(map(str, xs))}", scheme, 150, 512, xs)
        for xs in [(1,), (4,)]:
            yield gguf_case(f"DequantMatMul_{scheme}_kernel_nonfinite_{xs[0]}", scheme, 40, 512, xs,
                            scales=[np.inf, -np.inf, np.nan] + [0.0, 1.0, -0.5, 0.25, 2.0 ** -20, 2.0 ** -24] * 5)
    # a non-contiguous x (a Transpose feeding the product; the kernel's task copies it)
    for rows in (2, 7):
        packed, xt = blocks("gguf_q4_1", 40, 128), uni((128, rows))
        w = gguf_dequant("gguf_q4_1", packed, 128).astype(np.float64)
        yield Case(f"DequantMatMul_gguf_q4_1_x_transposed_{rows}", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])),
                                                                    node("DequantMatMul", ["x", "w"], ["y"], scheme=S("gguf_q4_1"))],
                   {"xt": xt}, {"y": (xt.T.astype(np.float64) @ w.T).astype(np.float32)}, atol=1e-4, rtol=1e-5, params={"w": packed})
    yield gguf_case("DequantMatMul_gguf_q4k_rank1", "gguf_q4k", 7, 256, ())
    yield gguf_case("DequantMatMul_gguf_q6k_rank3", "gguf_q6k", 3, 512, (2, 3))
    yield gguf_case("DequantMatMul_gguf_q8_0_f16", "gguf_q8_0", 4, 64, (3,), xdtype=np.float16, rtol=5e-3)
    yield gguf_case("DequantMatMul_gguf_q4_0_many_rows", "gguf_q4_0", 64, 128, (2,), rtol=1e-5)
    yield gguf_case("DequantMatMul_gguf_q5k_f64", "gguf_q5k", 3, 256, (2,), xdtype=np.float64, rtol=1e-12)
    # float64 x takes MLX's decoders for the schemes rlx's CPU kernel and quantized_matmul serve
    # otherwise: the ones Dequantize runs on a GPU, checked here on the CPU too
    for scheme in ["gguf_q8_0", "gguf_q4_0", "gguf_q4_1", "gguf_q4k"]:
        qk = GGUF[scheme][1]
        yield gguf_case(f"DequantMatMul_{scheme}_f64", scheme, 5, 2 * qk if qk == 256 else 4 * qk, (6,), xdtype=np.float64,
                        rtol=1e-12)
    # malformed packed data
    x = uni((2, 64))
    yield Case("DequantMatMul_gguf_bytes", [node("DequantMatMul", ["x", "w"], ["y"], scheme=S("gguf_q4_0"))], {"x": x}, {},
               params={"w": np.zeros((3, 40), np.uint8)}, expect_error="INVALID_ARGUMENT", modes=["lazy"],
               expect_message="(param 'w') must hold 36 bytes per row (2 gguf_q4_0 blocks of 18 bytes for K = 64)")
    yield Case("DequantMatMul_gguf_k_not_block", [node("DequantMatMul", ["x", "w"], ["y"], scheme=S("gguf_q4k"))], {"x": x}, {},
               params={"w": np.zeros((3, 144), np.uint8)}, expect_error="INVALID_ARGUMENT", modes=["lazy"],
               expect_message="K = 64 (the last dim of x float32[2,64]) is not a multiple of the gguf_q4k block of 256")
    yield Case("DequantMatMul_gguf_dtype", [node("DequantMatMul", ["x", "w"], ["y"], scheme=S("gguf_q8_0"))], {"x": x}, {},
               params={"w": np.zeros((3, 68), np.int8)}, expect_error="INVALID_ARGUMENT", modes=["lazy"],
               expect_message="(param 'w') must be the packed gguf_q8_0 blocks as uint8[N, K/32*34]")
    yield err("DequantMatMul_gguf_inputs", "DequantMatMul", {"x": x, "w": np.zeros((3, 68), np.uint8), "s": np.ones((3, 2), np.float32)},
              scheme=S("gguf_q8_0"))
    yield err("DequantMatMul_gguf_rank", "DequantMatMul", {"x": x, "w": np.zeros((204,), np.uint8)}, scheme=S("gguf_q8_0"))
def q8_0_round(x):
    """x rounded to Q8_0 blocks along its last axis by gguf-py (quantize, then dequantize), in
    float32; blocks holding a non-finite value as they are (DequantMatMul's activations q8_0)."""
    b = x.astype(np.float32).reshape(-1, 32)
    fin = np.isfinite(b).all(axis=1)
    out = b.copy()
    if fin.any():
        out[fin] = dequantize(quantize(b[fin], T.Q8_0), T.Q8_0)
    return out.reshape(x.shape)


def q8_case(name, scheme, n, k, xshape, xdtype=np.float32, x=None, rtol=1e-5, scales=None, w_input=False):
    """DequantMatMul with activations q8_0: gguf-py's Q8_0 round trip of x, then x @ W^T in float64.
    W is a param (kept in rlx's rows8 form where the CPU has that kernel) or, with w_input, an
    input (read as GGUF rows at every run)."""
    packed = blocks(scheme, n, k, scales)
    w = gguf_dequant(scheme, packed, k).astype(np.float64)
    x = uni(xshape + (k,), dtype=xdtype) if x is None else x.astype(xdtype)
    xq = q8_0_round(x).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        want = xq @ w.T
        atol = rtol * max(float(np.nan_to_num(np.abs(xq) @ np.where(np.isfinite(w), np.abs(w), 0).T, posinf=0).max()), 1e-30)
    ins, params = ({"x": x, "w": packed}, {}) if w_input else ({"x": x}, {"w": packed})
    return Case(name, [node("DequantMatMul", ["x", "w"], ["y"], scheme=S(scheme), activations=S("q8_0"))], ins,
                {"y": want.astype(xdtype)}, atol=atol, rtol=rtol, params=params)


def q8_cases():
    # rlx's integer kernel (float32 x, 4 rows at a time); 150 rows of W: 18 blocks of 8 in the
    # rows8 form (where the CPU has its kernel), 6 GGUF rows past it. W as an input: GGUF rows for
    # 1..4 rows of x, the rounded x through dequantized tiles for more. Q5_0, Q5_1, Q2_K, Q3_K,
    # Q5_K, Q6_K: rows8 in integers, else the rounded x in float32.
    for scheme in ["gguf_q8_0", "gguf_q4_0", "gguf_q4_1", "gguf_q5_0", "gguf_q5_1", "gguf_q4k", "gguf_q2k", "gguf_q3k", "gguf_q5k",
                   "gguf_q6k"]:
        for xs in [(1,), (2,), (3,), (4,), (9,)]:
            yield q8_case(f"DequantMatMul_q8_0_act_{scheme}_{xs[0]}", scheme, 150, 512, xs)
        for xs in [(3,), (9,)]:
            yield q8_case(f"DequantMatMul_q8_0_act_{scheme}_w_input_{xs[0]}", scheme, 150, 512, xs, w_input=True)
        # non-finite and zero scales in W (their rows are done again the float way), 1 and 3 rows
        for xs in [(1,), (3,)]:
            yield q8_case(f"DequantMatMul_q8_0_act_{scheme}_scales_{xs[0]}", scheme, 24, 256, xs,
                          scales=[0.5, -0.25, 0.0, 2.0 ** -20, np.inf, -np.inf, np.nan] + [0.125] * 25)
    # MLX ops round x: schemes without the kernel, float16 and float64 x
    # an Add of the product read once and an operand of its shape: one kernel (the residual added
    # as the rows are stored); a transposed operand (copied by the kernel's task), a broadcast one
    # and a product also read by another node (not fused): r + xq @ W^T either way
    for rows, form in [(1, "plain"), (9, "plain"), (3, "transposed"), (2, "broadcast"), (4, "read_twice")]:
        packed, x = blocks("gguf_q4_0", 40, 256), uni((rows, 256))
        w = gguf_dequant("gguf_q4_0", packed, 256).astype(np.float64)
        prod = q8_0_round(x).astype(np.float64) @ w.T
        r = uni((40,) if form == "broadcast" else (40, rows) if form == "transposed" else (rows, 40))
        nodes = [node("DequantMatMul", ["x", "w"], ["y"], scheme=S("gguf_q4_0"), activations=S("q8_0"))]
        if form == "transposed":
            nodes.append(node("Transpose", ["rt"], ["r"], perm=IS([1, 0])))
        nodes.append(node("Add", ["r", "y"], ["z"]))
        want = {"z": (prod + (r.T if form == "transposed" else r)).astype(np.float32)}
        if form == "read_twice":
            nodes.append(node("Mul", ["y", "y"], ["yy"]))
            want["yy"] = (prod * prod).astype(np.float32)
        yield Case(f"DequantMatMul_q8_0_act_residual_{form}_{rows}", nodes, {"x": x, ("rt" if form == "transposed" else "r"): r},
                   want, atol=1e-4, rtol=1e-5, params={"w": packed})
    # a product of a FusedSwiGLU read once: the kernel forms silu(gate) * up itself (float x: the
    # Q4_0 row kernel; 1 and 6 rows: the rows and the dequantized tiles), gate first or last; one
    # read twice is not fused; silu(gate) * up @ W^T in float64 either way
    for rows, gf, twice in [(1, 1, False), (6, 0, False), (2, 1, True)]:
        packed, x = blocks("gguf_q4_0", 24, 128), uni((rows, 256), -4.0, 4.0)
        w = gguf_dequant("gguf_q4_0", packed, 128).astype(np.float64)
        g, u = (x[:, :128], x[:, 128:]) if gf else (x[:, 128:], x[:, :128])
        g, u = g.astype(np.float64), u.astype(np.float64)
        act = g / (1 + np.exp(-g)) * u
        nodes = [node("FusedSwiGLU", ["x"], ["a"], gate_first=I(gf)), node("DequantMatMul", ["a", "w"], ["y"], scheme=S("gguf_q4_0"))]
        want = {"y": (act @ w.T).astype(np.float32)}
        if twice:
            nodes.append(node("Neg", ["a"], ["na"]))
            want["na"] = (-act).astype(np.float32)
        yield Case(f"DequantMatMul_swiglu_x_{rows}_gate_first{gf}{'_read_twice' if twice else ''}", nodes, {"x": x}, want,
                   atol=1e-4, rtol=1e-5, params={"w": packed})
    yield q8_case("DequantMatMul_q8_0_act_gguf_q5k", "gguf_q5k", 5, 512, (2, 3))
    yield q8_case("DequantMatMul_q8_0_act_gguf_q6k_rank1", "gguf_q6k", 5, 256, ())
    yield q8_case("DequantMatMul_q8_0_act_gguf_q4_0_f16", "gguf_q4_0", 6, 128, (3,), xdtype=np.float16, rtol=5e-3)
    yield q8_case("DequantMatMul_q8_0_act_gguf_q8_0_f64", "gguf_q8_0", 6, 128, (3,), xdtype=np.float64, rtol=1e-9)
    # edge blocks: ties (d = 1: 2.5 -> 3, -3.5 -> -4), all zeros (d = 0), values past 127 * 65504
    # (float16 d is inf: q * inf), an inf and a NaN (those blocks stay as they are)
    edge = np.zeros((7, 32), np.float32)
    edge[6] = uni(32, -1e-38, 1e-38)  # d = max|x| / 127 under float16's range: 1 / d overflows, x -> 0
    edge[0, :6] = [127, 2.5, -3.5, 0.5, -0.5, 1.5]
    edge[2] = uni(32, -1e7, 1e7)
    edge[3] = uni(32)
    edge[3, 5] = np.inf
    edge[4] = uni(32)
    edge[4, 7] = np.nan
    edge[5] = uni(32)
    for scheme in ["gguf_q4_0", "gguf_q4k", "gguf_q5_0", "gguf_q8_0", "gguf_q4_1"]:
        for rows, blk in [(1, [0, 1, 5, 3, 5, 6, 4, 5]), (3, [0, 1, 5, 5, 6, 5, 5, 5] * 3), (1, [0, 1, 2, 5, 5, 5, 5, 5])]:
            x = edge[blk].reshape(rows, 256)
            tag = "inf_scale" if 2 in blk else f"{rows}"
            yield q8_case(f"DequantMatMul_q8_0_act_edges_{scheme}_{tag}", scheme, 40, 256, None, x=x)
    x = uni((2, 48))
    yield err("DequantMatMul_activations_unknown", "DequantMatMul", {"x": uni((2, 64)), "w": np.zeros((3, 68), np.uint8)},
              scheme=S("gguf_q8_0"), activations=S("int8"))
    yield err("DequantMatMul_activations_q8_0_k", "DequantMatMul",
              {"x": x, "w": np.zeros((3, 48), np.uint8), "scales": np.ones((3, 3), np.float32)},
              scheme=S("fp8_e4m3"), block_size=I(16), activations=S("q8_0"))


SCHEMES = {  # scheme: (q dtype, q range, asymmetric)
    "int8_block": (np.int8, (-128, 127), False), "int8_block_asym": (np.uint8, (0, 255), True),
    "int4_block": (np.int8, (-8, 7), False), "int4_block_asym": (np.uint8, (0, 15), True),
}


def dequant_ref(x, q, scale, zp, bs):
    """x @ W^T with W[n, k] = (q[n, k] - zp[n, k // bs]) * scale[n, k // bs]."""
    s = np.repeat(scale.astype(np.float64), bs, axis=1)
    z = np.repeat(zp.astype(np.float64), bs, axis=1) if zp is not None else 0
    return x.astype(np.float64) @ ((q.astype(np.float64) - z) * s).T


def dequant_case(name, scheme, bs, xshape, n=6, k=256, xdtype=np.float32, atol=2e-3, rtol=2e-4):
    qdt, (lo, hi), asym = SCHEMES[scheme]
    q = rng.integers(lo, hi + 1, size=(n, k)).astype(qdt)
    scale = uni((n, k // bs), 0.005, 0.02)
    zp = rng.integers(lo, hi + 1, size=(n, k // bs)).astype(np.float32) if asym else None
    x = uni(xshape + (k,), dtype=xdtype)
    ins = {"x": x, "q": q, "scale": scale} | ({"zp": zp} if asym else {})
    return simple(name, "DequantMatMul", ins, dequant_ref(x, q, scale, zp, bs).astype(xdtype), atol=atol, rtol=rtol,
                  scheme=S(scheme), block_size=I(bs))


def dequant_cases():
    for scheme in SCHEMES:
        for bs in [32, 64, 128]:
            yield dequant_case(f"DequantMatMul_{scheme}_bs{bs}", scheme, bs, (3,))
        yield dequant_case(f"DequantMatMul_{scheme}_rank3", scheme, 64, (2, 3))
    yield dequant_case("DequantMatMul_int8_rank1", "int8_block", 32, ())
    yield dequant_case("DequantMatMul_int8_asym_f64", "int8_block_asym", 64, (2,), xdtype=np.float64, atol=1e-9, rtol=1e-9)
    yield dequant_case("DequantMatMul_int4_f64_rank3", "int4_block", 32, (2, 2), xdtype=np.float64, atol=1e-9, rtol=1e-9)
    yield dequant_case("DequantMatMul_int4_f16", "int4_block", 32, (4,), xdtype=np.float16, atol=0.05, rtol=1e-2)
    # the extremes of each range
    q = np.tile(np.array([-8, 7, 0, -1], np.int8), (2, 16))
    scale = np.full((2, 2), 0.5, np.float32)
    x = uni((1, 64))
    yield simple("DequantMatMul_int4_extremes", "DequantMatMul", {"x": x, "q": q, "scale": scale},
                 dequant_ref(x, q, scale, None, 32).astype(np.float32), atol=1e-4, scheme=S("int4_block"))
    x, q, s = uni((2, 64)), np.zeros((3, 64), np.int8), np.ones((3, 2), np.float32)
    yield err("DequantMatMul_unknown_scheme", "DequantMatMul", {"x": x, "q": q, "scale": s}, scheme=S("int3_block"))
    yield err("DequantMatMul_block_size", "DequantMatMul", {"x": x, "q": q, "scale": s}, "UNIMPLEMENTED",
              scheme=S("int8_block"), block_size=I(16))
    yield err("DequantMatMul_q_dtype", "DequantMatMul", {"x": x, "q": q.astype(np.uint8), "scale": s}, scheme=S("int8_block"))
    yield err("DequantMatMul_missing_zp", "DequantMatMul", {"x": x, "q": q.astype(np.uint8), "scale": s},
              scheme=S("int8_block_asym"))
    yield err("DequantMatMul_scale_shape", "DequantMatMul", {"x": x, "q": q, "scale": np.ones((3, 1), np.float32)},
              scheme=S("int8_block"))
    yield err("DequantMatMul_k_not_multiple", "DequantMatMul",
              {"x": uni((2, 48)), "q": np.zeros((3, 48), np.int8), "scale": np.ones((3, 1), np.float32)},
              scheme=S("int8_block"))




# The MX, NVFP4 and FP8 element and scale types, decoded by ml_dtypes (pinned): E2M1 and E8M0 as
# defined in the OCP Microscaling Formats (MX) v1.0 spec (E8M0 0xFF is NaN), E4M3 ("E4M3FN": no
# infinities, S.1111.111 NaN) and E5M2 (IEEE-like) as in the OCP 8-bit Floating Point spec; NVFP4
# (NVIDIA): E2M1 codes, an E4M3 scale per 16 elements and a float32 global scale.
def codes_as(q, dt):
    return q.view(dt).astype(np.float64)


def fp4_codes(q):
    """uint8[N, K/2] -> E2M1 values [N, K], low nibble = even element."""
    c = np.stack([q & 15, q >> 4], axis=-1).reshape(q.shape[0], -1).astype(np.uint8)
    return codes_as(c, ml_dtypes.float4_e2m1fn)


FP = {  # scheme: (block, bits, scale kind)
    "mxfp4": (32, 4, "e8m0"), "mxfp8": (32, 8, "e8m0"), "nvfp4": (16, 4, "e4m3"),
    "fp8_e4m3": (None, 8, "float"), "fp8_e5m2": (None, 8, "float"),
}


def fp_weight(scheme, q, sc, bs, gscale=None):
    codes = fp4_codes(q) if FP[scheme][1] == 4 else codes_as(q, ml_dtypes.float8_e5m2 if scheme == "fp8_e5m2" else ml_dtypes.float8_e4m3fn)
    kind = FP[scheme][2]
    s = codes_as(sc, ml_dtypes.float8_e8m0fnu) if kind == "e8m0" else codes_as(sc, ml_dtypes.float8_e4m3fn) if kind == "e4m3" else sc.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        w = codes * np.repeat(s, bs, axis=1)
        return w if gscale is None else w * np.float64(gscale)


def fp_case(name, scheme, n, k, xshape, bs=None, xdtype=np.float32, rtol=1e-5, q=None, sc=None, gscale=None):
    bs = FP[scheme][0] or bs
    bits, kind = FP[scheme][1], FP[scheme][2]
    if q is None:
        q = rng.integers(0, 256, size=(n, k * bits // 8), dtype=np.uint8)
        if bits == 8:  # keep NaN codes out of the random weights (edge cases put them in on purpose)
            q = np.where((q & 0x7F) >= (0x7C if scheme == "fp8_e5m2" else 0x7F), q & 0xF0, q).astype(np.uint8)
    if sc is None:
        sc = (rng.integers(120, 133, size=(n, k // bs)).astype(np.uint8) if kind == "e8m0" else
              rng.integers(0x20, 0x50, size=(n, k // bs)).astype(np.uint8) if kind == "e4m3" else uni((n, k // bs), 0.01, 0.1))
    ins = {"w": q, "scales": sc}
    if scheme == "nvfp4":
        gscale = np.float32(0.37) if gscale is None else gscale
        ins["g"] = np.asarray(gscale, np.float32)
    w = fp_weight(scheme, q, sc, bs, gscale)
    x = uni(xshape + (k,), dtype=xdtype)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = x64 @ w.T
        fin = np.isfinite(w)
        atol = rtol * max(float((np.abs(x64) @ np.where(fin, np.abs(w), 0).T).max()), 1e-30)
    attrs = {"scheme": S(scheme)} | ({"block_size": I(bs)} if FP[scheme][0] is None else {})
    return Case(name, [node("DequantMatMul", ["x", *ins], ["y"], **attrs)], {"x": x}, {"y": want.astype(xdtype)},
                atol=atol, rtol=rtol, params=ins)


def fp_cases():
    for scheme, (blk, bits, kind) in FP.items():
        bs = blk or 32
        yield fp_case(f"DequantMatMul_{scheme}", scheme, 5, 128, (3,), bs=bs)
        yield fp_case(f"DequantMatMul_{scheme}_rank3_f64", scheme, 4, 64, (2, 2), bs=bs, xdtype=np.float64, rtol=1e-12)
        yield fp_case(f"DequantMatMul_{scheme}_f16", scheme, 4, 64, (2,), bs=bs, xdtype=np.float16, rtol=5e-3)
        # every code once, and the scale edges: E8M0 0 (2^-127), 1, 127 (1), 254 (2^127: overflows
        # to inf/NaN in products), 255 (NaN); E4M3 0, the smallest subnormal, 448, NaN (0x7F)
        k = 256 if bits == 8 else 512
        q = np.tile(np.arange(256, dtype=np.uint8), (2, k * bits // 8 // 256))
        sc = ({"e8m0": [0, 1, 127, 254, 255, 126, 130, 100], "e4m3": [0, 1, 0x7E, 0x7F, 0x38, 0xB8, 0x08, 0x40]}.get(kind)
              or [0.0, -1.5, 1e-40, 3e38, np.inf, 0.25, 1.0, 2.0])
        sc = np.tile(np.asarray(sc, np.uint8 if kind != "float" else np.float32), (2, k // bs // 8 + 1))[:, :k // bs]
        yield fp_case(f"DequantMatMul_{scheme}_all_codes_edge_scales", scheme, 2, k, (3,), bs=bs, q=q, sc=sc)
    yield fp_case("DequantMatMul_fp8_e4m3_bs128_rank1", "fp8_e4m3", 3, 256, (), bs=128)
    yield fp_case("DequantMatMul_fp8_e5m2_bs1", "fp8_e5m2", 3, 16, (2,), bs=1)
    yield fp_case("DequantMatMul_nvfp4_gscale_1d", "nvfp4", 3, 64, (2,), gscale=np.array([2.5], np.float32))
    x = uni((2, 64))
    q4, s32, s16 = np.zeros((3, 32), np.uint8), np.zeros((3, 2), np.uint8), np.zeros((3, 4), np.uint8)
    yield err("DequantMatMul_mxfp4_bytes", "DequantMatMul", {"x": x, "w": np.zeros((3, 64), np.uint8), "s": s32}, scheme=S("mxfp4"))
    yield err("DequantMatMul_mxfp4_scales", "DequantMatMul", {"x": x, "w": q4, "s": np.zeros((3, 2), np.float32)}, scheme=S("mxfp4"))
    yield err("DequantMatMul_nvfp4_no_gscale", "DequantMatMul", {"x": x, "w": q4, "s": s16}, scheme=S("nvfp4"))
    yield err("DequantMatMul_nvfp4_gscale_shape", "DequantMatMul", {"x": x, "w": q4, "s": s16, "g": np.ones(2, np.float32)},
              scheme=S("nvfp4"))
    yield err("DequantMatMul_mxfp8_k", "DequantMatMul", {"x": uni((2, 48)), "w": np.zeros((3, 48), np.uint8), "s": s32},
              scheme=S("mxfp8"))
    yield err("DequantMatMul_fp8_block", "DequantMatMul", {"x": x, "w": np.zeros((3, 64), np.uint8), "s": np.ones((3, 3), np.float32)},
              scheme=S("fp8_e4m3"), block_size=I(24))


def expert_weights(scheme, e, n, k, bs=32):
    """(weight inputs stacked over e experts, W[e, n, k] float64) for any scheme."""
    if scheme in GGUF:
        packed = blocks(scheme, e * n, k)
        return {"w": packed.reshape(e, n, -1)}, gguf_dequant(scheme, packed, k).astype(np.float64).reshape(e, n, k)
    if scheme in SCHEMES:
        qdt, (lo, hi), asym = SCHEMES[scheme]
        q = rng.integers(lo, hi + 1, size=(e, n, k)).astype(qdt)
        scale = uni((e, n, k // bs), 0.005, 0.02)
        ins = {"q": q, "scale": scale}
        zp = 0
        if asym:
            ins["zp"] = rng.integers(lo, hi + 1, size=(e, n, k // bs)).astype(np.float32)
            zp = np.repeat(ins["zp"].astype(np.float64), bs, axis=2)
        return ins, (q.astype(np.float64) - zp) * np.repeat(scale.astype(np.float64), bs, axis=2)
    blk, bits, kind = FP[scheme]
    bs = blk or bs
    q = rng.integers(0, 256, size=(e * n, k * bits // 8), dtype=np.uint8)
    if bits == 8:
        q = np.where((q & 0x7F) >= 0x7C, q & 0xF0, q).astype(np.uint8)
    sc = (rng.integers(120, 133, size=(e * n, k // bs)).astype(np.uint8) if kind == "e8m0" else
          rng.integers(0x20, 0x50, size=(e * n, k // bs)).astype(np.uint8) if kind == "e4m3" else uni((e * n, k // bs), 0.01, 0.1))
    if kind == "e8m0":
        sc[0, 0] = 255  # a NaN scale: expert 0, row 0
    w = fp_weight(scheme, q, sc, bs).reshape(e, n, k)
    ins = {"w": q.reshape(e, n, -1), "scales": sc.reshape(e, n, -1)}
    if scheme == "nvfp4":
        g = uni((e,), 0.5, 2.0)
        ins["g"] = g
        w = w * g.astype(np.float64).reshape(e, 1, 1)
    return ins, w


def grouped_case(name, scheme, m, e, n, k, idx=None, xdtype=np.float32, rtol=1e-5, bs=32, scalar_g=False):
    ins, w = expert_weights(scheme, e, n, k, bs)
    if scalar_g:
        w = w / ins["g"].astype(np.float64).reshape(e, 1, 1) * 1.5
        ins["g"] = np.float32(1.5)
    idx = rng.integers(0, e, size=m).astype(np.int32) if idx is None else np.asarray(idx, np.int32)
    sel = np.clip(np.where(idx < 0, idx + e, idx), 0, e - 1)
    x = uni((m, k), dtype=xdtype)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        want = np.einsum("mk,mnk->mn", x64, w[sel])
        atol = rtol * max(float(np.nanmax(np.einsum("mk,mnk->mn", np.abs(x64), np.where(np.isfinite(w), np.abs(w), 0)[sel]))), 1e-30)
    attrs = {"scheme": S(scheme)} | ({"block_size": I(bs)} if scheme in SCHEMES or scheme.startswith("fp8") else {})
    return Case(name, [node("DequantGroupedMatMul", ["x", *ins, "idx"], ["y"], **attrs)], {"x": x, "idx": idx},
                {"y": want.astype(xdtype)}, atol=atol, rtol=rtol, params=ins)


def grouped_cases():
    # gather_qmm (int, MX, NVFP4); GGUF and FP8: selected experts dequantized (M <= E) or all (M > E)
    yield grouped_case("DequantGroupedMatMul_int8_block", "int8_block", 5, 3, 4, 64)
    yield grouped_case("DequantGroupedMatMul_int4_block_asym", "int4_block_asym", 4, 2, 6, 128, bs=64)
    yield grouped_case("DequantGroupedMatMul_mxfp4_nan", "mxfp4", 6, 3, 4, 64, idx=[0, 1, 2, 0, 2, 1])
    yield grouped_case("DequantGroupedMatMul_mxfp8", "mxfp8", 3, 4, 5, 64)
    yield grouped_case("DequantGroupedMatMul_nvfp4_per_expert_g", "nvfp4", 5, 3, 4, 64)
    yield grouped_case("DequantGroupedMatMul_nvfp4_one_g", "nvfp4", 2, 3, 4, 64, scalar_g=True)
    yield grouped_case("DequantGroupedMatMul_gguf_q4_0_few", "gguf_q4_0", 3, 4, 5, 64)
    yield grouped_case("DequantGroupedMatMul_gguf_q6k_many", "gguf_q6k", 6, 2, 3, 256)
    yield grouped_case("DequantGroupedMatMul_gguf_q4k_neg_idx", "gguf_q4k", 4, 4, 3, 256, idx=[-1, 5, 0, -9])
    yield grouped_case("DequantGroupedMatMul_fp8_e4m3_few", "fp8_e4m3", 2, 3, 4, 64)
    yield grouped_case("DequantGroupedMatMul_fp8_e5m2_many", "fp8_e5m2", 5, 2, 4, 64, bs=16)
    yield grouped_case("DequantGroupedMatMul_nvfp4_f64_few", "nvfp4", 2, 3, 4, 64, xdtype=np.float64, rtol=1e-12)
    yield grouped_case("DequantGroupedMatMul_gguf_q8_0_f16_many", "gguf_q8_0", 5, 2, 4, 64, xdtype=np.float16, rtol=5e-3)
    yield grouped_case("DequantGroupedMatMul_int4_f16", "int4_block", 3, 2, 4, 64, xdtype=np.float16, rtol=5e-3)
    yield grouped_case("DequantGroupedMatMul_int8_f64_many", "int8_block", 4, 2, 4, 64, xdtype=np.float64, rtol=1e-12)
    x, idx = uni((3, 64)), np.zeros(3, np.int32)
    yield err("DequantGroupedMatMul_experts", "DequantGroupedMatMul",
              {"x": x, "w": np.zeros((2, 4, 32), np.uint8), "s": np.zeros((3, 4, 2), np.uint8), "idx": idx}, scheme=S("mxfp4"))
    yield err("DequantGroupedMatMul_idx_shape", "DequantGroupedMatMul",
              {"x": x, "w": np.zeros((2, 4, 36), np.uint8), "idx": np.zeros(2, np.int32)}, scheme=S("gguf_q4_0"))
    yield err("DequantGroupedMatMul_idx_dtype", "DequantGroupedMatMul",
              {"x": x, "w": np.zeros((2, 4, 36), np.uint8), "idx": np.zeros(3, np.float32)}, scheme=S("gguf_q4_0"))
    yield err("DequantGroupedMatMul_bytes", "DequantGroupedMatMul",
              {"x": x, "w": np.zeros((2, 4, 35), np.uint8), "idx": idx}, scheme=S("gguf_q4_0"))


# Weights that are params or constants are repacked into MLX's affine layout once by the
# executable (src/mlx/exec_repack.c); setting a param again must repack it again. Each case runs,
# sets its weight params to new values and runs again (op_runner's "reset"), both against the numpy
# products of the gguf-py (or formula) dequantizations; every path on the CPU (quantized_matmul for
# a few rows of float16 x and the int schemes, rlx's matvec kernel for float32 x times
# Q8_0/Q4_0/Q4_1/Q4_K) and the GPU.
def gguf_product(x, packed, scheme, k):
    x64, w = x.astype(np.float64), gguf_dequant(scheme, packed, k).astype(np.float64)
    return x64 @ w.T, np.abs(x64) @ np.abs(w).T


def repack_case(name, scheme, n, k, xshape, xdtype=np.float32, rtol=1e-5):
    x = uni(xshape + (k,), dtype=xdtype)
    p1, p2 = blocks(scheme, n, k), blocks(scheme, n, k)
    (y1, m1), (y2, m2) = gguf_product(x, p1, scheme, k), gguf_product(x, p2, scheme, k)
    atol = rtol * max(float(m1.max()), float(m2.max()))
    return Case(name, [node("DequantMatMul", ["x", "w"], ["y"], scheme=S(scheme))], {"x": x}, {"y": y1.astype(xdtype)},
                atol=atol, rtol=rtol, params={"w": p1}, reset=({"w": p2}, {"y": y2.astype(xdtype)}))


def q8_repack_case(name, nodes, xs, ws, outs, rtol=1e-5):
    """activations q8_0 (CPU: W kept in rlx's rows8 form): nodes [(x name, w name, scheme, K)],
    xs {name: x}, ws [{name: packed}, {name: packed}] (the params, then the reset's), outs [y names]."""
    def want(w):
        ys = {}
        for (xn, wn, scheme, k), yn in zip(nodes, outs):
            xq, wd = q8_0_round(xs[xn]).astype(np.float64), gguf_dequant(scheme, w[wn], k).astype(np.float64)
            ys[yn] = (xq @ wd.T).astype(np.float32), rtol * float((np.abs(xq) @ np.abs(wd).T).max())
        return ys
    w1, w2 = want(ws[0]), want(ws[1])
    atol = max(a for _, a in list(w1.values()) + list(w2.values()))
    return Case(name, [node("DequantMatMul", [xn, wn], [yn], scheme=S(sc), activations=S("q8_0")) for (xn, wn, sc, _), yn in zip(nodes, outs)],
                xs, {k: v for k, (v, _) in w1.items()}, atol=atol, rtol=rtol, params=ws[0],
                reset=(ws[1], {k: v for k, (v, _) in w2.items()}))


def repack_cases():
    # rows8 forms remade when their param is set; one param read as Q4_0 (K 544) and as Q8_0 (K 288)
    # by two nodes (the same bytes: no rows8 form then, the GGUF rows)
    for scheme, k in [("gguf_q8_0", 64), ("gguf_q4_0", 64), ("gguf_q4_1", 64), ("gguf_q4k", 256)]:
        yield q8_repack_case(f"DequantMatMul_repack_rows8_{scheme}", [("x", "w", scheme, k)], {"x": uni((2, k))},
                             [{"w": blocks(scheme, 17, k)} for _ in range(2)], ["y"])
    # (Q4_0 blocks read as Q8_0 have random float16 scales, up to 6.5e4: float32 sums of large terms
    # that cancel, rtol 1e-3)
    yield q8_repack_case("DequantMatMul_repack_rows8_two_schemes", [("x1", "w", "gguf_q4_0", 544), ("x2", "w", "gguf_q8_0", 288)],
                         {"x1": uni((1, 544)), "x2": uni((3, 288))}, [{"w": blocks("gguf_q4_0", 16, 544)} for _ in range(2)], ["y1", "y2"],
                         rtol=1e-3)
    yield repack_case("DequantMatMul_repack_gguf_q4_0", "gguf_q4_0", 6, 128, (2,))
    yield repack_case("DequantMatMul_repack_gguf_q4_1_rank1", "gguf_q4_1", 5, 64, ())
    yield repack_case("DequantMatMul_repack_gguf_q8_0_f16", "gguf_q8_0", 4, 64, (3,), xdtype=np.float16, rtol=5e-3)
    yield repack_case("DequantMatMul_repack_gguf_q8_0", "gguf_q8_0", 4, 64, (3,))
    yield repack_case("DequantMatMul_repack_gguf_q4k", "gguf_q4k", 3, 512, (1, 2))
    yield repack_case("DequantMatMul_repack_gguf_q4_0_prefill", "gguf_q4_0", 4, 64, (6,))
    # an int scheme whose scales alone are set again
    x, bs = uni((2, 128)), 32
    q = rng.integers(0, 256, size=(5, 128)).astype(np.uint8)
    zp = rng.integers(0, 256, size=(5, 128 // bs)).astype(np.float32)
    s1, s2 = uni((5, 128 // bs), 0.005, 0.02), uni((5, 128 // bs), 0.03, 0.05)
    yield Case("DequantMatMul_repack_int8_asym_scale", [node("DequantMatMul", ["x", "q", "scale", "zp"], ["y"], scheme=S("int8_block_asym"),
                                                             block_size=I(bs))],
               {"x": x}, {"y": dequant_ref(x, q, s1, zp, bs).astype(np.float32)}, atol=2e-3, rtol=2e-4,
               params={"q": q, "scale": s1, "zp": zp}, reset=({"scale": s2}, {"y": dequant_ref(x, q, s2, zp, bs).astype(np.float32)}))
    # two nodes reading one param (one repacked copy), and a constant weight
    x1, x2 = uni((2, 64)), uni((3, 64))
    p1, p2 = blocks("gguf_q4_1", 4, 64), blocks("gguf_q4_1", 4, 64)
    want = lambda p: {f"y{i}": gguf_product(xi, p, "gguf_q4_1", 64)[0].astype(np.float32) for i, xi in ((1, x1), (2, x2))}
    yield Case("DequantMatMul_repack_shared", [node("DequantMatMul", ["x1", "w"], ["y1"], scheme=S("gguf_q4_1")),
                                               node("DequantMatMul", ["x2", "w"], ["y2"], scheme=S("gguf_q4_1"))],
               {"x1": x1, "x2": x2}, want(p1), atol=1e-4, rtol=1e-5, params={"w": p1}, reset=({"w": p2}, want(p2)))
    yield Case("DequantMatMul_repack_constant", [node("DequantMatMul", ["x1", "w"], ["y1"], scheme=S("gguf_q4_1"))], {"x1": x1},
               {"y1": want(p1)["y1"]}, atol=1e-4, rtol=1e-5, constants={"w": p1})
    # experts: gather_qmm on the repacked weights
    e, n, k, idx = 4, 5, 64, np.array([3, 0, -1], np.int32)
    x = uni((3, k))
    ins = [{"w": blocks("gguf_q4_1", e * n, k)} for _ in range(2)]
    ws = [gguf_dequant("gguf_q4_1", i["w"], k).astype(np.float64).reshape(e, n, k) for i in ins]
    ys = [np.einsum("mk,mnk->mn", x.astype(np.float64), w[[3, 0, 3]]).astype(np.float32) for w in ws]
    yield Case("DequantGroupedMatMul_repack_gguf_q4_1", [node("DequantGroupedMatMul", ["x", "w", "idx"], ["y"], scheme=S("gguf_q4_1"))],
               {"x": x, "idx": idx}, {"y": ys[0]}, atol=1e-4, rtol=1e-5, params={"w": ins[0]["w"].reshape(e, n, -1)},
               reset=({"w": ins[1]["w"].reshape(e, n, -1)}, {"y": ys[1]}))


def dequantize_cases():
    """Dequantize: the packed rows themselves decoded (against gguf-py, exactly), every GGUF scheme
    (Q8_0, Q4_0, Q4_1, Q4_K through rlx's CPU kernel, the others through MLX ops) at ranks 1 and 3,
    edge and non-finite scales, and the quantized-embedding pattern (a Gather of a packed table's
    rows by token ids, then Dequantize)."""
    for scheme, (_, qk, bb, fields) in GGUF.items():
        k = 2 * qk if qk == 256 else 4 * qk
        packed = blocks(scheme, 6, k)
        yield Case(f"Dequantize_{scheme}", [node("Dequantize", ["q"], ["y"], scheme=S(scheme))], {"q": packed},
                   {"y": gguf_dequant(scheme, packed, k)}, atol=0, rtol=2e-7)
        if "f16" in {kind for _, kind in fields}:
            packed = blocks(scheme, 6, k, scales=F16_EDGES + [np.inf, -np.inf, np.nan])
            with np.errstate(invalid="ignore", over="ignore"):
                want = gguf_dequant(scheme, packed, k)
            yield Case(f"Dequantize_{scheme}_edge_scales", [node("Dequantize", ["q"], ["y"], scheme=S(scheme))], {"q": packed},
                       {"y": want}, atol=0, rtol=2e-7)
    for scheme in ["gguf_q8_0", "gguf_q4k", "gguf_q6k"]:
        qk = GGUF[scheme][1]
        packed = blocks(scheme, 6, qk)
        w = gguf_dequant(scheme, packed, qk)
        yield Case(f"Dequantize_{scheme}_rank1", [node("Dequantize", ["q"], ["y"], scheme=S(scheme))], {"q": packed[2]},
                   {"y": w[2]}, atol=0, rtol=2e-7)
        yield Case(f"Dequantize_{scheme}_rank3", [node("Dequantize", ["q"], ["y"], scheme=S(scheme))], {"q": packed.reshape(2, 3, -1)},
                   {"y": w.reshape(2, 3, -1)}, atol=0, rtol=2e-7)
        ids = np.array([[5, 0, 5, 3]], np.int32)
        yield Case(f"Dequantize_{scheme}_embedding", [node("Gather", ["table", "ids"], ["rows"]),
                                                      node("Dequantize", ["rows"], ["y"], scheme=S(scheme))],
                   {"ids": ids}, {"y": w[ids]}, atol=0, rtol=2e-7, params={"table": packed})
    q = np.zeros((3, 36), np.uint8)
    yield Case("Dequantize_not_gguf", [node("Dequantize", ["q"], ["y"], scheme=S("int8_block"))], {"q": q}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"], expect_message="Dequantize takes a GGUF scheme")
    yield Case("Dequantize_bytes", [node("Dequantize", ["q"], ["y"], scheme=S("gguf_q8_0"))], {"q": q}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"],
               expect_message="holds 36 bytes per row, not a whole number of 34-byte gguf_q8_0 blocks")
    yield err("Dequantize_dtype", "Dequantize", {"q": np.zeros((3, 34), np.int8)}, scheme=S("gguf_q8_0"))


def cases():
    yield from dequantize_cases()
    yield from gguf_cases()
    yield from q8_cases()
    yield from fp_cases()
    yield from grouped_cases()
    yield from dequant_cases()
    yield from repack_cases()
