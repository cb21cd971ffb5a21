"""Indices out of range: every index op (Gather, GatherElements, GatherND, ScatterAdd,
ScatterElements, ScatterND, GatherBackward) fails the run with OUT_OF_RANGE in eager,
lazy and compiled mode when an index given at run time is outside [-n, n) of its axis (ONNX: out of
range is an error; numpy.take raises IndexError for the same indices, which is the oracle here), and
fails the build when the indices are constants. Edges: the first index past the end (n), the first
before the start (-n - 1), int64 extremes, uint8 above n, an empty axis with indices, empty index
tensors and empty data (valid: numpy gives the empty or unchanged result), a KV-cache append at
position == capacity through ScatterND, and an out-of-range Gather inside an If branch that the
condition does not take (valid: the branch's result is discarded).

Shape arithmetic on adversarial attributes (Pad amounts near INT64_MAX, Conv dilation 2^40, Slice
step INT64_MIN, Resize negative sizes, Reshape products past int64, GroupNorm and its backward ops
with num_groups INT32_MAX) fails with a status or gives numpy's result, on fixed and on symbolic
input dims (inferred when a run binds them).

Integer Div and Mod (both fmod settings) of INT_MIN by -1 and of anything by 0 are defined as numpy
defines them (x / 0 = x % 0 = 0, INT_MIN / -1 = INT_MIN, x % -1 = 0) instead of trapping in MLX.
Signed integer Pow wraps as numpy's does for exponents >= 0 and gives 0 for negative ones (numpy
refuses those; 0 is MLX's result), Neg wraps (-INT_MIN = INT_MIN); a compiled executable, whose
fused kernel once looped forever on Pow(a, Neg(a)) at INT64_MIN, gives the same."""
import numpy as np

from opcase import FS, IS, Case, G, I, S, node, simple, sym
from opcase import error_case as err_case

rng = np.random.default_rng(8)
I64 = np.iinfo(np.int64)


def numpy_rejects(fn):
    """The oracle: numpy raises IndexError for these indices."""
    try:
        fn()
    except IndexError:
        return True
    return False


def oor(name, nodes, inputs, oracle=None, constants=None):
    if oracle is not None:
        assert numpy_rejects(oracle), name
    return Case(name, nodes, inputs, {}, expect_error="OUT_OF_RANGE", constants=constants)


def one(op, names, **attrs):
    return [node(op, names, ["y"], **attrs)]


def gather_cases():
    x = rng.uniform(-1, 1, (4, 5)).astype(np.float32)
    for label, idx, axis in [("end", [0, 5], 1), ("before_start", [-6, 1], 1), ("int64_max", [I64.max], 0),
                             ("int64_min", [I64.min], 0), ("axis0_end", [[1, 4]], 0)]:
        i = np.array(idx, np.int64)
        yield oor(f"Gather_oor_{label}", one("Gather", ["x", "i"], axis=I(axis)), {"x": x, "i": i},
                  lambda i=i, axis=axis: np.take(x, i, axis=axis))
    u = np.array([2, 200], np.uint8)
    yield oor("Gather_oor_uint8", one("Gather", ["x", "i"], axis=I(1)), {"x": x, "i": u}, lambda: np.take(x, u, axis=1))
    i32 = np.array([3, -5, 7], np.int32)
    yield oor("Gather_oor_int32_embedding", one("Gather", ["x", "i"]), {"x": x, "i": i32}, lambda: np.take(x, i32, axis=0))
    e = np.zeros((0, 3), np.float32)
    yield oor("Gather_oor_empty_axis", one("Gather", ["x", "i"]), {"x": e, "i": np.array([0], np.int64)},
              lambda: np.take(e, [0], axis=0))
    yield simple("Gather_empty_axis_no_index", "Gather", {"x": e, "i": np.zeros(0, np.int64)}, np.take(e, np.zeros(0, np.int64), axis=0))
    z = np.zeros((3, 0), np.float32)
    yield simple("Gather_empty_data", "Gather", {"x": z, "i": np.array([2, -3], np.int64)}, np.take(z, [2, -3], axis=0))
    yield oor("Gather_oor_constant", one("Gather", ["x", "i"]), {"x": x}, lambda: np.take(x, [4], axis=0),
              constants={"i": np.array([4], np.int64)})


