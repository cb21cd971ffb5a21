"""Reductions, scans and sorting against numpy: Reduce (sum, mean, max, min, prod; axes, keepdims,
empty axes = all, integer and bool inputs, empty reductions), Cumsum (inclusive, exclusive,
reverse), ArgMax/ArgMin (select_last_index, keepdims), TopK (largest/smallest, ties keep the lower
index). Edge shapes: rank 0 and 1, size-0 and size-1 dims, non-contiguous inputs; error cases."""
import numpy as np

from opcase import IS, Case, I, S, error_case as err, node, simple, sym

rng = np.random.default_rng(77)


def uni(*shape, dtype=np.float32):
    return rng.uniform(-3, 3, size=shape).astype(dtype)


NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def reduce_ref(x, kind, axes, keep):
    ax = tuple(axes) if axes else None
    if kind == "mean" and np.issubdtype(x.dtype, np.integer):  # integer mean truncates toward zero
        s = np.sum(x.astype(np.int64), axis=ax, keepdims=keep)
        cnt = x.size if ax is None else int(np.prod([x.shape[a] for a in ax]))
        return (np.trunc(s / cnt)).astype(x.dtype) if cnt else np.zeros_like(s, x.dtype)
    if x.size == 0 or (ax is not None and any(x.shape[a] == 0 for a in ax)):
        shape = np.sum(np.zeros(x.shape), axis=ax, keepdims=keep).shape
        if kind in ("max", "min"):
            lo = -np.inf if x.dtype.kind == "f" else (False if x.dtype == bool else np.iinfo(x.dtype).min)
            hi = np.inf if x.dtype.kind == "f" else (True if x.dtype == bool else np.iinfo(x.dtype).max)
            return np.full(shape, lo if kind == "max" else hi, x.dtype)
        return np.full(shape, {"sum": 0, "prod": 1, "mean": np.nan}[kind], x.dtype)
    return np.asarray(NP[kind](x, axis=ax, keepdims=keep)).astype(x.dtype)


def reduce_cases():
    x = uni(3, 4, 5)
    for kind in NP:
        for axes, keep in [([1], 0), ([0, 2], 1), ([-1], 0), ([], 0), ([], 1), ([2, 0, 1], 0)]:
            tag = "_".join(map(str, axes)) or "all"
            xx = x if kind != "prod" else (x / 3 + 1).astype(np.float32)
            yield simple(f"Reduce_{kind}_{tag}_k{keep}", "Reduce", {"x": xx}, reduce_ref(xx, kind, axes, keep), atol=1e-5, rtol=1e-5,
                         kind=S(kind), axes=IS(axes), keepdims=I(keep))
        for dt in [np.int32, np.int64, np.uint8]:
            xi = rng.integers(0 if dt == np.uint8 else -20, 20, size=(4, 6)).astype(dt)
            if kind == "prod":
                xi = rng.integers(1, 3, size=(4, 6)).astype(dt)
            yield simple(f"Reduce_{kind}_{np.dtype(dt).name}", "Reduce", {"x": xi}, reduce_ref(xi, kind, [1], 0), kind=S(kind), axes=IS([1]))
        # empty reductions: the kind's identity
        xe = np.zeros((2, 0, 3), np.float32)
        yield simple(f"Reduce_{kind}_empty", "Reduce", {"x": xe}, reduce_ref(xe, kind, [1], 1), kind=S(kind), axes=IS([1]), keepdims=I(1))
        yield simple(f"Reduce_{kind}_rank0", "Reduce", {"x": np.array(2.5, np.float32)}, np.array(2.5, np.float32), kind=S(kind))
    xe = np.zeros((0, 3), np.int32)
    yield simple("Reduce_max_empty_int32", "Reduce", {"x": xe}, reduce_ref(xe, "max", [0], 0), kind=S("max"), axes=IS([0]))
    yield simple("Reduce_min_empty_int64", "Reduce", {"x": xe.astype(np.int64)}, reduce_ref(xe.astype(np.int64), "min", [0], 0),
                 kind=S("min"), axes=IS([0]))
    yield simple("Reduce_mean_int32_negative", "Reduce", {"x": np.array([[-7, 2], [-1, 0]], np.int32)},
                 reduce_ref(np.array([[-7, 2], [-1, 0]], np.int32), "mean", [1], 0), kind=S("mean"), axes=IS([1]))
    b = rng.integers(0, 2, size=(3, 4)).astype(bool)
    yield simple("Reduce_max_bool", "Reduce", {"x": b}, b.any(axis=1), kind=S("max"), axes=IS([1]))
    yield simple("Reduce_min_bool", "Reduce", {"x": b}, b.all(axis=0, keepdims=True), kind=S("min"), axes=IS([0]), keepdims=I(1))
    # over trailing axes (rlx's CPU kernel: rows of 32-wide blocks and a ragged end, split over
    # threads): the averages of squeeze-and-excitation blocks, an offset the sums carry
    xr = uni(2, 40, 12, 37) + 5
    for kind, axes, keep in (("sum", [2, 3], 1), ("mean", [-1], 0), ("mean", [3, 2], 0), ("sum", [1, 2, 3], 0)):
        yield simple(f"Reduce_{kind}_trailing_{len(axes)}_k{keep}", "Reduce", {"x": xr}, reduce_ref(xr, kind, axes, keep), atol=1e-4,
                     rtol=1e-5, kind=S(kind), axes=IS(axes), keepdims=I(keep))
    xt = uni(4, 3)
    yield Case("Reduce_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])),
                                       node("Reduce", ["t"], ["y"], kind=S("sum"), axes=IS([1]))], {"x": xt}, {"y": xt.T.sum(1)})
    yield err("Reduce_bad_kind", "Reduce", {"x": x}, "INVALID_ARGUMENT", kind=S("median"))
    yield err("Reduce_axis_twice", "Reduce", {"x": x}, "INVALID_ARGUMENT", kind=S("sum"), axes=IS([1, -2]))
    yield err("Reduce_bad_axis", "Reduce", {"x": x}, "OUT_OF_RANGE", kind=S("sum"), axes=IS([3]))
    yield err("Reduce_sum_bool", "Reduce", {"x": b}, "INVALID_ARGUMENT", kind=S("sum"))


