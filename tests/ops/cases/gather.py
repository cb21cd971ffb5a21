"""Gather and scatter ops against numpy: Gather (numpy.take), GatherElements (take_along_axis),
GatherND (batch_dims), ScatterAdd, ScatterElements and ScatterND (every reduction). Indices are
int32 and int64 (and uint8), negative indices count from the end; edge shapes include scalar
indices, size-1 dims and non-contiguous data (a Transpose feeding the op); plus error cases."""
import numpy as np

from opcase import IS, Case, I, S, error_case as err, node, simple, sym

rng = np.random.default_rng(99)


def uni(*shape, dtype=np.float32):
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def wrap(idx, dim):
    return np.where(idx < 0, idx + dim, idx)


def gather_elements(x, idx, axis):
    """ONNX GatherElements: out[.., i, ..] = x[.., idx[.., i, ..], ..]; idx may be smaller than x off the axis."""
    sl = tuple(slice(None) if a == axis % x.ndim else slice(0, d) for a, d in enumerate(idx.shape))
    return np.take_along_axis(x[sl], wrap(idx, x.shape[axis]), axis=axis)


def gather_nd(data, idx, b):
    """ONNX GatherND with batch_dims b (loops over the batch and index positions)."""
    bshape, k = data.shape[:b], idx.shape[-1]
    out = np.empty(idx.shape[:-1] + data.shape[b + k:], data.dtype)
    for bi in np.ndindex(*bshape):
        for pi in np.ndindex(*idx.shape[b:-1]):
            pos = tuple(wrap(idx[bi + pi], np.array(data.shape[b:b + k])))
            out[bi + pi] = data[bi + pos]
    return out


REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def scatter_elements(data, idx, upd, axis, reduction):
    out = data.copy()
    idx = wrap(idx, data.shape[axis])
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[axis] = idx[pos]
        tgt = tuple(tgt)
        out[tgt] = upd[pos] if reduction == "none" else REDUCE[reduction](out[tgt], upd[pos])
    return out


def scatter_nd(data, idx, upd, reduction):
    out = data.copy()
    k = idx.shape[-1]
    for pos in np.ndindex(*idx.shape[:-1]):
        tgt = tuple(wrap(idx[pos], np.array(data.shape[:k])))
        out[tgt] = upd[pos] if reduction == "none" else REDUCE[reduction](out[tgt], upd[pos])
    return out


def gather_cases():
    x = uni(4, 5, 3)
    for axis in [0, 1, -1]:
        dim = x.shape[axis]
        for dt in [np.int32, np.int64]:
            idx = rng.integers(-dim, dim, size=(2, 3)).astype(dt)
            yield simple(f"Gather_axis{axis}_{np.dtype(dt).name}", "Gather", {"x": x, "i": idx},
                         np.take(x, wrap(idx, dim), axis=axis), axis=I(axis))
    yield simple("Gather_scalar_index", "Gather", {"x": x, "i": np.array(-1, np.int64)}, x[-1], axis=I(0))
    yield simple("Gather_uint8_index", "Gather", {"x": x, "i": np.array([4, 0, 2], np.uint8)}, x[:, [4, 0, 2]], axis=I(1))
    xi = np.arange(10, dtype=np.int64) * 3
    yield simple("Gather_int64_data_rank1", "Gather", {"x": xi, "i": np.array([[9, -10], [0, 5]], np.int32)},
                 xi[[[9, 0], [0, 5]]], axis=I(0))
    yield simple("Gather_empty_index", "Gather", {"x": x, "i": np.zeros((0,), np.int64)}, x[:, []], axis=I(1))
    xt = uni(3, 6)
    yield Case("Gather_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Gather", ["t", "i"], ["y"], axis=I(0))],
               {"x": xt, "i": np.array([5, -6, 2], np.int64)}, {"y": xt.T[[5, 0, 2]]})
    yield err("Gather_float_index", "Gather", {"x": x, "i": np.array([0.0], np.float32)}, "INVALID_ARGUMENT")
    yield err("Gather_bad_axis", "Gather", {"x": x, "i": np.array([0], np.int64)}, "OUT_OF_RANGE", axis=I(3))
    yield err("Gather_rank0_data", "Gather", {"x": np.array(1.0, np.float32), "i": np.array(0, np.int64)}, "INVALID_ARGUMENT")


