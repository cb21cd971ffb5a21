"""MatMul, DotGeneral and the matmul variants against numpy (float64 references): numpy.matmul
broadcasting and 1-D operands, integer operands (exact past 2^24, wrapping like numpy), any batch
and contracting dims (numpy.einsum), bias + activation, LoRA, grouped (per-row expert) matmul
(DequantMatMul is in dequant.py), constant and param weights (packed once by CPU executables).
Errors: mismatched dims and dtypes, bad dims lists."""
import string

import numpy as np

from nn_ref import ACTIVATIONS as ACTS
from opcase import DT, IS, Case, F, S, error_case as err, node, simple

rng = np.random.default_rng(11)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def f64(*a):
    return [np.asarray(v, np.float64) for v in a]


def dot_general_ref(a, b, lc, rc, lb, rb):
    """numpy.einsum with letters: batch dims shared, contracting dims summed, free dims kept in order."""
    letters = iter(string.ascii_letters)
    la, ra = [None] * a.ndim, [None] * b.ndim
    for x, z in zip(lb, rb):
        la[x] = ra[z] = next(letters)
    for x, z in zip(lc, rc):
        la[x] = ra[z] = next(letters)
    for i in range(a.ndim):
        la[i] = la[i] or next(letters)
    for i in range(b.ndim):
        ra[i] = ra[i] or next(letters)
    out = [la[x] for x in lb] + [la[i] for i in range(a.ndim) if i not in lb and i not in lc] + \
          [ra[i] for i in range(b.ndim) if i not in rb and i not in rc]
    return np.einsum(f"{''.join(la)},{''.join(ra)}->{''.join(out)}", *f64(a, b))


