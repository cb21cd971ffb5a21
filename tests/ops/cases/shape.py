"""Shape and data-movement ops against numpy: Reshape (static and symbolic dims), Transpose, Narrow,
Slice (ONNX clamping, negative steps), Concat, Expand, Pad (constant/edge/reflect/wrap, negative
pads), Tile. Edge shapes: rank 0 and 1, size-0 and size-1 dims, non-contiguous inputs (a
Transpose feeding the op), plus error cases."""
import numpy as np

from opcase import IS, Case, F, I, S, error_case as err, node, simple, sym

rng = np.random.default_rng(2024)
# JSON numbers travel as doubles: 2**62 stands for "past any end"; -2**63 (INT64_MIN) is exact
INT64_MAX, INT64_MIN = 2**62, -(2**63)


def uni(*shape, dtype=np.float32):
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def transposed(name, op, x, expected, **attrs):
    """op applied to x.T made by a Transpose node (a non-contiguous operand)."""
    return Case(name, [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node(op, ["t"], ["y"], **attrs)], {"x": x}, {"y": expected})


def onnx_slice(x, starts, ends, axes=None, steps=None):
    """ONNX Slice through Python slicing, which clamps the same way."""
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        sl[a] = slice(s, e, st)
    return x[tuple(sl)]


def numpy_pad(x, pads, mode, value=0.0):
    r = x.ndim
    lo, hi = pads[:r], pads[r:]
    crop = tuple(slice(max(-a, 0), x.shape[i] - max(-b, 0)) for i, (a, b) in enumerate(zip(lo, hi)))
    x = x[crop]
    width = [(max(a, 0), max(b, 0)) for a, b in zip(lo, hi)]
    np_mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "wrap": "wrap"}[mode]
    if np_mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=np.asarray(value, x.dtype))
    return np.pad(x, width, mode=np_mode)


def reshape_cases():
    x = uni(2, 3, 4)
    yield simple("Reshape_3d_2d", "Reshape", {"x": x}, x.reshape(6, 4), shape=IS([6, 4]))
    yield simple("Reshape_to_rank0", "Reshape", {"x": np.array([[2.5]], np.float32)}, np.array(2.5, np.float32), shape=IS([]))
    yield simple("Reshape_from_rank0", "Reshape", {"x": np.array(7, np.int32)}, np.array(7, np.int32).reshape(1, 1, 1),
                 shape=IS([1, 1, 1]))
    yield simple("Reshape_empty", "Reshape", {"x": np.zeros((2, 0, 3), np.float32)}, np.zeros((0, 5), np.float32),
                 shape=IS([0, 5]))
    yield transposed("Reshape_of_transpose", "Reshape", x[0], x[0].T.reshape(2, 6), shape=IS([2, 6]))
    # symbolic dims: x is [s0, 6], reshaped to [s0, 2, 3]; bound to 4 at run time
    xs = uni(4, 6)
    yield Case("Reshape_symbolic", [node("Reshape", ["x"], ["y"], shape=IS([sym(0), 2, 3]))], {"x": xs},
               {"y": xs.reshape(4, 2, 3)}, dims={"x": [sym(0), 6]})
    yield Case("Reshape_symbolic_unit_dim", [node("Reshape", ["x"], ["y"], shape=IS([sym(0), sym(1), 1]))], {"x": xs},
               {"y": xs.reshape(4, 6, 1)}, dims={"x": [sym(0), sym(1)]})
    yield err("Reshape_count_mismatch", "Reshape", {"x": x}, "INVALID_ARGUMENT", shape=IS([5, 5]))
    yield err("Reshape_minus_one", "Reshape", {"x": x}, "INVALID_ARGUMENT", shape=IS([-1, 4]))


