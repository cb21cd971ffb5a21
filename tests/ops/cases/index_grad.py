"""CumsumBackward and GatherBackward against central finite differences of the forward ops
(numpy.cumsum with the exclusive/reverse variants, numpy.take), computed in float64: the gradient
of L(x) = sum(dy * f(x)) with respect to every x_i. Both ops are linear, so the differences are
exact up to rounding; closed forms (a reversed cumsum, numpy.add.at) are checked against them here
too. Repeated and negative indices, index ranks 0..2, every axis, a Transpose feeding dy, errors."""
import numpy as np

from nn_ref import fd_grad
from opcase import IS, Case, I, node, simple

rng = np.random.default_rng(3)


def cumsum_fwd(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    y = np.cumsum(y, axis=axis) - (y if exclusive else 0)
    return np.flip(y, axis) if reverse else y


def cases():
    for shape, axis in [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((1, 4), 1)]:
        for exclusive in (0, 1):
            for reverse in (0, 1):
                x = rng.standard_normal(shape)
                dy = rng.standard_normal(shape)
                want = fd_grad(lambda v: cumsum_fwd(v, axis, exclusive, reverse), x, dy, eps=0.5)  # linear: exact
                closed = cumsum_fwd(dy, axis, exclusive, not reverse)  # the opposite-direction scan
                assert np.allclose(want, closed)
                for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
                    dims = "x".join(map(str, shape))
                    yield simple(f"CumsumBackward_{dims}_ax{axis}_ex{exclusive}_rev{reverse}_{dt.__name__}", "CumsumBackward",
                                 {"dy": dy.astype(dt)}, want.astype(dt), atol=tol, rtol=tol, axis=I(axis), exclusive=I(exclusive),
                                 reverse=I(reverse))
    dyi = rng.integers(-5, 5, size=(4, 3)).astype(np.int32)
    yield simple("CumsumBackward_int32", "CumsumBackward", {"dy": dyi}, cumsum_fwd(dyi, 0, 0, 1).astype(np.int32), axis=I(0))
    # dy made non-contiguous by a Transpose
    dy = rng.standard_normal((5, 3))
    yield Case("CumsumBackward_of_transpose", [node("Transpose", ["dy"], ["t"], perm=IS([1, 0])),
                                              node("CumsumBackward", ["t"], ["dx"], axis=I(1))],
               {"dy": dy}, {"dx": cumsum_fwd(dy.T, 1, 0, 1)}, atol=1e-12)
    # GatherBackward: every axis, index ranks 0..2, repeated and negative indices
    for shape, axis, idx in [((6,), 0, np.array([0, 2, 2, 5, 2])),
                             ((4, 5), 0, np.array([[3, -1], [0, 3]])),
                             ((4, 5), 1, np.array([4, -5, 1, 1])),
                             ((3, 4, 2), 1, np.array(2)),
                             ((3, 4, 2), -1, np.array([[1, 0, 1]])),
                             ((2, 3), 1, np.array([], np.int64))]:
        x = rng.standard_normal(shape)
        fwd = lambda v: np.take(v, idx, axis=axis)
        dy = rng.standard_normal(fwd(x).shape)
        want = fd_grad(fwd, x, dy, eps=0.5)
        closed = np.zeros(shape)
        np.add.at(np.moveaxis(closed, axis, 0), np.where(idx < 0, idx + shape[axis], idx),
                  np.moveaxis(dy, list(range(axis % len(shape), axis % len(shape) + idx.ndim)), list(range(idx.ndim))))
        assert np.allclose(want, closed)
        for dt, it, tol in ((np.float64, np.int64, 1e-12), (np.float32, np.int32, 1e-5)):
            yield simple(f"GatherBackward_{'x'.join(map(str, shape))}_ax{axis}_idx{'x'.join(map(str, idx.shape)) or 'scalar'}_{dt.__name__}", "GatherBackward",
                         {"dy": dy.astype(dt), "idx": idx.astype(it)}, want.astype(dt), atol=tol, rtol=tol, axis=I(axis),
                         shape=IS(shape))
    # a chain: Gather then GatherBackward of ones counts how often each row is taken
    idx = np.array([1, 1, 3, 0, 1])
    x = rng.standard_normal((4, 2)).astype(np.float32)
    yield Case("GatherBackward_counts", [node("Gather", ["x", "idx"], ["y"], axis=I(0)), node("Mul", ["y", "zero"], ["z"]),
                                        node("Add", ["z", "one"], ["ones"]),
                                        node("GatherBackward", ["ones", "idx"], ["dx"], axis=I(0), shape=IS([4, 2]))],
               {"x": x, "idx": idx}, {"dx": np.repeat(np.bincount(idx, minlength=4)[:, None], 2, 1).astype(np.float32)},
               constants={"zero": np.float32(0), "one": np.float32(1)})
    # errors
    f = np.float32
    bad = [("GatherBackward_float_idx", "GatherBackward", {"dy": np.zeros(2, f), "idx": np.zeros(2, f)}, {"shape": IS([3])}),
           ("GatherBackward_dy_shape", "GatherBackward", {"dy": np.zeros((2, 2), f), "idx": np.zeros(3, np.int64)},
            {"shape": IS([4, 2])}),
           ("GatherBackward_axis", "GatherBackward", {"dy": np.zeros(2, f), "idx": np.zeros(2, np.int64)}, {"shape": IS([3]), "axis": I(1)}),
           ("GatherBackward_no_shape", "GatherBackward", {"dy": np.zeros(2, f), "idx": np.zeros(2, np.int64)}, {}),
           ("CumsumBackward_axis", "CumsumBackward", {"dy": np.zeros((2, 3), f)}, {"axis": I(2)}),
           ("CumsumBackward_rank0", "CumsumBackward", {"dy": f(1)}, {"axis": I(0)}),
           ("CumsumBackward_bool", "CumsumBackward", {"dy": np.zeros(3, bool)}, {"axis": I(0)})]
    for name, op, inputs, attrs in bad:
        code = "OUT_OF_RANGE" if name.endswith("_axis") else "INVALID_ARGUMENT"
        yield Case(name, [node(op, list(inputs), ["dx"], **attrs)], inputs, {}, expect_error=code, modes=["lazy"])