def gather_elements_cases():
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    i = np.array([[0, 4, 1, 2]], np.int64)
    yield oor("GatherElements_oor", one("GatherElements", ["x", "i"], axis=I(1)), {"x": x, "i": i},
              lambda: np.take_along_axis(x, i, axis=1))
    i = np.array([[-4], [0]], np.int64)
    yield oor("GatherElements_oor_negative", one("GatherElements", ["x", "i"], axis=I(0)), {"x": x, "i": i},
              lambda: np.take_along_axis(x[:, :1], i, axis=0))
    # zero elements with large other dims: nothing to gather
    z = np.zeros((0, 1000000), np.float32)
    iz = np.zeros((0, 1000000), np.int64)
    yield simple("GatherElements_zero_elements", "GatherElements", {"x": z, "i": iz}, np.take_along_axis(z, iz, axis=0), axis=I(0))


def gather_nd_cases():
    d = rng.uniform(-1, 1, (2, 3, 4)).astype(np.float32)
    for label, idx in [("first_column", [[2, 0]]), ("second_column", [[1, 3], [0, -5]])]:
        i = np.array(idx, np.int64)
        yield oor(f"GatherND_oor_{label}", one("GatherND", ["d", "i"]), {"d": d, "i": i},
                  lambda i=i: d[tuple(i.T)])


def scatter_cases():
    d = np.zeros((4, 3), np.float32)
    u = np.ones((1, 3), np.float32)
    for label, idx in [("end", [[4]]), ("before_start", [[-5]]), ("huge", [[I64.max]])]:
        i = np.array(idx, np.int64)

        def numpy_write(i=i):
            d.copy()[tuple(i.T)] = u
        yield oor(f"ScatterND_oor_{label}", one("ScatterND", ["d", "i", "u"]), {"d": d, "i": i, "u": u}, numpy_write)
    # a KV-cache append at position == capacity: cache [1, heads, capacity, dim] written at [0, h, pos]
    cache = np.zeros((1, 2, 8, 4), np.float32)
    pos = np.array([[[0, 0, 8], [0, 1, 8]]], np.int64)
    new = np.ones((1, 2, 4), np.float32)

    def kv_append():
        cache.copy()[tuple(pos.reshape(-1, 3).T)] = new.reshape(-1, 4)
    yield oor("ScatterND_oor_kv_cache_append_at_capacity", one("ScatterND", ["c", "p", "n"]), {"c": cache, "p": pos, "n": new}, kv_append)
    ie = np.zeros((0, 1), np.int64)
    yield simple("ScatterND_empty_indices", "ScatterND", {"d": d, "i": ie, "u": np.zeros((0, 3), np.float32)}, d)
    de = np.zeros((0, 3), np.float32)
    yield simple("ScatterND_empty_data", "ScatterND", {"d": de, "i": ie, "u": np.zeros((0, 3), np.float32)}, de)
    yield oor("ScatterND_oor_empty_data", one("ScatterND", ["d", "i", "u"]),
              {"d": de, "i": np.array([[0]], np.int64), "u": np.zeros((1, 3), np.float32)})

    i = np.array([[0, 1, 3]], np.int64)
    ue = np.ones((1, 3), np.float32)

    def put():
        np.put_along_axis(d.copy(), i, ue, axis=0)
    yield oor("ScatterElements_oor", one("ScatterElements", ["d", "i", "u"]), {"d": np.zeros((3, 3), np.float32), "i": i, "u": ue})
    assert numpy_rejects(lambda: np.put_along_axis(np.zeros((3, 3)), i, ue, axis=0))
    yield oor("ScatterElements_oor_add", one("ScatterElements", ["d", "i", "u"], reduction={"s": "add"}),
              {"d": np.zeros((3, 3), np.float32), "i": -i - 1, "u": ue})
    yield oor("ScatterAdd_oor", one("ScatterAdd", ["u", "i"], shape=IS([3, 2])),
              {"u": np.ones((2, 2), np.float32), "i": np.array([1, 3], np.int64)}, lambda: np.add.at(np.zeros((3, 2)), [1, 3], 1))
    yield oor("GatherBackward_oor", one("GatherBackward", ["dy", "i"], shape=IS([3, 2])),
              {"dy": np.ones((2, 2), np.float32), "i": np.array([0, 3], np.int64)}, lambda: np.add.at(np.zeros((3, 2)), [0, 3], 1))