def transpose_cases():
    x = uni(2, 3, 4)
    for perm in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1]]:
        yield simple(f"Transpose_{''.join(map(str, perm))}", "Transpose", {"x": x}, x.transpose(perm), perm=IS(perm))
    yield simple("Transpose_default_reverses", "Transpose", {"x": x}, x.transpose(2, 1, 0))
    yield simple("Transpose_negative_perm", "Transpose", {"x": x}, x.transpose(2, 0, 1), perm=IS([-1, 0, 1]))
    yield simple("Transpose_rank1", "Transpose", {"x": x[0, 0]}, x[0, 0], perm=IS([0]))
    yield simple("Transpose_rank0", "Transpose", {"x": np.array(1.5, np.float32)}, np.array(1.5, np.float32))
    yield simple("Transpose_int64_size1", "Transpose", {"x": np.arange(6, dtype=np.int64).reshape(1, 6, 1)},
                 np.arange(6, dtype=np.int64).reshape(1, 6, 1).transpose(2, 0, 1), perm=IS([2, 0, 1]))
    yield err("Transpose_repeated_axis", "Transpose", {"x": x}, "INVALID_ARGUMENT", perm=IS([0, 0, 1]))
    yield err("Transpose_short_perm", "Transpose", {"x": x}, "INVALID_ARGUMENT", perm=IS([1, 0]))
    yield err("Transpose_axis_out_of_range", "Transpose", {"x": x}, "OUT_OF_RANGE", perm=IS([0, 1, 3]))


def narrow_cases():
    x = uni(4, 5, 6)
    yield simple("Narrow_axis0", "Narrow", {"x": x}, x[1:3], axis=I(0), start=I(1), length=I(2))
    yield simple("Narrow_axis_neg", "Narrow", {"x": x}, x[..., 2:6], axis=I(-1), start=I(2), length=I(4))
    yield simple("Narrow_empty", "Narrow", {"x": x}, x[:, 5:5], axis=I(1), start=I(5), length=I(0))
    yield simple("Narrow_full", "Narrow", {"x": x}, x, axis=I(2), start=I(0), length=I(6))
    xt = uni(5, 3)
    yield transposed("Narrow_of_transpose", "Narrow", xt, xt.T[:, 1:4], axis=I(1), start=I(1), length=I(3))
    yield err("Narrow_past_end", "Narrow", {"x": x}, "OUT_OF_RANGE", axis=I(0), start=I(3), length=I(2))
    yield err("Narrow_negative_start", "Narrow", {"x": x}, "OUT_OF_RANGE", axis=I(0), start=I(-1), length=I(1))
    yield err("Narrow_bad_axis", "Narrow", {"x": x}, "OUT_OF_RANGE", axis=I(3), start=I(0), length=I(1))


def slice_cases():
    x = uni(5, 6, 7)
    specs = [
        ("basic", [1, 0], [4, 3], None, None),
        ("steps", [0, 1], [5, 6], [0, 1], [2, 3]),
        ("negative_starts_ends", [-3], [-1], [2], None),
        ("clamp_past_end", [2, 0], [1000, INT64_MAX], [0, 1], None),
        ("clamp_before_start", [-1000], [3], [1], None),
        ("negative_step", [4], [0], [0], [-1]),
        ("negative_step_to_start", [-1], [INT64_MIN], [2], [-2]),
        ("negative_step_clamped_start", [100], [-100], [1], [-3]),
        ("two_negative_steps", [5, 6], [INT64_MIN, 1], [1, 2], [-2, -1]),
        ("empty_range", [3], [3], [0], None),
        ("empty_negative", [1], [3], [1], [-1]),
        ("axes_out_of_order", [1, 2], [3, 5], [2, 0], None),
        ("negative_axis", [1], [4], [-1], [2]),
    ]
    for tag, st, en, ax, sp in specs:
        attrs = dict(starts=IS(st), ends=IS(en))
        if ax is not None:
            attrs["axes"] = IS(ax)
        if sp is not None:
            attrs["steps"] = IS(sp)
        yield simple(f"Slice_{tag}", "Slice", {"x": x}, onnx_slice(x, st, en, ax, sp), **attrs)
    xi = np.arange(12, dtype=np.int32)
    yield simple("Slice_int32_rank1_reverse", "Slice", {"x": xi}, xi[::-1], starts=IS([-1]), ends=IS([INT64_MIN]), steps=IS([-1]))
    xt = uni(6, 4)
    yield transposed("Slice_of_transpose", "Slice", xt, xt.T[1:4, ::-2], starts=IS([1, -1]), ends=IS([4, INT64_MIN]),
                     steps=IS([1, -2]))
    yield err("Slice_step_zero", "Slice", {"x": x}, "INVALID_ARGUMENT", starts=IS([0]), ends=IS([2]), steps=IS([0]))
    yield err("Slice_axis_twice", "Slice", {"x": x}, "INVALID_ARGUMENT", starts=IS([0, 0]), ends=IS([1, 1]), axes=IS([1, 1]))
    yield err("Slice_length_mismatch", "Slice", {"x": x}, "INVALID_ARGUMENT", starts=IS([0, 0]), ends=IS([1]))
    yield err("Slice_bad_axis", "Slice", {"x": x}, "OUT_OF_RANGE", starts=IS([0]), ends=IS([1]), axes=IS([3]))


