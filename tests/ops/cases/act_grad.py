"""ReluBackward and ActivationBackward against closed-form derivatives (float64), each closed form
checked here against central finite differences of the forward activation. Round uses the
straight-through estimator (f' = 1); Sqrt and Rsqrt give 0 where x <= 0. Covers rank 0/1/3,
float16/float64, a broadcast-free shape check, non-contiguous inputs and bad kinds/shapes."""
import numpy as np

from nn_ref import erf, fd_elementwise, gelu, gelu_tanh, sigmoid, silu
from opcase import IS, Case, S, node, simple

rng = np.random.default_rng(5)

K, A = np.sqrt(2 / np.pi), 0.044715


def gelu_tanh_grad(x):
    t = np.tanh(K * (x + A * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t ** 2) * K * (1 + 3 * A * x ** 2)


def pos(f):
    """f where x > 0, else 0 (the Sqrt/Rsqrt convention)."""
    return lambda x: np.where(x > 0, f(np.where(x > 0, x, 1.0)), 0.0)


# kind: (forward, closed-form derivative, domain)
KINDS = {
    "Gelu": (gelu,
             lambda x: 0.5 * (1 + erf(x / np.sqrt(2))) + x * np.exp(-x ** 2 / 2) / np.sqrt(2 * np.pi), (-4, 4)),
    "GeluApprox": (gelu_tanh, gelu_tanh_grad, (-4, 4)),
    "Silu": (silu, lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x))), (-6, 6)),
    "Relu": (lambda x: np.maximum(x, 0), lambda x: (x > 0).astype(np.float64), (-3, 3)),
    "Sigmoid": (sigmoid, lambda x: sigmoid(x) * (1 - sigmoid(x)), (-6, 6)),
    "Tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2, (-3, 3)),
    "Exp": (np.exp, np.exp, (-3, 3)),
    "Log": (np.log, lambda x: 1 / x, (0.2, 5)),
    "Sqrt": (np.sqrt, pos(lambda x: 0.5 / np.sqrt(x)), (0.1, 5)),
    "Rsqrt": (lambda x: 1 / np.sqrt(x), pos(lambda x: -0.5 * x ** -1.5), (0.2, 5)),
    "Neg": (np.negative, lambda x: -np.ones_like(x), (-3, 3)),
    "Abs": (np.abs, np.sign, (-3, 3)),
    "Sin": (np.sin, np.cos, (-3, 3)),
    "Cos": (np.cos, lambda x: -np.sin(x), (-3, 3)),
    "Tan": (np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.2, 1.2)),
    "Atan": (np.arctan, lambda x: 1 / (1 + x ** 2), (-3, 3)),
    "Round": (np.round, lambda x: np.ones_like(x), (-3, 3)),  # straight-through estimator
}


def sample(lo, hi, shape, dtype):
    """Points of the domain away from the kinks of Relu/Abs (0) and the steps of Round (k + 1/2)."""
    x = rng.uniform(lo, hi, size=shape)
    x = np.where(np.abs(x) < 0.05, x + 0.1, x)
    x = np.where(np.abs(x - np.round(x)) > 0.45, x + 0.1, x)
    return x.astype(dtype)


def checked_grad(kind, x):
    """The closed form, asserted against finite differences (Round: the STE, asserted against 1)."""
    f, df, _ = KINDS[kind]
    x = x.astype(np.float64)
    g = df(x)
    if kind != "Round":
        np.testing.assert_allclose(g, fd_elementwise(f, x), rtol=1e-5, atol=1e-6, err_msg=kind)
    return g


