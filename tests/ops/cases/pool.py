"""Pool (max, min, sum, mean, prod) against the numpy loop reference of cases/conv.py (float64),
cross-checked with onnx.reference MaxPool / AveragePool: 1D/2D/3D, strides, asymmetric pads,
dilation, count_include_pad both ways, ceil_mode (with its overhang), integer pooling at the
dtype's limits, float16/float64, a global window, a non-contiguous input and bad attributes."""
import numpy as np

from cases.conv import err, onnx_ref, pool_ref
from opcase import IS, Case, I, S, node, simple

rng = np.random.default_rng(9)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def pool_case(name, x, kind, kernel, atol=1e-5, rtol=1e-5, **a):
    ref = pool_ref(x, kind, kernel, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("count_include_pad", 0),
                   a.get("ceil_mode", 0))
    onnx_op = {"max": "MaxPool", "mean": "AveragePool"}.get(kind)
    if onnx_op and x.dtype == np.float32 and not (onnx_op == "MaxPool" and "count_include_pad" in a):
        np.testing.assert_allclose(onnx_ref(onnx_op, {"x": x}, kernel_shape=kernel, **a), ref, rtol=1e-5, atol=1e-6)
    attrs = {k: (I(v) if k in ("count_include_pad", "ceil_mode") else IS(v)) for k, v in a.items()}
    return simple(name, "Pool", {"x": x}, ref.astype(x.dtype), atol=atol, rtol=rtol, kind=S(kind),
                  kernel_shape=IS(kernel), **attrs)