def gather_elements_cases():
    x = uni(3, 4)
    for axis in [0, 1, -2]:
        dim = x.shape[axis]
        idx = rng.integers(-dim, dim, size=(3, 4)).astype(np.int64)
        yield simple(f"GatherElements_axis{axis}", "GatherElements", {"x": x, "i": idx},
                     gather_elements(x, idx, axis), axis=I(axis))
    # indices smaller than the data along the other axes (ONNX allows it)
    idx = np.array([[2, 0], [1, 1]], np.int32)
    yield simple("GatherElements_smaller_index", "GatherElements", {"x": x, "i": idx},
                 gather_elements(x, idx, 0), axis=I(0))
    idx = np.array([[3, 0, 1, 2, 3, 0]], np.int64)
    yield simple("GatherElements_longer_axis", "GatherElements", {"x": x, "i": idx}, gather_elements(x, idx, 1), axis=I(1))
    x3 = uni(2, 3, 4).astype(np.float64)
    idx3 = rng.integers(0, 3, size=(2, 5, 4)).astype(np.int32)
    yield simple("GatherElements_3d_f64", "GatherElements", {"x": x3, "i": idx3}, gather_elements(x3, idx3, 1), axis=I(1))
    yield Case("GatherElements_of_transpose",
               [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("GatherElements", ["t", "i"], ["y"], axis=I(1))],
               {"x": x, "i": np.array([[2, 0, 1], [0, 0, 0], [1, 2, 2], [2, 1, 0]], np.int64)},
               {"y": np.take_along_axis(x.T, np.array([[2, 0, 1], [0, 0, 0], [1, 2, 2], [2, 1, 0]]), axis=1)})
    yield err("GatherElements_rank_mismatch", "GatherElements", {"x": x, "i": np.array([0, 1], np.int64)}, "INVALID_ARGUMENT")
    yield err("GatherElements_float_index", "GatherElements", {"x": x, "i": x}, "INVALID_ARGUMENT")
    yield err("GatherElements_index_too_wide", "GatherElements", {"x": x, "i": np.zeros((3, 5), np.int64)}, "INVALID_ARGUMENT")


def gather_nd_cases():
    data = uni(2, 3, 4, 5)
    specs = [(0, (4, 2)), (0, (3, 4)), (0, (2, 2, 1)), (1, (2, 3, 2)), (2, (2, 3, 1)), (1, (2, 3))]
    for b, ishape in specs:
        k = ishape[-1]
        hi = np.array(data.shape[b:b + k])
        idx = (rng.integers(0, 1 << 20, size=ishape) % hi - (rng.integers(0, 2, size=ishape) * hi)).astype(np.int64)
        yield simple(f"GatherND_b{b}_{'x'.join(map(str, ishape))}", "GatherND", {"x": data, "i": idx}, gather_nd(data, idx, b),
                     batch_dims=I(b))
    idx32 = np.array([[0, 1], [1, 0]], np.int32)
    xi = np.arange(4, dtype=np.int32).reshape(2, 2)
    yield simple("GatherND_int32_full_depth", "GatherND", {"x": xi, "i": idx32}, gather_nd(xi, idx32, 0))
    yield err("GatherND_too_deep", "GatherND", {"x": xi, "i": np.zeros((1, 3), np.int64)}, "INVALID_ARGUMENT")
    yield err("GatherND_batch_mismatch", "GatherND", {"x": data, "i": np.zeros((3, 1), np.int64)}, "INVALID_ARGUMENT", batch_dims=I(1))


def scatter_add_cases():
    upd = uni(5, 3)
    idx = np.array([0, 2, 0, -1, 2], np.int64)
    want = np.zeros((4, 3), np.float32)
    np.add.at(want, wrap(idx, 4), upd)
    yield simple("ScatterAdd_axis0_duplicates", "ScatterAdd", {"u": upd, "i": idx}, want, shape=IS([4, 3]))
    upd1 = uni(2, 4, 3)
    idx1 = np.array([1, 1, 0, 4], np.int32)
    want1 = np.zeros((2, 5, 3), np.float32)
    for j, t in enumerate(idx1):
        want1[:, t] += upd1[:, j]
    yield simple("ScatterAdd_axis1", "ScatterAdd", {"u": upd1, "i": idx1}, want1, shape=IS([2, 5, 3]), axis=I(1))
    yield err("ScatterAdd_shape_mismatch", "ScatterAdd", {"u": upd, "i": idx[:4]}, "INVALID_ARGUMENT", shape=IS([4, 3]))


def scatter_elements_cases():
    data = uni(4, 5)
    for red in ["none", "add", "mul", "max", "min"]:
        for axis in [0, 1]:
            dim = data.shape[axis]
            if red == "none":  # distinct targets along the axis (duplicates are undefined then)
                idx = np.stack([rng.permutation(dim)[:3] for _ in range(2)], axis=1 - axis) if axis == 0 else \
                    np.stack([rng.permutation(dim)[:3] for _ in range(2)])
                idx = idx - dim * rng.integers(0, 2, size=idx.shape)
            else:
                idx = rng.integers(-dim, dim, size=(3, 2) if axis == 0 else (2, 3))
            idx = idx.astype(np.int64)
            upd = uni(*idx.shape)
            yield simple(f"ScatterElements_{red}_axis{axis}", "ScatterElements", {"d": data, "i": idx, "u": upd},
                         scatter_elements(data, idx, upd, axis, red), axis=I(axis), reduction=S(red))
    di = np.arange(6, dtype=np.int32).reshape(2, 3)
    ii = np.array([[1, 1, 0]], np.int32)
    ui = np.array([[10, 20, 30]], np.int32)
    yield simple("ScatterElements_int32_add", "ScatterElements", {"d": di, "i": ii, "u": ui},
                 scatter_elements(di, ii, ui, 0, "add"), reduction=S("add"))
    yield err("ScatterElements_index_too_wide", "ScatterElements", {"d": di, "i": np.zeros((1, 4), np.int32), "u": np.zeros((1, 4), np.int32)},
              "INVALID_ARGUMENT")
    yield err("ScatterElements_bad_reduction", "ScatterElements", {"d": di, "i": ii, "u": ui}, "INVALID_ARGUMENT", reduction=S("sub"))
    yield err("ScatterElements_dtype_mismatch", "ScatterElements", {"d": di, "i": ii, "u": ui.astype(np.float32)}, "INVALID_ARGUMENT")
    yield err("ScatterElements_shape_mismatch", "ScatterElements", {"d": di, "i": ii, "u": np.zeros((1, 2), np.int32)},
              "INVALID_ARGUMENT")