def matmul_cases():
    shapes = [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 5)), ((3, 4), (4,)),
              ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,)), ((1, 1), (1, 1)), ((3, 0), (0, 2)),
              # the CPU kernel's tiles (row and column blocks, ragged), a shared operand of rank 3
              # with batch 1, batch folded into rows, batch on the right only, empty results
              ((130, 70), (70, 150)), ((1, 40, 70), (3, 70, 90)), ((2, 3, 40, 70), (70, 90)),
              ((90, 70), (2, 70, 150)), ((2, 0, 5), (5, 3)), ((4, 6), (2, 6, 0))]
    for sa, sb in shapes:
        a, b = uni(sa), uni(sb)
        name = "MatMul_" + "x".join(map(str, sa)) + "_" + "x".join(map(str, sb))
        yield simple(name, "MatMul", {"a": a, "b": b}, np.matmul(*f64(a, b)).astype(np.float32), atol=1e-5)
    a16, b16 = uni((3, 8), dtype=np.float16), uni((8, 2), dtype=np.float16)
    yield simple("MatMul_f16", "MatMul", {"a": a16, "b": b16}, np.matmul(*f64(a16, b16)).astype(np.float16), atol=5e-3,
                 rtol=5e-3)
    a64, b64 = uni((2, 3, 5), dtype=np.float64), uni((5, 4), dtype=np.float64)
    yield simple("MatMul_f64", "MatMul", {"a": a64, "b": b64}, a64 @ b64, atol=1e-12, rtol=1e-12)
    # integers: exact beyond float32's 2^24, and wrapping like numpy for narrow types
    ai = rng.integers(-3_000_000, 3_000_000, size=(3, 4)).astype(np.int64)
    bi = rng.integers(-3_000_000, 3_000_000, size=(4, 2)).astype(np.int64)
    c = simple("MatMul_i64_large", "MatMul", {"a": ai, "b": bi}, ai @ bi)
    c.cpu_only = "integer matmul is exact beyond 2^24 only on the CPU (float64 accumulation)"
    yield c
    a32, b32 = rng.integers(-1000, 1000, size=(2, 3, 5)).astype(np.int32), rng.integers(-1000, 1000, size=(5, 2)).astype(np.int32)
    yield simple("MatMul_i32_batched", "MatMul", {"a": a32, "b": b32}, a32 @ b32)
    au, bu = rng.integers(0, 256, size=(3, 6)).astype(np.uint8), rng.integers(0, 256, size=(6, 4)).astype(np.uint8)
    yield simple("MatMul_u8_wraps", "MatMul", {"a": au, "b": bu}, au @ bu)
    # non-contiguous operand
    a, b = uni((5, 3)), uni((5, 4))
    yield Case("MatMul_of_transpose", [node("Transpose", ["a"], ["t"], perm=IS([1, 0])), node("MatMul", ["t", "b"], ["y"])],
               {"a": a, "b": b}, {"y": (a.T.astype(np.float64) @ b).astype(np.float32)}, atol=1e-5)
    # x @ W^T for a weight param W [N, K]: float32 (the CPU's matvec kernel for at most 4 rows of x)
    # and float16 widened by a Cast (the kernel reads it as float16 for any rows: row by row up to
    # 4 rows, past that tiles of 64 rows of W widened for sgemm); K = 70 leaves a tail after the
    # 8- and 32-wide loops, N = 150 a partial tile
    w32, w16 = uni((150, 70)), uni((150, 70), dtype=np.float16)
    for xs in [(70,), (1, 70), (3, 70), (2, 2, 70), (9, 70), (2, 5, 70)]:
        x = uni(xs)
        tag = "x".join(map(str, xs))
        yield Case(f"MatMul_weight_t_{tag}", [node("Transpose", ["w"], ["t"], perm=IS([1, 0])), node("MatMul", ["x", "t"], ["y"])],
                   {"x": x}, {"y": (x.astype(np.float64) @ w32.T.astype(np.float64)).astype(np.float32)}, atol=1e-5, params={"w": w32})
        yield Case(f"MatMul_weight_f16_t_{tag}", [node("Cast", ["w"], ["w32"], to=DT("float32")), node("Transpose", ["w32"], ["t"], perm=IS([1, 0])),
                                                  node("MatMul", ["x", "t"], ["y"])],
                   {"x": x}, {"y": (x.astype(np.float64) @ w16.T.astype(np.float64)).astype(np.float32)}, atol=1e-5, params={"w": w16})
    # K = 128: on a GPU the CUDA kernel's 16-byte loads (up to 8 rows of x; 9 is MLX's product)
    w16k = uni((37, 128), dtype=np.float16)
    for xs in [(1, 128), (2, 3, 128), (8, 128), (9, 128)]:
        x = uni(xs)
        tag = "x".join(map(str, xs))
        yield Case(f"MatMul_weight_f16_k128_t_{tag}", [node("Cast", ["w"], ["w32"], to=DT("float32")), node("Transpose", ["w32"], ["t"], perm=IS([1, 0])),
                                                       node("MatMul", ["x", "t"], ["y"])],
                   {"x": x}, {"y": (x.astype(np.float64) @ w16k.T.astype(np.float64)).astype(np.float32)}, atol=1e-5, params={"w": w16k})
    # a non-contiguous x (a Transpose feeding the product; the kernel's task copies it), row by row
    # and in tiles
    for rows in (3, 9):
        xt = uni((70, rows))
        yield Case(f"MatMul_weight_f16_t_x_transposed_{rows}", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])),
                                                                 node("Cast", ["w"], ["w32"], to=DT("float32")),
                                                                 node("Transpose", ["w32"], ["t"], perm=IS([1, 0])), node("MatMul", ["x", "t"], ["y"])],
                   {"xt": xt}, {"y": (xt.T.astype(np.float64) @ w16.T.astype(np.float64)).astype(np.float32)}, atol=1e-5, params={"w": w16})
    yield err("MatMul_k_mismatch", "MatMul", {"a": uni((3, 4)), "b": uni((5, 2))})
    yield err("MatMul_batch_mismatch", "MatMul", {"a": uni((2, 3, 4)), "b": uni((3, 4, 2))})
    yield err("MatMul_dtype_mismatch", "MatMul", {"a": uni((3, 4)), "b": uni((4, 2), dtype=np.float64)})
    yield err("MatMul_rank0", "MatMul", {"a": np.float32(2), "b": uni((4, 2))})
    yield err("MatMul_bool", "MatMul", {"a": np.ones((2, 2), bool), "b": np.ones((2, 2), bool)})