def cumsum_ref(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive:
        c = c - y
    return np.flip(c, axis) if reverse else c


def cumsum_cases():
    x = uni(3, 5)
    for axis in [0, 1, -1]:
        for ex in [0, 1]:
            for rev in [0, 1]:
                yield simple(f"Cumsum_a{axis}_e{ex}_r{rev}", "Cumsum", {"x": x}, cumsum_ref(x, axis, ex, rev), atol=1e-5,
                             axis=I(axis), exclusive=I(ex), reverse=I(rev))
    xi = rng.integers(-9, 9, size=(7,)).astype(np.int32)
    yield simple("Cumsum_int32_exclusive_reverse", "Cumsum", {"x": xi}, cumsum_ref(xi, 0, 1, 1), axis=I(0), exclusive=I(1), reverse=I(1))
    yield simple("Cumsum_int64", "Cumsum", {"x": xi.astype(np.int64)}, cumsum_ref(xi.astype(np.int64), 0, 0, 0), axis=I(0))
    yield simple("Cumsum_empty_axis", "Cumsum", {"x": np.zeros((2, 0), np.float32)}, np.zeros((2, 0), np.float32), axis=I(1))
    yield Case("Cumsum_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Cumsum", ["t"], ["y"], axis=I(0))],
               {"x": x}, {"y": np.cumsum(x.T, 0)}, atol=1e-5)
    yield err("Cumsum_rank0", "Cumsum", {"x": np.array(1.0, np.float32)}, "INVALID_ARGUMENT", axis=I(0))
    yield err("Cumsum_bool", "Cumsum", {"x": np.array([True])}, "INVALID_ARGUMENT", axis=I(0))
    yield err("Cumsum_bad_axis", "Cumsum", {"x": x}, "OUT_OF_RANGE", axis=I(2))


def arg_ref(x, op, axis, keep, last):
    f = np.argmax if op == "ArgMax" else np.argmin
    if last:
        r = np.flip(x, axis)
        i = x.shape[axis] - 1 - f(r, axis=axis)
    else:
        i = f(x, axis=axis)
    return np.expand_dims(i, axis).astype(np.int64) if keep else i.astype(np.int64)


def arg_cases():
    x = rng.integers(0, 4, size=(4, 6)).astype(np.float32)  # many ties
    for op in ["ArgMax", "ArgMin"]:
        for axis in [0, 1, -1]:
            for keep in [0, 1]:
                for last in [0, 1]:
                    yield simple(f"{op}_a{axis}_k{keep}_l{last}", op, {"x": x}, arg_ref(x, op, axis, keep, last), axis=I(axis),
                                 keepdims=I(keep), select_last_index=I(last))
        xi = rng.integers(-5, 5, size=(3, 4, 2)).astype(np.int32)
        yield simple(f"{op}_int32", op, {"x": xi}, arg_ref(xi, op, 1, 1, 0), axis=I(1))
        yield simple(f"{op}_rank1", op, {"x": x[0]}, arg_ref(x[0], op, 0, 0, 1), keepdims=I(0), select_last_index=I(1))
        yield Case(f"{op}_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node(op, ["t"], ["y"], axis=I(1))],
                   {"x": x}, {"y": arg_ref(x.T, op, 1, 1, 0)})
        yield err(f"{op}_empty_axis", op, {"x": np.zeros((0, 2), np.float32)}, "INVALID_ARGUMENT")
        yield err(f"{op}_rank0", op, {"x": np.array(1.0, np.float32)}, "INVALID_ARGUMENT")


