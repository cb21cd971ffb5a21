"""Elementwise ops against numpy: the unary set, binary arithmetic and compares (NumPy
broadcasting), Where, Cast, ElementwiseRegion. Edge shapes: rank 0, size-1 and broadcast dims,
and operands made non-contiguous by a Transpose."""
import math

import numpy as np

from nn_ref import erf, gelu, gelu_tanh, sigmoid, silu
from opcase import DT, IS, Case, F, I, S, node, simple

rng = np.random.default_rng(1234)


# op -> (oracle on float64, input domain)
UNARY = {
    "Abs": (np.abs, (-3, 3)), "Neg": (np.negative, (-3, 3)), "Exp": (np.exp, (-3, 3)), "Log": (np.log, (0.1, 5)),
    "Sqrt": (np.sqrt, (0.0, 5)), "Rsqrt": (lambda x: 1 / np.sqrt(x), (0.1, 5)), "Sin": (np.sin, (-3, 3)),
    "Cos": (np.cos, (-3, 3)), "Tan": (np.tan, (-1.2, 1.2)), "Asin": (np.arcsin, (-0.99, 0.99)),
    "Acos": (np.arccos, (-0.99, 0.99)), "Atan": (np.arctan, (-3, 3)), "Sinh": (np.sinh, (-3, 3)),
    "Cosh": (np.cosh, (-3, 3)), "Tanh": (np.tanh, (-3, 3)), "Asinh": (np.arcsinh, (-3, 3)),
    "Acosh": (np.arccosh, (1.01, 5)), "Atanh": (np.arctanh, (-0.99, 0.99)), "Sigmoid": (sigmoid, (-6, 6)),
    "Relu": (lambda x: np.maximum(x, 0), (-3, 3)), "Gelu": (gelu, (-4, 4)),
    "GeluApprox": (gelu_tanh, (-4, 4)), "Silu": (silu, (-6, 6)), "Floor": (np.floor, (-3, 3)),
    "Ceil": (np.ceil, (-3, 3)), "Sign": (np.sign, (-3, 3)), "Reciprocal": (lambda x: 1 / x, (0.5, 3)),
    "Erf": (erf, (-3, 3)), "Softplus": (lambda x: np.log1p(np.exp(x)), (-5, 5)),
    "HardSwish": (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), (-5, 5)),
    "HardSigmoid": (lambda x: np.clip(0.2 * x + 0.5, 0, 1), (-4, 4)),
}

BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Max": np.maximum, "Min": np.minimum,
}
COMPARE = {"Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessOrEqual": np.less_equal,
           "Greater": np.greater, "GreaterOrEqual": np.greater_equal}