def concat_cases():
    a, b, c = uni(2, 3, 4), uni(2, 1, 4), uni(2, 5, 4)
    yield Case("Concat_axis1_three", [node("Concat", ["a", "b", "c"], ["y"], axis=I(1))], {"a": a, "b": b, "c": c},
               {"y": np.concatenate([a, b, c], 1)})
    yield Case("Concat_axis_neg", [node("Concat", ["a", "b"], ["y"], axis=I(-1))], {"a": a, "b": a[..., :2]},
               {"y": np.concatenate([a, a[..., :2]], -1)})
    yield Case("Concat_single", [node("Concat", ["a"], ["y"], axis=I(0))], {"a": a}, {"y": a})
    e = np.zeros((2, 0, 4), np.float32)
    yield Case("Concat_with_empty", [node("Concat", ["a", "e", "b"], ["y"], axis=I(1))], {"a": a, "e": e, "b": b},
               {"y": np.concatenate([a, e, b], 1)})
    i1, i2 = np.arange(3, dtype=np.int64), np.arange(2, dtype=np.int64)
    yield Case("Concat_int64_rank1", [node("Concat", ["a", "b"], ["y"], axis=I(0))], {"a": i1, "b": i2},
               {"y": np.concatenate([i1, i2])})
    xt = uni(3, 2)
    yield Case("Concat_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Concat", ["t", "t"], ["y"], axis=I(0))],
               {"x": xt}, {"y": np.concatenate([xt.T, xt.T], 0)})
    # runs past the CPU kernel's 256 KB pieces (a feature map's channels), outer > 1, bool
    f1, f2 = uni(1, 3, 150, 150), uni(1, 2, 150, 150)
    yield Case("Concat_large_channels", [node("Concat", ["a", "b"], ["y"], axis=I(1))], {"a": f1, "b": f2},
               {"y": np.concatenate([f1, f2], 1)})
    yield Case("Concat_large_axis2", [node("Concat", ["a", "b"], ["y"], axis=I(2))], {"a": f1[:, :2], "b": f2},
               {"y": np.concatenate([f1[:, :2], f2], 2)})
    m1, m2 = uni(2, 3) > 0, uni(2, 1) > 0
    yield Case("Concat_bool", [node("Concat", ["a", "b"], ["y"], axis=I(1))], {"a": m1, "b": m2}, {"y": np.concatenate([m1, m2], 1)})
    yield Case("Concat_dtype_mismatch", [node("Concat", ["a", "b"], ["y"], axis=I(0))], {"a": i1, "b": i2.astype(np.int32)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("Concat_shape_mismatch", [node("Concat", ["a", "b"], ["y"], axis=I(1))], {"a": a, "b": uni(3, 1, 4)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("Concat_rank_mismatch", [node("Concat", ["a", "b"], ["y"], axis=I(0))], {"a": a, "b": uni(2, 3)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])


def expand_cases():
    x = uni(3, 1)
    yield simple("Expand_3x1_to_2x3x4", "Expand", {"x": x}, np.broadcast_to(x, (2, 3, 4)), shape=IS([2, 3, 4]))
    yield simple("Expand_rank0", "Expand", {"x": np.array(2.0, np.float32)}, np.full((2, 3), 2.0, np.float32), shape=IS([2, 3]))
    # ONNX Expand broadcasts both ways: a 1 in the shape keeps the input's dim
    xb = uni(2, 3)
    yield simple("Expand_shape_smaller", "Expand", {"x": xb}, xb, shape=IS([1, 3]))
    yield simple("Expand_lower_rank_shape", "Expand", {"x": xb}, xb, shape=IS([3]))
    yield simple("Expand_bool", "Expand", {"x": np.array([True, False])}, np.broadcast_to([True, False], (3, 2)), shape=IS([3, 2]))
    yield simple("Expand_to_empty", "Expand", {"x": x}, np.zeros((0, 3, 5), np.float32), shape=IS([0, 3, 5]))
    yield err("Expand_incompatible", "Expand", {"x": xb}, "INVALID_ARGUMENT", shape=IS([2, 4]))


def pad_cases():
    x = uni(3, 4)
    for mode in ["constant", "edge", "reflect", "wrap"]:
        for pads in [[1, 2, 0, 1], [0, 0, 2, 3], [1, 0, 2, 0]]:
            yield simple(f"Pad_{mode}_{''.join(map(str, pads))}", "Pad", {"x": x}, numpy_pad(x, pads, mode, 1.5), pads=IS(pads),
                         mode=S(mode), value=F(1.5))
        yield simple(f"Pad_{mode}_negative", "Pad", {"x": x}, numpy_pad(x, [-1, 2, 1, -2], mode, 0.0), pads=IS([-1, 2, 1, -2]),
                     mode=S(mode))
    yield simple("Pad_wrap_wider_than_axis", "Pad", {"x": x}, numpy_pad(x, [5, 0, 3, 9], "wrap"), pads=IS([5, 0, 3, 9]), mode=S("wrap"))
    x3 = uni(2, 3, 4)
    yield simple("Pad_3d_reflect", "Pad", {"x": x3}, numpy_pad(x3, [0, 1, 2, 1, 2, 3], "reflect"), pads=IS([0, 1, 2, 1, 2, 3]),
                 mode=S("reflect"))
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    yield simple("Pad_int32_constant", "Pad", {"x": xi}, numpy_pad(xi, [1, 1, 1, 1], "constant", 7), pads=IS([1, 1, 1, 1]), value=F(7))
    yield simple("Pad_rank1_edge", "Pad", {"x": x[0]}, numpy_pad(x[0], [2, 3], "edge"), pads=IS([2, 3]), mode=S("edge"))
    yield simple("Pad_zero", "Pad", {"x": x}, x, pads=IS([0, 0, 0, 0]))
    yield simple("Pad_crop_to_empty", "Pad", {"x": x}, x[:, 4:], pads=IS([0, -2, 0, -2]))
    yield transposed("Pad_of_transpose", "Pad", x, numpy_pad(x.T, [1, 0, 0, 2], "edge"), pads=IS([1, 0, 0, 2]), mode=S("edge"))
    yield err("Pad_bad_mode", "Pad", {"x": x}, "INVALID_ARGUMENT", pads=IS([1, 1, 1, 1]), mode=S("mirror"))
    yield simple("Pad_reflect_wider_than_axis", "Pad", {"x": x}, numpy_pad(x, [5, 0, 3, 9], "reflect"), pads=IS([5, 0, 3, 9]),
                 mode=S("reflect"))
    yield simple("Pad_reflect_size1_axis", "Pad", {"x": x[:1]}, numpy_pad(x[:1], [2, 0, 1, 0], "reflect"), pads=IS([2, 0, 1, 0]),
                 mode=S("reflect"))
    yield err("Pad_wrong_length", "Pad", {"x": x}, "INVALID_ARGUMENT", pads=IS([1, 1]))
    yield err("Pad_crop_below_zero", "Pad", {"x": x}, "INVALID_ARGUMENT", pads=IS([-2, 0, -2, 0]))
    yield err("Pad_edge_empty_axis", "Pad", {"x": np.zeros((0, 2), np.float32)}, "INVALID_ARGUMENT", pads=IS([1, 0, 0, 0]),
              mode=S("edge"))


def tile_cases():
    x = uni(2, 3)
    yield simple("Tile_2x3", "Tile", {"x": x}, np.tile(x, (2, 3)), repeats=IS([2, 3]))
    yield simple("Tile_ones", "Tile", {"x": x}, x, repeats=IS([1, 1]))
    yield simple("Tile_zero", "Tile", {"x": x}, np.tile(x, (0, 2)), repeats=IS([0, 2]))
    xi = np.arange(4, dtype=np.int64)
    yield simple("Tile_int64_rank1", "Tile", {"x": xi}, np.tile(xi, 3), repeats=IS([3]))
    yield transposed("Tile_of_transpose", "Tile", x, np.tile(x.T, (2, 1)), repeats=IS([2, 1]))
    yield err("Tile_negative", "Tile", {"x": x}, "INVALID_ARGUMENT", repeats=IS([1, -1]))
    yield err("Tile_wrong_length", "Tile", {"x": x}, "INVALID_ARGUMENT", repeats=IS([2]))


def symbolic_and_dtype_cases():
    """Symbolic dims bound at run time, and float16 / float64 / bool data."""
    a, b = uni(4, 3), uni(4, 2)
    yield Case("Concat_symbolic_rows", [node("Concat", ["a", "b"], ["y"], axis=I(1))], {"a": a, "b": b},
               {"y": np.concatenate([a, b], 1)}, dims={"a": [sym(0), 3], "b": [sym(0), 2]})
    yield Case("Transpose_symbolic", [node("Transpose", ["x"], ["y"], perm=IS([1, 0]))], {"x": a}, {"y": a.T},
               dims={"x": [sym(0), sym(1)]})
    yield Case("Slice_symbolic_axis", [node("Slice", ["x"], ["y"], starts=IS([1]), ends=IS([-1]), axes=IS([0]))], {"x": a},
               {"y": a[1:-1]}, dims={"x": [sym(0), 3]})
    yield Case("Pad_symbolic_edge", [node("Pad", ["x"], ["y"], pads=IS([1, 0, 0, 2]), mode=S("edge"))], {"x": a},
               {"y": numpy_pad(a, [1, 0, 0, 2], "edge")}, dims={"x": [sym(0), 3]})
    h = uni(2, 3, dtype=np.float16)
    yield simple("Pad_f16_reflect", "Pad", {"x": h}, numpy_pad(h, [0, 2, 1, 1], "reflect"), pads=IS([0, 2, 1, 1]), mode=S("reflect"))
    yield simple("Tile_f64", "Tile", {"x": h.astype(np.float64)}, np.tile(h.astype(np.float64), (2, 2)), repeats=IS([2, 2]))
    yield simple("Slice_bool_negative_step", "Slice", {"x": a > 0}, (a > 0)[::-2], starts=IS([-1]), ends=IS([INT64_MIN]),
                 steps=IS([-2]))
    yield simple("Expand_f16", "Expand", {"x": h[:, :1]}, np.broadcast_to(h[:, :1], (2, 5)), shape=IS([2, 5]))


def cases():
    yield from symbolic_and_dtype_cases()
    yield from reshape_cases()
    yield from transpose_cases()
    yield from narrow_cases()
    yield from slice_cases()
    yield from concat_cases()
    yield from expand_cases()
    yield from pad_cases()
    yield from tile_cases()
