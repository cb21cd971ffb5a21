"""LayerNorm / RmsNorm over any axis (with and without beta), LayerNorm2d on NCHW, GroupNorm,
Softmax / LogSoftmax against numpy float64 references (tests/ops/nn_ref.py). Edge shapes: rank 1,
size-1 normalized axes, float16, non-contiguous inputs (a Transpose feeding the op); error cases."""
import numpy as np

import nn_ref as R
from opcase import IS, Case, F, I, node, simple, sym

rng = np.random.default_rng(3)


def rnd(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def ln_cases(op, ref, eps_default):
    short = "ln" if op == "LayerNorm" else "rms"
    for shape, axis in (((7,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 3, 4), -3), ((2, 1, 4), 1),
                        ((2, 3, 4, 5), 2)):
        x = rnd(*shape)
        n = shape[axis]
        g, b = rnd(n, lo=0.5, hi=1.5), rnd(n)
        tag = f"{'x'.join(map(str, shape))}_ax{axis}"
        yield simple(f"{short}_{tag}", op, {"x": x, "g": g, "b": b}, ref(x, g, b, axis=axis, eps=eps_default)
                     .astype(np.float32), atol=2e-5, rtol=2e-5, axis=I(axis))
        yield simple(f"{short}_nobeta_{tag}", op, {"x": x, "g": g}, ref(x, g, axis=axis, eps=eps_default)
                     .astype(np.float32), atol=2e-5, rtol=2e-5, axis=I(axis))
    x = rnd(4, 6)
    g, b = rnd(6), rnd(6)
    yield simple(f"{short}_eps", op, {"x": x * 1e-2, "g": g, "b": b}, ref(x * 1e-2, g, b, eps=0.1).astype(np.float32),
                 atol=2e-5, rtol=2e-5, epsilon=F(0.1))
    # rows of 771 (8-wide blocks and a ragged end), enough of them for rlx's CPU kernel to split
    # over threads; an offset that a one-pass variance would lose
    x = rnd(40, 771) + 10
    g, b = rnd(771, lo=0.5, hi=1.5), rnd(771)
    yield simple(f"{short}_rows", op, {"x": x, "g": g, "b": b}, ref(x, g, b, eps=eps_default).astype(np.float32),
                 atol=1e-4, rtol=1e-4)
    # over a middle axis: [2, 40, 150] over axis 1, the kernel's column blocks (64, 64 and a ragged
    # 22) in several tasks, with the same offset
    x = rnd(2, 40, 150) + 10
    g, b = rnd(40, lo=0.5, hi=1.5), rnd(40)
    yield simple(f"{short}_cols", op, {"x": x, "g": g, "b": b}, ref(x, g, b, axis=1, eps=eps_default).astype(np.float32),
                 atol=1e-4, rtol=1e-4, axis=I(1))
    xh = rnd(3, 16, dtype=np.float16)
    gh, bh = rnd(16, dtype=np.float16), rnd(16, dtype=np.float16)
    yield simple(f"{short}_f16", op, {"x": xh, "g": gh, "b": bh}, ref(xh, gh, bh, eps=eps_default).astype(np.float16),
                 atol=5e-3, rtol=5e-3)
    # non-contiguous: x [4,3] transposed to [3,4], normalized over axis 0
    xt = rnd(4, 3)
    g, b = rnd(3), rnd(3)
    yield Case(f"{short}_noncontiguous", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])),
                                          node(op, ["x", "g", "b"], ["y"], axis=I(0))],
               {"xt": xt, "g": g, "b": b}, {"y": ref(xt.T, g, b, axis=0, eps=eps_default).astype(np.float32)},
               atol=2e-5, rtol=2e-5)
    # errors: axis out of range, gamma length, dtype, negative epsilon, rank 0
    x = rnd(2, 3)
    for nm, ins, attrs, code in (("axis", {"x": x, "g": rnd(3)}, {"axis": I(2)}, "OUT_OF_RANGE"),
                                 ("gamma", {"x": x, "g": rnd(2)}, {}, "INVALID_ARGUMENT"),
                                 ("beta", {"x": x, "g": rnd(3), "b": rnd(4)}, {}, "INVALID_ARGUMENT"),
                                 ("dtype", {"x": x, "g": rnd(3, dtype=np.float16)}, {}, "INVALID_ARGUMENT"),
                                 ("eps", {"x": x, "g": rnd(3)}, {"epsilon": F(-1)}, "INVALID_ARGUMENT"),
                                 ("int", {"x": x.astype(np.int32), "g": rnd(3).astype(np.int32)}, {}, "INVALID_ARGUMENT"),
                                 ("rank0", {"x": np.float32(1), "g": rnd(1)}, {}, "INVALID_ARGUMENT")):
        yield Case(f"{short}_err_{nm}", [node(op, list(ins), ["y"], **attrs)], ins, {}, expect_error=code, modes=["lazy"])