def uni(lo, hi, shape, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def cases():
    # every unary op, float32, several shapes (rank 0, 1, 3)
    for op, (fn, (lo, hi)) in UNARY.items():
        for shape in [(), (7,), (2, 3, 4)]:
            x = uni(lo, hi, shape)
            yield simple(f"{op}_f32_{len(shape)}d", op, {"x": x}, fn(x.astype(np.float64)).astype(np.float32),
                         atol=2e-6, rtol=2e-5)
    # float16 and bfloat16-free dtype coverage: f16 and f64
    for op in ["Exp", "Tanh", "Gelu", "Sigmoid", "Sqrt"]:
        fn, (lo, hi) = UNARY[op]
        x16 = uni(lo, hi, (3, 5), np.float16)
        yield simple(f"{op}_f16", op, {"x": x16}, fn(x16.astype(np.float64)).astype(np.float16), atol=2e-3, rtol=2e-3)
        x64 = uni(lo, hi, (3, 5), np.float64)
        # MLX's CPU transcendental kernels evaluate float64 at about float32 precision.
        yield simple(f"{op}_f64", op, {"x": x64}, fn(x64), atol=1e-6, rtol=1e-6)
    # the exp family through rlx's CPU kernels (SLEEF, split over threads): many elements with a
    # ragged end, extreme values (overflow to inf, underflow to 0, saturation), inf and nan
    edge = np.array([0, 1e-30, -1e-30, 88.5, 89, -87, -104, 200, -200, np.inf, -np.inf, np.nan], np.float32)
    for op in ["Exp", "Log", "Tanh", "Erf", "Sigmoid", "Silu", "Gelu", "GeluApprox"]:
        fn, (lo, hi) = UNARY[op]
        x = uni(lo, hi, (3, 40001))
        if op != "Log":
            x[0, :edge.size] = edge
        with np.errstate(all="ignore"):
            ref = fn(x.astype(np.float64)).astype(np.float32)
        yield simple(f"{op}_f32_large", op, {"x": x}, ref, atol=2e-6, rtol=2e-5)
    # rlx's own erf (kernel_exp.cpp, scripts/fit_erf.py) within 2 ulp of 1 everywhere, and Gelu's
    # negative tail to 2e-5 relative (erfc there, not 1 + erf, which would cancel to 0 or noise);
    # rows of 4099 take the 16-, 8/4-lane and scalar paths
    x = np.concatenate([np.linspace(-7, 7, 8197), uni(-1.2, 1.2, 4100)]).astype(np.float32).reshape(3, 4099)
    yield simple("Erf_f32_tight", "Erf", {"x": x}, erf(x.astype(np.float64)).astype(np.float32), atol=1.5e-7, rtol=0)
    x = np.concatenate([np.linspace(-13, -1, 8197), np.linspace(-1, 6, 4100)]).astype(np.float32).reshape(3, 4099)
    x64 = x.astype(np.float64)  # oracle: x/2 erfc(-x / sqrt 2), exact in the tail where float64's 1 + erf cancels
    ref = (0.5 * x64 * np.vectorize(math.erfc)(-x64 / np.sqrt(2))).astype(np.float32)
    tail = simple("Gelu_f32_tail", "Gelu", {"x": x}, ref, atol=1e-38, rtol=2e-5)
    tail.cpu_only = "rlx's CPU kernel takes erfc in the tail; on a GPU Gelu is MLX's x/2 (1 + erf(x / sqrt 2))"
    yield tail
    # ... which on a GPU cancels in the tail, as PyTorch's and ONNX Runtime's: within 1.22e-7 absolute
    # there (H100, 2026-12-07)
    tail = simple("Gelu_f32_tail_gpu", "Gelu", {"x": x}, ref, atol=2e-7, rtol=2e-5)
    tail.gpu_only = "MLX's Gelu on a GPU; the CPU's bound is Gelu_f32_tail's"
    yield tail
    # Round: ties to even (numpy.round / ONNX Round)
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 3.7], np.float32)
    yield simple("Round_ties_even", "Round", {"x": x}, np.round(x))
    # integer unary
    xi = rng.integers(-50, 50, size=(4, 5)).astype(np.int32)
    yield simple("Abs_i32", "Abs", {"x": xi}, np.abs(xi))
    yield simple("Neg_i64", "Neg", {"x": xi.astype(np.int64)}, -xi.astype(np.int64))
    yield simple("Relu_i32", "Relu", {"x": xi}, np.maximum(xi, 0))
    yield simple("BitwiseNot_u8", "BitwiseNot", {"x": xi.astype(np.uint8)}, np.invert(xi.astype(np.uint8)))
    b = rng.integers(0, 2, size=(3, 4)).astype(bool)
    yield simple("Not", "Not", {"x": b}, np.logical_not(b))
    xs = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    yield simple("IsNaN", "IsNaN", {"x": xs}, np.isnan(xs))
    yield simple("IsInf", "IsInf", {"x": xs}, np.isinf(xs))
    yield simple("IsInf_pos", "IsInf", {"x": xs}, np.isposinf(xs), detect_negative=I(0))
    x = uni(-5, 5, (3, 8))
    yield simple("HardSigmoid_alpha_beta", "HardSigmoid", {"x": x}, np.clip(0.3 * x.astype(np.float64) - 0.1, 0, 1).astype(np.float32),
                 atol=2e-6, rtol=2e-5, alpha=F(0.3), beta=F(-0.1))
    # binary with broadcasting, including rank 0 and size-1 dims
    shapes = [((2, 3), (2, 3)), ((2, 1, 4), (3, 1)), ((), (3, 2)), ((5,), ()), ((1,), (4, 1))]
    for op, fn in BINARY.items():
        for sa, sb in shapes:
            a = uni(-3, 3, sa)
            bb = uni(0.5, 3, sb) if op == "Div" else uni(-3, 3, sb)
            yield simple(f"{op}_{len(sa)}x{len(sb)}", op, {"a": a, "b": bb}, fn(a, bb).astype(np.float32))
    a, c = uni(0.5, 2, (3, 4)), uni(-2, 2, (4,))
    yield simple("Pow", "Pow", {"a": a, "b": c}, np.power(a, c), rtol=2e-5)
    # a constant exponent of 2 (lowered as x x; Silero VAD's STFT magnitude)
    for edt in (np.float32, np.float64):
        x = uni(-3, 3, (3, 5)).astype(edt)
        yield Case(f"Pow_constant_2_{np.dtype(edt).name}", [node("Pow", ["x", "two"], ["y"])], {"x": x},
                   {"y": np.square(x.astype(np.float64)).astype(edt)}, constants={"two": np.array(2, edt)}, rtol=1e-6)
    for op, fn in COMPARE.items():
        a = rng.integers(-2, 3, size=(3, 4)).astype(np.float32)
        bb = rng.integers(-2, 3, size=(4,)).astype(np.float32)
        yield simple(f"{op}", op, {"a": a, "b": bb}, fn(a, bb))
        ai, bi = a.astype(np.int64), bb.astype(np.int64)
        yield simple(f"{op}_i64", op, {"a": ai, "b": bi}, fn(ai, bi))
    # integer division truncates toward zero, Mod follows the divisor's sign (fmod=0) or not
    ai = np.array([7, -7, 7, -7, 9, -9, 0], np.int32)
    bi = np.array([2, 2, -2, -2, 4, 4, 3], np.int32)
    yield simple("Div_i32_trunc", "Div", {"a": ai, "b": bi}, (np.trunc(ai / bi)).astype(np.int32))
    yield simple("Mod_i32", "Mod", {"a": ai, "b": bi}, np.mod(ai, bi))
    yield simple("Mod_i32_fmod", "Mod", {"a": ai, "b": bi}, np.fmod(ai, bi), fmod=I(1))
    af, bf = uni(-5, 5, (6,)), uni(0.5, 2, (6,)) * np.array([1, -1, 1, -1, 1, -1], np.float32)
    yield simple("Mod_f32_fmod", "Mod", {"a": af, "b": bf}, np.fmod(af, bf), fmod=I(1), atol=1e-5)
    yield simple("Mod_f32", "Mod", {"a": af, "b": bf}, np.mod(af, bf), atol=1e-5)
    bl, br = rng.integers(0, 2, size=(2, 3)).astype(bool), rng.integers(0, 2, size=(3,)).astype(bool)
    yield simple("And", "And", {"a": bl, "b": br}, np.logical_and(bl, br))
    yield simple("Or", "Or", {"a": bl, "b": br}, np.logical_or(bl, br))
    yield simple("Xor", "Xor", {"a": bl, "b": br}, np.logical_xor(bl, br))
    ua, ub = rng.integers(0, 255, size=(6,)).astype(np.uint8), rng.integers(0, 4, size=(6,)).astype(np.uint8)
    yield simple("BitwiseAnd", "BitwiseAnd", {"a": ua, "b": ub}, np.bitwise_and(ua, ub))
    yield simple("BitwiseXor", "BitwiseXor", {"a": ua, "b": ub}, np.bitwise_xor(ua, ub))
    u32a, u32b = ua.astype(np.uint32), ub.astype(np.uint32)
    yield simple("BitShift_left", "BitShift", {"a": u32a, "b": u32b}, np.left_shift(u32a, u32b), direction=S("left"))
    yield simple("BitShift_right", "BitShift", {"a": u32a, "b": u32b}, np.right_shift(u32a, u32b), direction=S("right"))
    # Where: three-way broadcast
    cond = rng.integers(0, 2, size=(2, 1, 4)).astype(bool)
    x, y = uni(-1, 1, (3, 4)), uni(-1, 1, (2, 3, 1))
    yield simple("Where_bcast", "Where", {"c": cond, "x": x, "y": y}, np.where(cond, x, y))
    # Cast: float -> int truncates, -> bool is != 0, f32 <-> f16 <-> bf16-free round trips
    xf = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 100.9], np.float32)
    yield simple("Cast_f32_i32", "Cast", {"x": xf}, xf.astype(np.int32), to=DT("int32"))
    yield simple("Cast_f32_bool", "Cast", {"x": xf}, xf != 0, to=DT("bool"))
    yield simple("Cast_f32_f16", "Cast", {"x": xf}, xf.astype(np.float16), to=DT("float16"))
    yield simple("Cast_i64_f64", "Cast", {"x": xi.astype(np.int64)}, xi.astype(np.float64), to=DT("float64"))
    yield simple("Cast_bool_f32", "Cast", {"x": b}, b.astype(np.float32), to=DT("float32"))
    # non-contiguous operand: Transpose feeding an elementwise op
    x = uni(-3, 3, (3, 4))
    yield Case("Exp_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Exp", ["t"], ["y"])],
               {"x": x}, {"y": np.exp(x.T)}, atol=1e-6, rtol=2e-6)
    a, bb = uni(-3, 3, (3, 4)), uni(-3, 3, (4, 3))
    yield Case("Add_transposed_operands",
               [node("Transpose", ["a"], ["t"], perm=IS([1, 0])), node("Add", ["t", "b"], ["y"])],
               {"a": a, "b": bb}, {"y": a.T + bb})
    # ElementwiseRegion: y = where(x > 0, silu(x) * b, cast(x, f32) - b)
    chain = [0, op_id("Silu"), 0, 0, 0,          # s0 = silu(x)
             2, op_id("Mul"), -1, 1, 0,          # s1 = s0 * b
             2, op_id("Greater"), 0, 2, 0,       # s2 = x > zero
             2, op_id("Sub"), 0, 1, 0,           # s3 = x - b
             3, 0, -3, -2, -4]                   # s4 = where(s2, s1, s3)
    x, bb, z = uni(-2, 2, (4, 5)), uni(-2, 2, (5,)), np.zeros((), np.float32)
    ref = np.where(x > 0, x * sigmoid(x) * bb, x - bb)
    yield Case("ElementwiseRegion", [node("ElementwiseRegion", ["x", "b", "z"], ["y"], chain=IS(chain))],
               {"x": x, "b": bb, "z": z}, {"y": ref.astype(np.float32)}, atol=2e-6)
    # errors: dtype mismatch, non-broadcastable shapes, bad chain reference
    yield Case("Add_dtype_mismatch", [node("Add", ["a", "b"], ["y"])], {"a": uni(0, 1, (2,)), "b": xi[0, :2]},
               {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("Add_shape_mismatch", [node("Add", ["a", "b"], ["y"])], {"a": uni(0, 1, (2, 3)), "b": uni(0, 1, (4,))},
               {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("Region_bad_ref", [node("ElementwiseRegion", ["x"], ["y"], chain=IS([0, op_id("Exp"), -5, 0, 0]))],
               {"x": uni(0, 1, (2,))}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


_OPS = None


def op_id(name):
    """The rlx_op enum value of an op name, read from include/rlx/op_table.h (row order)."""
    global _OPS
    if _OPS is None:
        import os
        import re
        here = os.path.dirname(os.path.abspath(__file__))
        text = open(os.path.join(here, "..", "..", "..", "include", "rlx", "op_table.h")).read()
        _OPS = re.findall(r'^\s*X\(\w+,\s*"(\w+)"', text, re.M)
    return _OPS.index(name)