def topk_ref(x, k, axis, largest):
    """Stable order: values descending (largest) or ascending, ties by the lower index (ranks avoid
    integer overflow when negating)."""
    xm = np.moveaxis(x, axis, -1)
    rank = np.unique(xm, return_inverse=True)[1].reshape(xm.shape)
    idx = np.argsort(-rank if largest else rank, axis=-1, kind="stable")[..., :k]
    vals = np.take_along_axis(xm, idx, -1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis).astype(np.int64)


def topk(name, x, k, **attrs):
    axis, largest = attrs.get("axis", -1), attrs.get("largest", 1)
    v, i = topk_ref(x, k, axis, largest)
    a = {"k": I(k)}
    a.update({key: I(val) for key, val in attrs.items()})
    return Case(name, [node("TopK", ["x"], ["v", "i"], **a)], {"x": x}, {"v": v, "i": i})


def topk_cases():
    x = rng.integers(0, 5, size=(3, 8)).astype(np.float32)  # ties
    for largest in [1, 0]:
        for axis in [1, 0, -1]:
            k = 3 if axis != 0 else 2
            yield topk(f"TopK_l{largest}_a{axis}", x, k, axis=axis, largest=largest)
    yield topk("TopK_k0", x, 0)
    yield topk("TopK_k_full", x, 8, largest=0)
    xi = np.array([[-2**31, 5, 2**31 - 1, 0, -1, 5]], np.int32)
    yield topk("TopK_int32_extremes_largest", xi, 4)
    yield topk("TopK_int32_extremes_smallest", xi, 4, largest=0)
    xu = np.array([0, 255, 7, 255, 1], np.uint8)
    yield topk("TopK_uint8_largest", xu, 3)
    xl = np.array([-2**63, 2**62, -1, 2**63 - 1], np.int64)
    yield topk("TopK_int64_extremes", xl, 2)
    yield topk("TopK_f64_rank1", uni(9).astype(np.float64), 4)
    yield Case("TopK_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("TopK", ["t"], ["v", "i"], k=I(2), axis=I(0))],
               {"x": x}, dict(zip(["v", "i"], topk_ref(x.T, 2, 0, 1))))
    yield Case("TopK_k_too_large", [node("TopK", ["x"], ["v", "i"], k=I(9))], {"x": x}, {}, expect_error="OUT_OF_RANGE", modes=["lazy"])
    yield Case("TopK_rank0", [node("TopK", ["x"], ["v", "i"], k=I(0))], {"x": np.array(1.0, np.float32)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])


def symbolic_and_dtype_cases():
    x = uni(4, 6)
    yield Case("Reduce_mean_symbolic_axis", [node("Reduce", ["x"], ["y"], kind=S("mean"), axes=IS([0]))], {"x": x},
               {"y": x.mean(0)}, dims={"x": [sym(0), 6]})
    xi = rng.integers(-9, 9, size=(5, 2)).astype(np.int32)
    yield Case("Reduce_int_mean_symbolic", [node("Reduce", ["x"], ["y"], kind=S("mean"), axes=IS([0]))], {"x": xi},
               {"y": reduce_ref(xi, "mean", [0], 0)}, dims={"x": [sym(0), 2]})
    yield Case("TopK_symbolic_rows", [node("TopK", ["x"], ["v", "i"], k=I(2))], {"x": x}, dict(zip(["v", "i"], topk_ref(x, 2, -1, 1))),
               dims={"x": [sym(0), 6]})
    h = x.astype(np.float16)
    yield simple("Reduce_sum_f16", "Reduce", {"x": h}, h.astype(np.float32).sum(1).astype(np.float16), atol=1e-2, rtol=1e-2,
                 kind=S("sum"), axes=IS([1]))
    yield simple("Cumsum_f64", "Cumsum", {"x": x.astype(np.float64)}, np.cumsum(x.astype(np.float64), 1), axis=I(1))
    yield simple("ArgMin_f16_last", "ArgMin", {"x": np.round(h)}, arg_ref(np.round(h), "ArgMin", 1, 0, 1), axis=I(1), keepdims=I(0),
                 select_last_index=I(1))
    yield topk("TopK_f16_smallest", np.round(h), 3, largest=0)


def cases():
    yield from symbolic_and_dtype_cases()
    yield from reduce_cases()
    yield from cumsum_cases()
    yield from arg_cases()
    yield from topk_cases()