def dot_general_cases():
    specs = [  # (lhs shape, rhs shape, lc, rc, lb, rb)
        ((3, 4), (4, 5), [1], [0], [], []),
        ((4, 3), (5, 4), [0], [1], [], []),
        ((2, 3, 4), (2, 4, 5), [2], [1], [0], [0]),
        ((3, 2, 4), (4, 5, 2), [2], [0], [1], [2]),
        ((2, 3, 4, 5), (5, 2, 4, 6), [2, 3], [2, 0], [0], [1]),
        ((2, 3, 6), (3, 2, 6), [2], [2], [0, 1], [1, 0]),
        ((3, 4), (5, 6), [], [], [], []),  # outer product
        ((4,), (4,), [0], [0], [], []),  # inner product, rank-0 result
    ]
    for k, (sa, sb, lc, rc, lb, rb) in enumerate(specs):
        a, b = uni(sa), uni(sb)
        yield simple(f"DotGeneral_{k}", "DotGeneral", {"a": a, "b": b},
                     dot_general_ref(a, b, lc, rc, lb, rb).astype(np.float32), atol=1e-5,
                     lhs_contracting=IS(lc), rhs_contracting=IS(rc), lhs_batch=IS(lb), rhs_batch=IS(rb))
    a, b = uni((2, 3, 4)), uni((2, 4, 5))
    yield simple("DotGeneral_negative_dims", "DotGeneral", {"a": a, "b": b},
                 dot_general_ref(a, b, [2], [1], [0], [0]).astype(np.float32), atol=1e-5,
                 lhs_contracting=IS([-1]), rhs_contracting=IS([-2]), lhs_batch=IS([-3]), rhs_batch=IS([0]))
    ai, bi = rng.integers(-50, 50, size=(2, 3, 4)).astype(np.int32), rng.integers(-50, 50, size=(4, 2, 5)).astype(np.int32)
    yield simple("DotGeneral_i32", "DotGeneral", {"a": ai, "b": bi},
                 dot_general_ref(ai, bi, [2], [0], [0], [1]).astype(np.int32),
                 lhs_contracting=IS([2]), rhs_contracting=IS([0]), lhs_batch=IS([0]), rhs_batch=IS([1]))
    a, b = uni((2, 3, 4)), uni((2, 4, 5))
    yield err("DotGeneral_size_mismatch", "DotGeneral", {"a": a, "b": b}, lhs_contracting=IS([1]), rhs_contracting=IS([1]))
    yield err("DotGeneral_count_mismatch", "DotGeneral", {"a": a, "b": b}, lhs_contracting=IS([2]),
              rhs_contracting=IS([1, 2]))
    yield err("DotGeneral_dim_twice", "DotGeneral", {"a": a, "b": b}, lhs_contracting=IS([2, 2]),
              rhs_contracting=IS([1, 1]))
    yield err("DotGeneral_out_of_range", "DotGeneral", {"a": a, "b": b}, "OUT_OF_RANGE", lhs_contracting=IS([3]),
              rhs_contracting=IS([1]))


def variant_cases():
    x, w, bias = uni((2, 3, 8)), uni((8, 5)), uni((5,))
    for act, fn in ACTS.items():
        ref = fn(np.matmul(*f64(x, w)) + bias)
        yield simple(f"FusedMatMulBiasAct_{act}", "FusedMatMulBiasAct", {"x": x, "w": w, "b": bias},
                     ref.astype(np.float32), atol=2e-5, rtol=2e-5, activation=S(act))
    # rows enough for rlx's CPU bias + activation kernel to split them over threads, and long enough for its
    # 8- and 16-wide SLEEF activations (200 columns: whole vectors and a tail)
    xl, wl, bl = uni((4, 64, 96)), uni((96, 200)), uni((200,))
    for act in ["Gelu", "GeluApprox", "Silu", "Sigmoid", "Tanh"]:
        yield simple(f"FusedMatMulBiasAct_{act}_large", "FusedMatMulBiasAct", {"x": xl, "w": wl, "b": bl},
                     ACTS[act](np.matmul(*f64(xl, wl)) + bl).astype(np.float32), atol=1e-4, rtol=1e-4, activation=S(act))
    yield simple("FusedMatMulBiasAct_nobias_1d", "FusedMatMulBiasAct", {"x": x[0, 0], "w": w},
                 np.tanh(np.matmul(*f64(x[0, 0], w))).astype(np.float32), atol=2e-5, activation=S("Tanh"))
    yield err("FusedMatMulBiasAct_bad_act", "FusedMatMulBiasAct", {"x": x, "w": w}, activation=S("Median"))
    yield err("FusedMatMulBiasAct_not_float_act", "FusedMatMulBiasAct", {"x": x, "w": w}, activation=S("IsNaN"))
    yield err("FusedMatMulBiasAct_bias_shape", "FusedMatMulBiasAct", {"x": x, "w": w, "b": uni((4,))})
    # LoRA
    A, B = uni((8, 2)), uni((2, 5))
    for scale in [1.0, 0.25]:
        ref = np.matmul(*f64(x, w)) + scale * (np.matmul(*f64(x, A)) @ B)
        yield simple(f"LoraMatMul_{scale}", "LoraMatMul", {"x": x, "w": w, "a": A, "b": B}, ref.astype(np.float32),
                     atol=2e-5, scale=F(scale))
    yield err("LoraMatMul_rank_mismatch", "LoraMatMul", {"x": x, "w": w, "a": A, "b": uni((3, 5))})
    # grouped (MoE-style) matmul: row m uses expert idx[m]; negative indices count from the end
    xg, wg = uni((6, 8)), uni((3, 8, 4))
    for dt in [np.int32, np.int64, np.uint32]:
        idx = np.array([0, 2, 1, 1, 0, 2], dt)
        ref = np.stack([xg[m].astype(np.float64) @ wg[int(idx[m])] for m in range(6)])
        yield simple(f"GroupedMatMul_{np.dtype(dt).name}", "GroupedMatMul", {"x": xg, "w": wg, "idx": idx},
                     ref.astype(np.float32), atol=1e-5)
    idx = np.array([-1, 0, -3, 2, -2, 1], np.int64)
    ref = np.stack([xg[m].astype(np.float64) @ wg[idx[m]] for m in range(6)])
    yield simple("GroupedMatMul_negative_idx", "GroupedMatMul", {"x": xg, "w": wg, "idx": idx}, ref.astype(np.float32),
                 atol=1e-5)
    yield err("GroupedMatMul_float_idx", "GroupedMatMul", {"x": xg, "w": wg, "idx": np.zeros(6, np.float32)})
    yield err("GroupedMatMul_k_mismatch", "GroupedMatMul", {"x": xg, "w": uni((3, 7, 4)), "idx": np.zeros(6, np.int32)})