def control_cases():
    x = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    i = np.array([7], np.int64)

    caps = [{"name": "bx", "dtype": "float32", "dims": [4, 3]}, {"name": "bi", "dtype": "int64", "dims": [1]}]
    gather = G({"inputs": caps, "nodes": [node("Gather", ["bx", "bi"], ["by"])], "outputs": [{"name": "by"}]})
    first = G({"inputs": caps, "nodes": [node("Slice", ["bx"], ["by"], starts=IS([0, 0]), ends=IS([1, 3]))],
               "outputs": [{"name": "by"}]})
    nodes = [node("If", ["c", "x", "i"], ["y"], then_branch=gather, else_branch=first)]
    # the untaken branch gathers out of range: valid, the else branch's result comes out
    yield Case("If_untaken_branch_oor_gather", nodes, {"c": np.array(False), "x": x, "i": i}, {"y": x[:1]})
    yield oor("If_taken_branch_oor_gather", nodes, {"c": np.array(True), "x": x, "i": i}, lambda: np.take(x, i, axis=0))


def trunc_div(a, b):
    """C / ONNX integer division (toward zero) from numpy's floor division and remainder."""
    with np.errstate(all="ignore"):
        q, r = np.floor_divide(a, b), np.remainder(a, b)
    return (q + ((r != 0) & ((a < 0) != (b < 0)))).astype(a.dtype)


def int_division_cases():
    for dt in [np.int8, np.int32, np.int64, np.uint8, np.uint32]:
        info = np.iinfo(dt)
        a = np.array([info.min, info.min, 7, info.max, 0, 9, info.max], dt)
        b = np.array([-1 if info.min else 3, 0, 0, 0, 0, 2, 1], dt) if info.min else np.array([3, 0, 0, 0, 0, 2, 1], dt)
        name = np.dtype(dt).name
        with np.errstate(all="ignore"):
            yield simple(f"Div_int_edges_{name}", "Div", {"a": a, "b": b}, trunc_div(a, b))
            yield simple(f"Mod_int_edges_{name}", "Mod", {"a": a, "b": b}, np.remainder(a, b))
            yield simple(f"Mod_fmod_int_edges_{name}", "Mod", {"a": a, "b": b}, np.fmod(a, b), fmod=I(1))


def int_power_cases():
    for dt in [np.int8, np.int32, np.int64]:
        info = np.iinfo(dt)
        a = np.array([3, -3, 2, info.min, info.max, 0, 1, -1], dt)
        b = np.array([40, 3, 7, 2, 2, 0, 5, 3], dt)
        with np.errstate(all="ignore"):
            yield simple(f"Pow_int_wraps_{np.dtype(dt).name}", "Pow", {"a": a, "b": b}, np.power(a, b))
    i64 = np.iinfo(np.int64)
    c = np.array([5, 2**31 - 1, i64.min, -3, 2, 0], np.int64)
    neg = np.array([-5, -(2**31 - 1), i64.min, 3, -2, 0], np.int64)  # -c, wrapped
    want = np.array([0, 0, 0, -27, 0, 1], np.int64)  # c ** neg with 0 for negative exponents
    yield Case("Neg_int64_min_wraps", [node("Neg", ["c"], ["y"])], {}, {"y": neg}, constants={"c": c})
    # fuzz_graph: the fused kernel of Mod(c, Pow(c, Neg(c))) looped forever in compiled mode
    yield Case("Pow_of_negated_int64_min", [node("Neg", ["c"], ["n"]), node("Pow", ["c", "n"], ["p"]),
                                            node("Mod", ["c", "p"], ["y"], fmod=I(1))],
               {}, {"y": np.where(want == 0, 0, np.fmod(c, np.where(want == 0, 1, want)))}, constants={"c": c})