def scatter_nd_cases():
    data = uni(4, 3, 2)
    specs = [("none", (2, 3)), ("add", (5, 1)), ("mul", (3, 2)), ("max", (4, 3)), ("min", (2, 2, 1))]
    for red, ishape in specs:
        k = ishape[-1]
        hi = np.array(data.shape[:k])
        if red == "none":  # distinct targets
            flat = rng.permutation(int(np.prod(hi)))[:int(np.prod(ishape[:-1]))]
            idx = np.stack(np.unravel_index(flat, tuple(hi)), -1).reshape(ishape)
        else:
            idx = rng.integers(0, 1 << 20, size=ishape) % hi
        idx = (idx - hi * rng.integers(0, 2, size=ishape)).astype(np.int64)
        upd = uni(*(ishape[:-1] + data.shape[k:]))
        yield simple(f"ScatterND_{red}_k{k}", "ScatterND", {"d": data, "i": idx, "u": upd}, scatter_nd(data, idx, upd, red),
                     reduction=S(red))
    di = np.zeros(5, np.int64)
    ii = np.array([[1], [3], [1]], np.int32)
    ui = np.array([4, 5, 6], np.int64)
    yield simple("ScatterND_int64_add_rank1", "ScatterND", {"d": di, "i": ii, "u": ui}, scatter_nd(di, ii, ui, "add"), reduction=S("add"))
    yield err("ScatterND_updates_shape", "ScatterND", {"d": data, "i": np.zeros((2, 1), np.int64), "u": uni(2, 3)}, "INVALID_ARGUMENT")
    yield err("ScatterND_too_deep", "ScatterND", {"d": di, "i": np.zeros((1, 2), np.int64), "u": np.zeros(1, np.int64)},
              "INVALID_ARGUMENT")
    # valid, but MLX's scatter would need updates of rank 3 + 7 (fuzz_graph: written past a rank-8 shape)
    d7 = np.zeros((1, 1, 1, 1, 1, 1, 2), np.float32)
    yield err("ScatterND_updates_rank_over_8", "ScatterND", {"d": d7, "i": np.zeros((1, 1, 1, 3), np.int64), "u": d7}, "UNIMPLEMENTED")


def symbolic_and_dtype_cases():
    x = uni(5, 3)
    idx = np.array([4, -5, 2], np.int64)
    yield Case("Gather_symbolic_data", [node("Gather", ["x", "i"], ["y"])], {"x": x, "i": idx}, {"y": x[wrap(idx, 5)]},
               dims={"x": [sym(0), 3]})
    yield Case("GatherElements_symbolic", [node("GatherElements", ["x", "i"], ["y"], axis=I(0))],
               {"x": x, "i": np.array([[4, 0, -1]], np.int64)}, {"y": gather_elements(x, np.array([[4, 0, -1]]), 0)},
               dims={"x": [sym(0), sym(1)], "i": [1, sym(1)]})
    h = x.astype(np.float16)
    yield simple("Gather_f16", "Gather", {"x": h, "i": np.array([[1, 0]], np.int32)}, h[:, [[1, 0]]], axis=I(1))
    d64 = x.astype(np.float64)
    upd = uni(2, 3).astype(np.float64)
    ii = np.array([[1], [-1]], np.int64)
    yield simple("ScatterND_f64_max", "ScatterND", {"d": d64, "i": ii, "u": upd}, scatter_nd(d64, ii, upd, "max"), reduction=S("max"))
    b = rng.integers(0, 2, size=(4,)).astype(bool)
    yield simple("Gather_bool", "Gather", {"x": b, "i": np.array([3, 0], np.int64)}, b[[3, 0]])


def cases():
    yield from symbolic_and_dtype_cases()
    yield from gather_cases()
    yield from gather_elements_cases()
    yield from gather_nd_cases()
    yield from scatter_add_cases()
    yield from scatter_elements_cases()
    yield from scatter_nd_cases()
