"""DenseSolve and BatchedDenseSolve against numpy.linalg.solve (float64 oracle), with the
residual A x - b as a second check where it matters. Well-conditioned random systems (diagonal
shifted), systems that need pivoting (zero leading pivot), float32/float64/float16, b as a vector
or a matrix, n = 1, a Transpose feeding A (non-contiguous), singular A (an error), bad shapes.
Also the built-in custom op rlx_linalg_batched_dense_solve (rlx/registry.h: the CUDA LU kernel on
the GPU, BatchedDenseSolve elsewhere) on the same kinds of systems, n up to 128."""
import numpy as np

from opcase import G, IS, S, Case, node, simple

SOLVE = "rlx_linalg_batched_dense_solve"


def builtin_solve(name, a, b, **kw):
    """The built-in op on float32 systems; x against numpy's float64 solve, status all 0."""
    a, b = a.astype(np.float32), b.astype(np.float32)
    want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64)[..., None])[..., 0]
    n = a.shape[-1]
    tol = 2e-5 * max(1.0, np.sqrt(n))
    return Case(f"builtin_solve_{name}", [node("Custom", ["a", "b"], ["x", "status"], name=S(SOLVE))], {"a": a, "b": b},
                {"x": want.astype(np.float32), "status": np.zeros(a.shape[0], np.int32)}, atol=tol, rtol=tol, **kw)

rng = np.random.default_rng(5)


def system(n, batch=None, k=None):
    shape = (n, n) if batch is None else (batch, n, n)
    a = rng.standard_normal(shape) + n * np.eye(n)
    bshape = ((n,) if k is None else (n, k)) if batch is None else (batch, n)
    return a, rng.standard_normal(bshape)