def ln2d_ref(x, g, b, eps=1e-5):
    return R.layer_norm(x, g, b, axis=1, eps=eps)


def cases():
    yield from ln_cases("LayerNorm", R.layer_norm, 1e-5)
    yield from ln_cases("RmsNorm", R.rms_norm, 1e-6)
    # symbolic leading dims (bound at run time)
    x = rnd(3, 4, 6)
    g, b = rnd(6), rnd(6)
    yield Case("ln_symbolic", [node("LayerNorm", ["x", "g", "b"], ["y"])], {"x": x, "g": g, "b": b},
               {"y": R.layer_norm(x, g, b).astype(np.float32)}, atol=2e-5, rtol=2e-5, dims={"x": [sym(0), sym(1), 6]})
    # LayerNorm2d: over C at every (n, h, w) of NCHW
    for shape in ((2, 3, 4, 5), (1, 6, 1, 1), (2, 4, 3, 1)):
        x = rnd(*shape)
        g, b = rnd(shape[1]), rnd(shape[1])
        tag = "x".join(map(str, shape))
        yield simple(f"ln2d_{tag}", "LayerNorm2d", {"x": x, "g": g, "b": b}, ln2d_ref(x, g, b).astype(np.float32),
                     atol=2e-5, rtol=2e-5)
        yield simple(f"ln2d_nobeta_{tag}", "LayerNorm2d", {"x": x, "g": g},
                     R.layer_norm(x, g, axis=1).astype(np.float32), atol=2e-5, rtol=2e-5)
    yield Case("ln2d_err_rank", [node("LayerNorm2d", ["x", "g"], ["y"])], {"x": rnd(2, 3, 4), "g": rnd(3)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    # GroupNorm: groups of C/G channels and every spatial position (G = 1: whole sample, G = C: instance norm)
    for shape, groups in (((2, 6, 4, 3), 3), ((2, 6, 5), 6), ((3, 4), 1), ((2, 4, 2, 2, 2), 2), ((1, 8, 1, 1), 4)):
        x = rnd(*shape)
        g, b = rnd(shape[1], lo=0.5, hi=1.5), rnd(shape[1])
        tag = "x".join(map(str, shape))
        yield simple(f"gn_{tag}_g{groups}", "GroupNorm", {"x": x, "g": g, "b": b},
                     R.group_norm(x, g, b, groups).astype(np.float32), atol=2e-5, rtol=2e-5, num_groups=I(groups))
    x = rnd(2, 4, 3, dtype=np.float16)
    g, b = rnd(4, dtype=np.float16), rnd(4, dtype=np.float16)
    yield simple("gn_f16", "GroupNorm", {"x": x, "g": g, "b": b}, R.group_norm(x, g, b, 2, eps=1e-3).astype(np.float16),
                 atol=5e-3, rtol=5e-3, num_groups=I(2), epsilon=F(1e-3))
    for nm, ins, attrs in (("groups", {"x": rnd(2, 6, 3), "g": rnd(6), "b": rnd(6)}, {"num_groups": I(4)}),
                           ("zero", {"x": rnd(2, 6, 3), "g": rnd(6), "b": rnd(6)}, {"num_groups": I(0)}),
                           ("rank", {"x": rnd(6), "g": rnd(6), "b": rnd(6)}, {"num_groups": I(2)}),
                           ("gamma", {"x": rnd(2, 6, 3), "g": rnd(3), "b": rnd(6)}, {"num_groups": I(3)})):
        yield Case(f"gn_err_{nm}", [node("GroupNorm", list(ins), ["y"], **attrs)], ins, {},
                   expect_error="INVALID_ARGUMENT", modes=["lazy"])
    # Softmax / LogSoftmax along each axis; rank 1; large logits (stability); f16; non-contiguous
    for op, ref in (("Softmax", R.softmax), ("LogSoftmax", R.log_softmax)):
        for shape, axis in (((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 1, 3), 1)):
            x = rnd(*shape, lo=-5, hi=5)
            yield simple(f"{op}_{'x'.join(map(str, shape))}_ax{axis}", op, {"x": x},
                         ref(x.astype(np.float64), axis=axis).astype(np.float32), atol=2e-6, rtol=2e-5, axis=I(axis))
        x = rnd(2, 6, lo=-1, hi=1) + np.float32(1000)
        yield simple(f"{op}_large", op, {"x": x}, ref(x.astype(np.float64)).astype(np.float32), atol=2e-5, rtol=2e-5)
        # rlx's CPU kernel: long rows split over threads, a row with -inf entries
        xw = rnd(7, 6625, lo=-20, hi=20)
        xw[3, ::5] = -np.inf
        yield simple(f"{op}_wide", op, {"x": xw}, ref(xw.astype(np.float64), axis=-1).astype(np.float32), atol=2e-6,
                     rtol=2e-5)
        # over a middle axis (YOLOv8's box distributions): column blocks, a ragged last one
        xc = rnd(2, 16, 4, 130, lo=-20, hi=20)
        xc[1, ::3, 2, 7] = -np.inf
        yield simple(f"{op}_columns", op, {"x": xc}, ref(xc.astype(np.float64), axis=1).astype(np.float32), atol=2e-6,
                     rtol=2e-5, axis=I(1))
        xh = rnd(3, 8, dtype=np.float16)
        yield simple(f"{op}_f16", op, {"x": xh}, ref(xh.astype(np.float64)).astype(np.float16), atol=3e-3, rtol=3e-3)
        xt = rnd(5, 3)
        yield Case(f"{op}_noncontiguous", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])),
                                           node(op, ["x"], ["y"], axis=I(-1))],
                   {"xt": xt}, {"y": ref(xt.T.astype(np.float64), axis=-1).astype(np.float32)}, atol=2e-6, rtol=2e-5)
        yield Case(f"{op}_err_axis", [node(op, ["x"], ["y"], axis=I(3))], {"x": rnd(2, 3)}, {},
                   expect_error="OUT_OF_RANGE", modes=["lazy"])
        yield Case(f"{op}_err_int", [node(op, ["x"], ["y"])], {"x": np.ones((2, 3), np.int32)}, {},
                   expect_error="INVALID_ARGUMENT", modes=["lazy"])
    # empty inputs (MLX's CPU reduction of an array without elements loops for a length read from
    # uninitialized memory, fuzz_graph): the results are empty too
    x0, g0 = np.zeros((0, 3, 2, 1), np.float32), np.zeros(0, np.float32)
    for op in ("LayerNorm", "RmsNorm"):
        yield simple(f"{op}_empty_axis0", op, {"x": x0, "g": g0}, x0, axis=I(0))
        yield simple(f"{op}_empty_last", op, {"x": np.zeros((2, 0), np.float32), "g": g0}, np.zeros((2, 0), np.float32))
    for op in ("Softmax", "LogSoftmax"):
        for axis in (0, -1):
            yield simple(f"{op}_empty_ax{axis}", op, {"x": x0}, x0, axis=I(axis))
    yield simple("gn_empty", "GroupNorm", {"x": np.zeros((0, 4, 3), np.float32), "g": np.ones(4, np.float32),
                                           "b": np.zeros(4, np.float32)}, np.zeros((0, 4, 3), np.float32), num_groups=I(2))