def cases():
    x2 = uni((2, 3, 7, 8))
    for kind in ["max", "min", "sum", "mean", "prod"]:
        xs = uni((2, 3, 7, 8), 0.5, 1.5) if kind == "prod" else x2
        yield pool_case(f"Pool2d_{kind}", xs, kind, [3, 2], strides=[2, 2])
        yield pool_case(f"Pool2d_{kind}_pads_dil", xs, kind, [2, 3], strides=[1, 2], pads=[1, 2, 1, 0], dilations=[2, 1])
        yield pool_case(f"Pool2d_{kind}_ceil", xs, kind, [3, 3], strides=[2, 3], pads=[1, 1, 0, 1], ceil_mode=1)
        yield pool_case(f"Pool1d_{kind}", uni((1, 2, 11), 0.5, 1.5), kind, [3], strides=[2], pads=[1, 1])
        yield pool_case(f"Pool3d_{kind}", uni((1, 2, 5, 4, 6), 0.5, 1.5), kind, [2, 2, 3], strides=[2, 1, 2],
                        pads=[1, 0, 1, 0, 1, 1], dilations=[1, 2, 1], ceil_mode=1)
    for inc in [0, 1]:
        yield pool_case(f"Pool2d_mean_pads_include{inc}", x2, "mean", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                        count_include_pad=inc)
        yield pool_case(f"Pool2d_mean_ceil_include{inc}", x2, "mean", [3, 2], strides=[3, 3], pads=[0, 1, 1, 0],
                        ceil_mode=1, count_include_pad=inc)
        yield pool_case(f"Pool3d_mean_dil_include{inc}", uni((1, 1, 6, 5, 5)), "mean", [2, 3, 2], strides=[2, 2, 1],
                        pads=[1, 1, 0, 0, 1, 1], dilations=[2, 1, 2], ceil_mode=1, count_include_pad=inc)
    # integers at the limits of their dtype: pads must not leak the neutral value
    xi = rng.integers(-2 ** 62, 2 ** 62, size=(1, 2, 5, 5), dtype=np.int64)
    xi[0, 0, 0, 0], xi[0, 1, 4, 4] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    yield pool_case("Pool2d_max_i64_limits", xi, "max", [2, 2], pads=[1, 1, 1, 1])
    yield pool_case("Pool2d_min_i64_limits", xi, "min", [2, 2], pads=[1, 1, 1, 1])
    xu = rng.integers(0, 256, size=(1, 2, 6, 6), dtype=np.uint8)
    xu[0, 0, 0, 0] = 255
    yield pool_case("Pool2d_min_u8_pads", xu, "min", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    yield pool_case("Pool2d_max_u8_ceil", xu, "max", [3, 3], strides=[2, 2], ceil_mode=1)
    yield pool_case("Pool2d_sum_i32", rng.integers(-9, 9, size=(1, 2, 5, 5)).astype(np.int32), "sum", [2, 2],
                    pads=[0, 1, 1, 0])
    yield pool_case("Pool2d_mean_f16", uni((1, 2, 6, 6), dtype=np.float16), "mean", [2, 2], strides=[2, 2], atol=2e-3,
                    rtol=2e-3)
    yield pool_case("Pool2d_max_f64", uni((1, 2, 6, 5), dtype=np.float64), "max", [3, 2], pads=[1, 0, 1, 1])
    # shapes from real networks, large enough for rlx's CPU kernel to split rows over threads
    yield pool_case("Pool2d_mean_k3x2_s3x2_batch", uni((2, 16, 9, 40)), "mean", [3, 2], strides=[3, 2])
    yield pool_case("Pool2d_max_k3_s2_p1", uni((1, 8, 23, 31)), "max", [3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    # stride 2 along rows of 8 outputs and more (the kernel's vector path), its last tap reading the
    # row's last column; with a dilation and pads
    yield pool_case("Pool2d_max_k2_s2_wide_ceil", uni((1, 3, 6, 61)), "max", [2, 2], strides=[2, 2], ceil_mode=1)
    yield pool_case("Pool2d_min_k2_s2_dil_pads", uni((1, 2, 7, 44)), "min", [2, 3], strides=[2, 2], pads=[1, 2, 0, 1],
                    dilations=[1, 2])
    yield pool_case("Pool2d_max_f16_ceil", uni((1, 3, 9, 11), dtype=np.float16), "max", [2, 3], strides=[2, 2],
                    ceil_mode=1, atol=1e-3, rtol=1e-3)
    # kernels of more than 64 taps reduce a window view (not one slice per tap)
    yield pool_case("Pool1d_sum_i32_long_window", rng.integers(-9, 9, size=(1, 2, 130)).astype(np.int32), "sum", [80], strides=[2])
    yield pool_case("Pool1d_max_i32_long_window_pads", rng.integers(-9, 9, size=(2, 1, 100)).astype(np.int32), "max", [70],
                    strides=[3], pads=[5, 2])
    yield pool_case("Pool3d_mean_long_window", uni((1, 2, 3, 4, 70)), "mean", [2, 1, 66], strides=[1, 2, 3],
                    pads=[1, 0, 2, 1, 0, 1])
    # a window of the whole input (global pooling) and a non-contiguous input
    yield pool_case("Pool2d_global_mean", x2, "mean", [7, 8])
    xt = uni((1, 6, 5, 2))
    ref = pool_ref(xt.transpose(0, 3, 1, 2), "max", [2, 2], [1, 1], [0, 0, 1, 1])
    yield Case("Pool2d_max_of_transpose",
               [node("Transpose", ["x"], ["t"], perm=IS([0, 3, 1, 2])),
                node("Pool", ["t"], ["y"], kind=S("max"), kernel_shape=IS([2, 2]), pads=IS([0, 0, 1, 1]))],
               {"x": xt}, {"y": ref.astype(np.float32)})
    x1 = uni((1, 2, 5, 5))
    yield err("Pool_bad_kind", "Pool", {"x": x1}, kind=S("median"), kernel_shape=IS([2, 2]))
    yield err("Pool_pads_ge_window", "Pool", {"x": x1}, kind=S("max"), kernel_shape=IS([2, 2]), pads=IS([2, 0, 0, 0]))
    yield err("Pool_window_too_big", "Pool", {"x": x1}, kind=S("max"), kernel_shape=IS([6, 2]))
    yield err("Pool_kernel_rank", "Pool", {"x": x1}, kind=S("max"), kernel_shape=IS([2]))
    yield err("Pool_mean_int", "Pool", {"x": np.ones((1, 1, 4, 4), np.int32)}, kind=S("mean"), kernel_shape=IS([2, 2]))
    yield err("Pool_bool", "Pool", {"x": np.ones((1, 1, 4, 4), bool)}, kind=S("max"), kernel_shape=IS([2, 2]))