def packed_cases():
    """A constant or param right operand (or its transpose): on the CPU the executable packs it once
    into the GEMM kernel's panels (exec_layout.c), bias and activation in the kernel where it has
    them: ragged rows / panels / K slices, rank-1 and rank-4 left operands."""
    for sa, sb in [((130, 70), (70, 150)), ((2, 3, 40, 300), (300, 33)), ((5, 260), (260, 16)), ((7,), (7, 20)),
                   ((200, 16), (16, 1)), ((13, 600), (600, 40))]:
        a, b = uni(sa), uni(sb)
        name = "MatMul_const_" + "x".join(map(str, sa)) + "_" + "x".join(map(str, sb))
        yield Case(name, [node("MatMul", ["a", "b"], ["y"])], {"a": a}, {"y": np.matmul(*f64(a, b)).astype(np.float32)},
                   atol=1e-4, constants={"b": b})
    # a wide product (a tied LM head's shape, smaller): with 2-4 threads a tile's block of C (130 x
    # 2500+ columns) outgrows L2 while its rows of A fit, and the kernel sweeps it panel by panel
    # through both K slices (kernel_gemm.cpp block)
    a, b = uni((130, 300)), uni((300, 20000))
    yield Case("MatMul_const_wide_130x300_300x20000", [node("MatMul", ["a", "b"], ["y"])], {"a": a},
               {"y": np.matmul(*f64(a, b)).astype(np.float32)}, atol=1e-4, constants={"b": b})
    a, b = uni((37, 50)), uni((50, 29))
    yield Case("MatMul_param_37x50_50x29", [node("MatMul", ["a", "b"], ["y"])], {"a": a},
               {"y": np.matmul(*f64(a, b)).astype(np.float32)}, atol=1e-4, params={"b": b})
    a, w = uni((6, 45)), uni((23, 45))
    yield Case("MatMul_const_transposed", [node("Transpose", ["w"], ["wt"], perm=IS([1, 0])), node("MatMul", ["a", "wt"], ["y"])],
               {"a": a}, {"y": (a.astype(np.float64) @ w.T).astype(np.float32)}, atol=1e-4, constants={"w": w})
    x, w, bias = uni((2, 9, 70)), uni((70, 21)), uni((21,))
    for act, fn in ACTS.items():
        yield Case(f"FusedMatMulBiasAct_const_{act}", [node("FusedMatMulBiasAct", ["x", "w", "b"], ["y"], activation=S(act))],
                   {"x": x}, {"y": fn(np.matmul(*f64(x, w)) + bias).astype(np.float32)}, atol=1e-4, rtol=1e-4,
                   constants={"w": w, "b": bias})
    # few rows: a weight as stored is packed for any rows (an LSTM step's products), a transposed one
    # too for FusedMatMulBiasAct (MatMul's take the matvec kernel)
    x1 = uni((1, 1, 70))
    yield Case("FusedMatMulBiasAct_const_1row", [node("FusedMatMulBiasAct", ["x", "w", "b"], ["y"], activation=S("Relu"))],
               {"x": x1}, {"y": np.maximum(np.matmul(*f64(x1, w)) + bias, 0).astype(np.float32)}, atol=1e-4, rtol=1e-4,
               constants={"w": w, "b": bias})
    x3, wt, b23 = uni((3, 45)), uni((23, 45)), uni((23,))
    yield Case("FusedMatMulBiasAct_const_transposed_3rows", [node("Transpose", ["w"], ["wt"], perm=IS([1, 0])),
                                                             node("FusedMatMulBiasAct", ["x", "wt", "b"], ["y"])],
               {"x": x3}, {"y": (x3.astype(np.float64) @ wt.T.astype(np.float64) + b23).astype(np.float32)}, atol=1e-4,
               constants={"w": wt, "b": b23})


def cases():
    yield from matmul_cases()
    yield from dot_general_cases()
    yield from variant_cases()
    yield from packed_cases()