def builder_cases():
    """Shape arithmetic on adversarial attributes: an overflow is a status, never undefined
    behaviour; valid extremes give numpy's results."""
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    big = 2**62  # exact in the case files' JSON numbers (doubles)
    yield err_case("Pad_overflowing_amounts", "Pad", {"x": x}, "RESOURCE_EXHAUSTED", pads=IS([0, big, 0, big]))
    yield err_case("Pad_int64_min_amount", "Pad", {"x": x}, "INVALID_ARGUMENT", pads=IS([0, -(2**63), 0, 0]))
    yield err_case("Reshape_overflowing_product", "Reshape", {"x": x}, "RESOURCE_EXHAUSTED", shape=IS([1 << 62, 1 << 62]))
    yield err_case("Reshape_negative_size", "Reshape", {"x": x}, "INVALID_ARGUMENT", shape=IS([-6, 1]))
    yield err_case("Resize_negative_size", "Resize", {"x": x}, "INVALID_ARGUMENT", sizes=IS([2, -7]))
    xc = rng.uniform(-1, 1, (1, 1, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (1, 1, 3)).astype(np.float32)
    yield err_case("Conv_dilation_2_40", "Conv", {"x": xc, "w": w}, "INVALID_ARGUMENT", dilations=IS([1 << 40]))
    yield err_case("Conv_pads_overflow", "Conv", {"x": xc, "w": w}, "RESOURCE_EXHAUSTED", pads=IS([big, big]))
    # antialiased downscaling at a tiny scale stretches the kernel over ~1e300 taps (their count
    # was converted from a double out of int64's range)
    yield Case("Resize_antialias_tiny_scale", [node("Resize", ["x"], ["y"], sizes=IS([2, 1]), scales=FS([1, 1e-300]), mode=S("linear"),
                                                    antialias=I(1))], {"x": x}, {}, expect_error="RESOURCE_EXHAUSTED",
               expect_message="antialiasing at scale 1e-300 needs more than 2^41 taps per output")
    ge = np.zeros((1, 0, 3), np.float32)
    yield err_case("GroupNorm_groups_on_no_channels", "GroupNorm", {"x": ge, "s": np.ones(0, np.float32), "b": np.zeros(0, np.float32)},
                   "INVALID_ARGUMENT", num_groups=I(2**31 - 1))
    # valid extremes
    yield simple("Slice_step_int64_min", "Slice", {"x": x}, x[:, 2::-(2**63)], starts=IS([2]), ends=IS([-(2**63)]), axes=IS([1]),
                 steps=IS([-(2**63)]))
    yield simple("Slice_step_huge", "Slice", {"x": x}, x[:, 0::big], starts=IS([0]), ends=IS([big]), axes=IS([1]), steps=IS([big]))
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    lo = np.iinfo(np.int32).min
    yield simple("Pad_int_value_minus_1e300_saturates", "Pad", {"x": xi}, np.pad(xi, ((0, 0), (1, 0)), constant_values=lo),
                 pads=IS([0, 1, 0, 0]), value={"f": -1e300})


def symbolic_builder_cases():
    """The same adversarial attributes on inputs whose dims are symbolic, so that shapes are
    inferred only when a run binds the sizes: every mode fails the build or that run with the
    status the fixed-shape case gets (the Resize and GroupNorm(Backward) cases once reached a
    negative-size or multi-gigabyte allocation this way); the valid extremes give numpy's results."""
    x = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    xd = {"x": [sym(0), sym(1)]}
    big = 2**62

    def fails(name, op, inputs, dims, code, message, **attrs):
        return Case(name, [node(op, list(inputs), ["y"], **attrs)], inputs, {}, expect_error=code, expect_message=message, dims=dims)
    yield fails("Resize_negative_size_symbolic_input", "Resize", {"x": x}, xd, "INVALID_ARGUMENT", "'sizes'[1] = -7 is negative",
                sizes=IS([2, -7]))
    # a size naming symbol s0 where the only input declares s1: no run binds it (the lowering saw a
    # negative dim: Resize asked malloc for (size_t)-8 bytes of taps, Reshape and Expand MLX for -2)
    x1 = rng.uniform(-1, 1, 4).astype(np.float32)
    for op, attr in (("Resize", "sizes"), ("Reshape", "shape"), ("Expand", "shape")):
        yield fails(f"{op}_unbound_symbol", op, {"x": x1}, {"x": [sym(1)]}, "INVALID_ARGUMENT",
                    f"'{attr}'[0] = -2 is negative (and names no symbol of the graph's inputs)", **{attr: IS([sym(0)])})
    yield fails("Pad_overflowing_amounts_symbolic_input", "Pad", {"x": x}, xd, "RESOURCE_EXHAUSTED",
                f"pads {big}, {big} of axis 1 (size 3) overflow int64", pads=IS([0, big, 0, big]))
    yield fails("Pad_int64_min_amount_symbolic_input", "Pad", {"x": x}, xd, "INVALID_ARGUMENT", "pads crop axis 1 of size 3 below 0",
                pads=IS([0, -(2**63), 0, 0]))
    # cropping more than the axis holds while the other side pads it back to a size >= 0 (the
    # lowering negated a crop of INT64_MIN: found by fuzz_graph)
    yield fails("Pad_crop_past_axis_symbolic_input", "Pad", {"x": x}, xd, "INVALID_ARGUMENT", "pads -4, 3 crop more than axis 1's 3 entries",
                pads=IS([0, -4, 0, 3]))
    yield fails("Reshape_overflowing_product_symbolic_input", "Reshape", {"x": x}, xd, "RESOURCE_EXHAUSTED", "more than 2^63 bytes",
                shape=IS([big, big]))
    xc = rng.uniform(-1, 1, (1, 1, 5)).astype(np.float32)
    w = rng.uniform(-1, 1, (1, 1, 3)).astype(np.float32)
    cd = {"x": [1, 1, sym(0)]}
    yield fails("Conv_dilation_2_40_symbolic_input", "Conv", {"x": xc, "w": w}, cd, "INVALID_ARGUMENT",
                "kernel 3 (dilation 1099511627776) is larger than padded spatial dim 0", dilations=IS([1 << 40]))
    yield fails("Conv_pads_overflow_symbolic_input", "Conv", {"x": xc, "w": w}, cd, "RESOURCE_EXHAUSTED",
                "spatial dim 0 of the output overflows int64", pads=IS([big, big]))
    g4 = rng.uniform(-1, 1, (1, 4, 3)).astype(np.float32)
    gd = [1, sym(0), sym(1)]
    many = I(2**31 - 1)
    for op, inputs, dims in (("GroupNorm", {"x": g4, "s": np.ones(4, np.float32), "b": np.zeros(4, np.float32)},
                              {"x": gd, "s": [sym(0)], "b": [sym(0)]}),
                             ("GroupNormBackwardInput", {"x": g4, "g": np.ones(4, np.float32), "dy": g4}, {"x": gd, "g": [sym(0)], "dy": gd}),
                             ("GroupNormBackwardGamma", {"x": g4, "dy": g4}, {"x": gd, "dy": gd}),
                             ("GroupNormBackwardBeta", {"dy": g4}, {"dy": gd})):
        yield fails(f"{op}_num_groups_int32_max", op, inputs, {}, "INVALID_ARGUMENT", "num_groups 2147483647 must divide the 4 channels",
                    num_groups=many)
        yield fails(f"{op}_num_groups_int32_max_symbolic_input", op, inputs, dims, "INVALID_ARGUMENT",
                    "num_groups 2147483647 must divide the 4 channels", num_groups=many)
    yield Case("Slice_step_int64_min_symbolic_input", [node("Slice", ["x"], ["y"], starts=IS([2]), ends=IS([-(2**63)]), axes=IS([1]),
                                                            steps=IS([-(2**63)]))], {"x": x}, {"y": x[:, 2::-(2**63)]}, dims=xd)
    xi = np.arange(6, dtype=np.int32).reshape(2, 3)
    yield Case("Pad_int_value_minus_1e300_symbolic_input", [node("Pad", ["x"], ["y"], pads=IS([0, 1, 0, 0]), value={"f": -1e300})],
               {"x": xi}, {"y": np.pad(xi, ((0, 0), (1, 0)), constant_values=np.iinfo(np.int32).min)}, dims=xd)


def cases():
    yield from builder_cases()
    yield from symbolic_builder_cases()
    yield from int_division_cases()
    yield from int_power_cases()
    yield from gather_cases()
    yield from gather_elements_cases()
    yield from gather_nd_cases()
    yield from scatter_cases()
    yield from control_cases()