def cases():
    for kind, (_, _, (lo, hi)) in KINDS.items():
        for shape in [(), (7,), (2, 3, 4)]:
            x, dy = sample(lo, hi, shape, np.float32), rng.uniform(-2, 2, size=shape).astype(np.float32)
            ref = dy.astype(np.float64) * checked_grad(kind, x)
            yield simple(f"ActivationBackward_{kind}_{len(shape)}d", "ActivationBackward", {"x": x, "dy": dy},
                         ref.astype(np.float32), atol=2e-6, rtol=2e-5, kind=S(kind))
    for kind in ["Gelu", "GeluApprox", "Silu", "Tanh", "Sqrt"]:
        lo, hi = KINDS[kind][2]
        x64, dy64 = sample(lo, hi, (4, 5), np.float64), rng.uniform(-2, 2, size=(4, 5))
        yield simple(f"ActivationBackward_{kind}_f64", "ActivationBackward", {"x": x64, "dy": dy64},
                     dy64 * checked_grad(kind, x64), atol=1e-6, rtol=1e-6, kind=S(kind))
        x16, dy16 = sample(lo, hi, (4, 5), np.float16), rng.uniform(-2, 2, size=(4, 5)).astype(np.float16)
        yield simple(f"ActivationBackward_{kind}_f16", "ActivationBackward", {"x": x16, "dy": dy16},
                     (dy16.astype(np.float64) * checked_grad(kind, x16)).astype(np.float16), atol=5e-3, rtol=5e-3,
                     kind=S(kind))
    # Sqrt / Rsqrt at and below zero: the gradient is 0 there (not inf or nan)
    x = np.array([-2.0, -0.5, 0.0, 0.25, 4.0], np.float32)
    dy = np.ones(5, np.float32)
    yield simple("ActivationBackward_Sqrt_nonpositive", "ActivationBackward", {"x": x, "dy": dy},
                 np.array([0, 0, 0, 1.0, 0.25], np.float32), kind=S("Sqrt"))
    yield simple("ActivationBackward_Rsqrt_nonpositive", "ActivationBackward", {"x": x, "dy": dy},
                 np.array([0, 0, 0, -4.0, -1 / 16], np.float32), kind=S("Rsqrt"))
    # ReluBackward: dy where x > 0 (x == 0 gives 0), float and integer
    x = np.array([[-1.0, 0.0, 2.0], [3.0, -0.0, -4.0]], np.float32)
    dy = rng.uniform(-2, 2, size=(2, 3)).astype(np.float32)
    yield simple("ReluBackward", "ReluBackward", {"x": x, "dy": dy}, np.where(x > 0, dy, 0).astype(np.float32))
    xi, dyi = rng.integers(-3, 3, size=(4, 4)).astype(np.int32), rng.integers(-9, 9, size=(4, 4)).astype(np.int32)
    yield simple("ReluBackward_i32", "ReluBackward", {"x": xi, "dy": dyi}, np.where(xi > 0, dyi, 0).astype(np.int32))
    xs, dys = np.float32(1.5), np.float32(-2.0)
    yield simple("ReluBackward_scalar", "ReluBackward", {"x": xs, "dy": dys}, np.float32(-2.0))
    # non-contiguous inputs
    x, dy = sample(-3, 3, (3, 4), np.float32), rng.uniform(-2, 2, size=(4, 3)).astype(np.float32)
    ref = dy.T.astype(np.float64) * checked_grad("Silu", x)
    yield Case("ActivationBackward_of_transpose",
               [node("Transpose", ["dy"], ["t"], perm=IS([1, 0])), node("ActivationBackward", ["x", "t"], ["y"], kind=S("Silu"))],
               {"x": x, "dy": dy}, {"y": ref.astype(np.float32)}, atol=2e-6, rtol=2e-5)
    # errors
    x = np.ones((2, 3), np.float32)
    for name, ins, attrs in [
        ("ActivationBackward_bad_kind", {"x": x, "dy": x}, {"kind": S("Softplus")}),
        ("ActivationBackward_unknown_kind", {"x": x, "dy": x}, {"kind": S("Swish")}),
        ("ActivationBackward_shape", {"x": x, "dy": np.ones((3,), np.float32)}, {"kind": S("Tanh")}),
        ("ActivationBackward_int", {"x": x.astype(np.int32), "dy": x.astype(np.int32)}, {"kind": S("Relu")}),
        ("ActivationBackward_dtype", {"x": x, "dy": x.astype(np.float64)}, {"kind": S("Exp")}),
        ("ReluBackward_shape", {"x": x, "dy": np.ones((2, 1), np.float32)}, {}),
        ("ReluBackward_bool", {"x": x.astype(bool), "dy": x.astype(bool)}, {}),
    ]:
        op = "ReluBackward" if name.startswith("Relu") else "ActivationBackward"
        yield Case(name, [node(op, list(ins), ["y"], **attrs)], ins, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