def cases():
    for dt, atol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        name = dt.__name__
        for n in (1, 3, 8, 33):
            a, b = system(n)
            yield simple(f"DenseSolve_{name}_n{n}_vec", "DenseSolve", {"a": a.astype(dt), "b": b.astype(dt)},
                         np.linalg.solve(a.astype(dt).astype(np.float64), b.astype(dt).astype(np.float64)).astype(dt), atol=atol, rtol=atol)
        a, b = system(6, k=4)
        yield simple(f"DenseSolve_{name}_matrix_rhs", "DenseSolve", {"a": a.astype(dt), "b": b.astype(dt)},
                     np.linalg.solve(a.astype(dt).astype(np.float64), b.astype(dt).astype(np.float64)).astype(dt), atol=atol, rtol=atol)
        a, b = system(5, batch=4)
        want = np.linalg.solve(a.astype(dt).astype(np.float64), b.astype(dt).astype(np.float64)[..., None])[..., 0]
        yield simple(f"BatchedDenseSolve_{name}", "BatchedDenseSolve", {"a": a.astype(dt), "b": b.astype(dt)}, want.astype(dt),
                     atol=atol, rtol=atol)
    # 1x1 systems, scalar and matrix right-hand sides, batched (a separate path, see lower_linalg.c)
    a, b = system(1, k=3)
    yield simple("DenseSolve_n1_matrix_rhs", "DenseSolve", {"a": a, "b": b}, np.linalg.solve(a, b), atol=1e-14, rtol=1e-14)
    a, b = system(1, batch=3)
    yield simple("BatchedDenseSolve_n1", "BatchedDenseSolve", {"a": a, "b": b}, b / a[:, :, 0], atol=1e-14, rtol=1e-14)
    yield simple("BatchedDenseSolve_empty_batch", "BatchedDenseSolve", {"a": np.zeros((0, 2, 2)), "b": np.zeros((0, 2))}, np.zeros((0, 2)))
    # empty systems (n = 0, k = 0): the empty solution (MLX's LU would divide by n * n; fuzz_graph)
    yield simple("DenseSolve_n0", "DenseSolve", {"a": np.zeros((0, 0)), "b": np.zeros(0)}, np.zeros(0))
    yield simple("DenseSolve_n0_matrix_rhs", "DenseSolve", {"a": np.zeros((0, 0), np.float32), "b": np.zeros((0, 3), np.float32)},
                 np.zeros((0, 3), np.float32))
    yield simple("DenseSolve_k0", "DenseSolve", {"a": np.eye(3), "b": np.zeros((3, 0))}, np.zeros((3, 0)))
    yield simple("BatchedDenseSolve_n0", "BatchedDenseSolve", {"a": np.zeros((2, 0, 0)), "b": np.zeros((2, 0))}, np.zeros((2, 0)))
    # pivoting needed: A[0,0] = 0 (no LU without row exchanges)
    a = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    yield simple("DenseSolve_zero_pivot_needs_pivoting", "DenseSolve", {"a": a, "b": b}, np.linalg.solve(a, b), atol=1e-13, rtol=1e-13)
    ab = np.stack([a, a[::-1].copy()])
    bb = np.stack([b, b * 2])
    yield simple("BatchedDenseSolve_pivoting", "BatchedDenseSolve", {"a": ab, "b": bb},
                 np.linalg.solve(ab, bb[..., None])[..., 0], atol=1e-13, rtol=1e-13)
    # residual: A x reproduces b (a second, oracle-free check through MatMul)
    a, b = system(7, k=2)
    yield Case("DenseSolve_residual", [node("DenseSolve", ["a", "b"], ["x"]), node("MatMul", ["a", "x"], ["ax"])],
               {"a": a, "b": b}, {"ax": b}, atol=1e-12, rtol=1e-12)
    # float16 solves in float32
    a, b = system(4)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    yield simple("DenseSolve_f16", "DenseSolve", {"a": a16, "b": b16},
                 np.linalg.solve(a16.astype(np.float64), b16.astype(np.float64)).astype(np.float16), atol=2e-3, rtol=2e-3)
    # non-contiguous A: the transpose of the given matrix
    a, b = system(5)
    yield Case("DenseSolve_of_transpose", [node("Transpose", ["a"], ["at"], perm=IS([1, 0])), node("DenseSolve", ["at", "b"], ["x"])],
               {"a": a, "b": b}, {"x": np.linalg.solve(a.T, b)}, atol=1e-12, rtol=1e-12)
    # singular matrices (an exactly zero pivot: numpy raises LinAlgError) fail with INVALID_ARGUMENT
    # "singular matrix" in every mode; the zero 2x2 float64 system is fuzz_graph's (MLX hung after
    # raising the singular error on its CPU stream, lower_linalg.c)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    singular = [("DenseSolve_singular", "DenseSolve", sing, np.ones(2)),
                ("DenseSolve_zero_matrix_f32", "DenseSolve", np.zeros((3, 3), np.float32), np.ones(3, np.float32)),
                ("DenseSolve_zero_2x2_f64", "DenseSolve", np.zeros((2, 2)), np.zeros(2)),
                ("DenseSolve_singular_matrix_rhs", "DenseSolve", sing, np.ones((2, 3))),
                ("DenseSolve_zero_1x1", "DenseSolve", np.zeros((1, 1)), np.ones(1)),
                ("BatchedDenseSolve_one_singular", "BatchedDenseSolve", np.stack([np.eye(2), sing]), np.ones((2, 2))),
                ("BatchedDenseSolve_n1_one_zero", "BatchedDenseSolve", np.array([[[2.0]], [[0.0]]]), np.ones((2, 1))),
                ("DenseSolve_singular_f16", "DenseSolve", sing.astype(np.float16), np.ones(2, np.float16))]
    for name, op, a, b in singular:
        try:
            np.linalg.solve(a.astype(np.float64), b.astype(np.float64) if op == "DenseSolve" else b[..., None])
            raise AssertionError(f"{name}: numpy solves it")
        except np.linalg.LinAlgError:
            pass
        yield Case(name, [node(op, ["a", "b"], ["x"])], {"a": a, "b": b}, {}, expect_error="INVALID_ARGUMENT",
                   expect_message="singular matrix")
    # a singular solve in an untaken If branch does not fail the run (the check counts under its guard)
    # and a nearly singular one is solved (no zero pivot): numpy's result, whatever its accuracy
    caps = [{"name": "ba", "dtype": "float64", "dims": [2, 2]}, {"name": "bb", "dtype": "float64", "dims": [2]}]
    solve = G({"inputs": caps, "nodes": [node("DenseSolve", ["ba", "bb"], ["bx"])], "outputs": [{"name": "bx"}]})
    keep = G({"inputs": caps, "nodes": [node("Add", ["bb", "bb"], ["bx"])], "outputs": [{"name": "bx"}]})
    branch = [node("If", ["c", "a", "b"], ["x"], then_branch=solve, else_branch=keep)]
    yield Case("If_untaken_branch_singular_solve", branch, {"c": np.array(False), "a": sing, "b": np.ones(2)}, {"x": 2 * np.ones(2)})
    yield Case("If_taken_branch_singular_solve", branch, {"c": np.array(True), "a": sing, "b": np.ones(2)}, {},
               expect_error="INVALID_ARGUMENT", expect_message="singular matrix")
    near = np.array([[1.0, 2.0], [2.0, 4.0 + 1e-9]])
    yield simple("DenseSolve_nearly_singular", "DenseSolve", {"a": near, "b": np.array([1.0, 3.0])},
                 np.linalg.solve(near, np.array([1.0, 3.0])), atol=1e-3, rtol=1e-4)
    # the built-in batched solve: random well-conditioned batches, pivoting, n up to its limit
    for n, batch in ((1, 3), (2, 64), (7, 5), (32, 16), (33, 4), (128, 3)):
        yield builtin_solve(f"n{n}_b{batch}", *system(n, batch=batch))
    yield builtin_solve("pivoting", ab, bb)
    yield builtin_solve("empty_batch", np.zeros((0, 4, 4)), np.zeros((0, 4)))
    one_singular = {"a": np.stack([np.eye(2), sing]).astype(np.float32), "b": np.ones((2, 2), np.float32)}
    yield Case("builtin_solve_singular_cpu", [node("Custom", ["a", "b"], ["x", "status"], name=S(SOLVE))], one_singular, {},
               expect_error="INVALID_ARGUMENT", expect_message="singular", cpu_only="the CPU path's solve fails the run")
    yield Case("builtin_solve_singular_gpu", [node("Custom", ["a", "b"], ["x", "status"], name=S(SOLVE))], one_singular,
               {"x": np.array([[1, 1], [np.nan, np.nan]], np.float32), "status": np.array([0, 1], np.int32)},
               gpu_only="the CUDA kernel reports a singular system in status")
    for what, a, b in (("n129", np.zeros((1, 129, 129), np.float32), np.zeros((1, 129), np.float32)),
                       ("float64", np.eye(2)[None], np.ones((1, 2))),
                       ("b_shape", np.zeros((2, 3, 3), np.float32), np.zeros((2, 4), np.float32))):
        yield Case(f"builtin_solve_bad_{what}", [node("Custom", ["a", "b"], ["x", "status"], name=S(SOLVE))], {"a": a, "b": b}, {},
                   expect_error="INVALID_ARGUMENT", modes=["lazy"], cpu_only=None if what != "float64" else "float64")
    # shape and dtype errors
    f = np.float32
    bad = [("not_square", "DenseSolve", np.zeros((2, 3), f), np.zeros(2, f)),
           ("b_mismatch", "DenseSolve", np.eye(3, dtype=f), np.zeros(2, f)),
           ("b_rank3", "DenseSolve", np.eye(2, dtype=f), np.zeros((2, 1, 1), f)),
           ("dtype_mismatch", "DenseSolve", np.eye(2, dtype=f), np.zeros(2)),
           ("int", "DenseSolve", np.eye(2, dtype=np.int32), np.zeros(2, np.int32)),
           ("batched_rank", "BatchedDenseSolve", np.eye(2, dtype=f), np.zeros(2, f)),
           ("batched_b_batch", "BatchedDenseSolve", np.zeros((3, 2, 2), f), np.zeros((2, 2), f))]
    for name, op, a, b in bad:
        yield Case(f"{op}_{name}", [node(op, ["a", "b"], ["x"])], {"a": a, "b": b}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
