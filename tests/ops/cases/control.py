"""Control flow (If, Assert, While, Scan) against numpy: sub-graphs as attributes, captures bound
positionally, params and constants that only sub-graphs declare, several outputs, While's
freeze once cond is false (also where the unrolled body would produce NaN), Scan's carries,
broadcasts, xs, trajectories and per-step outputs, symbolic dims, nesting, and build errors."""
import numpy as np

from opcase import DT, C, G, IS, Case, I, P, S, node, sym

rng = np.random.default_rng(77)
F32 = "float32"


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def sub(inputs, nodes, outputs, params=(), constants=()):
    """A sub-graph attribute: inputs = [(name, dtype, dims)], declared in binding order."""
    return G({"inputs": [{"name": n, "dtype": dt, "dims": list(d)} for n, dt, d in inputs],
              "params": [P(p) for p in params], "constants": [C(c) for c in constants],
              "nodes": nodes, "outputs": [{"name": o} for o in outputs]})


def if_cases():
    x, y = uni((3, 4)), uni((3, 4))
    caps = [("a", F32, (3, 4)), ("b", F32, (3, 4))]
    then_b = sub(caps, [node("Add", ["a", "b"], ["s"]), node("Mul", ["a", "b"], ["p"])], ["s", "p"])
    else_b = sub(caps, [node("Sub", ["a", "b"], ["s"]), node("Neg", ["a"], ["p"])], ["s", "p"])
    for c in (True, False):
        out = {"o1": x + y, "o2": x * y} if c else {"o1": x - y, "o2": -x}
        yield Case(f"If_two_outputs_{c}", [node("If", ["c", "x", "y"], ["o1", "o2"], then_branch=then_b, else_branch=else_b)],
                   {"c": np.array(c), "x": x, "y": y}, out)
    # per-element cond [3,1] broadcast into [3,4] outputs; a rank-1 single-element cond
    cv = np.array([[True], [False], [True]])
    yield Case("If_cond_per_row", [node("If", ["c", "x", "y"], ["o1", "o2"], then_branch=then_b, else_branch=else_b)],
               {"c": cv, "x": x, "y": y}, {"o1": np.where(cv, x + y, x - y), "o2": np.where(cv, x * y, -x)})
    one = sub([("a", F32, (3, 4))], [node("Exp", ["a"], ["e"])], ["e"])
    other = sub([("a", F32, (3, 4))], [node("Tanh", ["a"], ["e"])], ["e"])
    yield Case("If_cond_one_element", [node("If", ["c", "x"], ["o"], then_branch=one, else_branch=other)],
               {"c": np.array([False]), "x": x}, {"o": np.tanh(x)})
    # no captures: each branch returns its own constant (as ONNX test_if)
    k1, k2 = np.arange(5, dtype=np.float32), np.arange(5, dtype=np.float32)[::-1].copy()
    yield Case("If_constants_only", [node("If", ["c"], ["o"], then_branch=sub([], [], ["k1"], constants=["k1"]),
                                          else_branch=sub([], [], ["k2"], constants=["k2"]))],
               {"c": np.array(False)}, {"o": k2}, sub_constants={"k1": k1, "k2": k2})
    # params that only the branches declare (W in then, bias in else), also compiled
    w, bias = uni((4, 2)), uni((3, 2))
    pb_then = sub([("a", F32, (3, 4))], [node("MatMul", ["a", "W"], ["m"])], ["m"], params=["W"])
    pb_else = sub([("a", F32, (3, 4))], [node("Slice", ["a"], ["s"], starts=IS([0]), ends=IS([2]), axes=IS([1])),
                                         node("Add", ["s", "bias"], ["m"])], ["m"], params=["bias"])
    for c in (True, False):
        yield Case(f"If_subgraph_params_{c}", [node("If", ["c", "x"], ["o"], then_branch=pb_then, else_branch=pb_else)],
                   {"c": np.array(c), "x": x}, {"o": x @ w if c else x[:, :2] + bias}, sub_params={"W": w, "bias": bias},
                   atol=1e-5)
    # a param shared by the graph and a branch
    shared = sub([("a", F32, (3, 4))], [node("Mul", ["a", "W2"], ["m"])], ["m"], params=["W2"])
    w2 = uni((3, 4))
    yield Case("If_param_shared_with_graph", [node("If", ["c", "x"], ["o"], then_branch=shared, else_branch=one),
                                              node("Add", ["o", "W2"], ["r"])],
               {"c": np.array(True), "x": x}, {"r": x * w2 + w2}, params={"W2": w2})
    # integer outputs, a non-contiguous capture (Transpose feeding the If)
    xi = rng.integers(-9, 9, size=(4, 3)).astype(np.int32)
    ti = sub([("a", "int32", (3, 4))], [node("Mul", ["a", "a"], ["m"])], ["m"])
    ei = sub([("a", "int32", (3, 4))], [node("Neg", ["a"], ["m"])], ["m"])
    yield Case("If_int_transposed_capture", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])),
                                             node("If", ["c", "t"], ["o"], then_branch=ti, else_branch=ei)],
               {"c": np.array(True), "x": xi}, {"o": xi.T * xi.T})
    # symbolic dims: the graph input is [s0, 4]; the branches are written for [s0, 4] too
    sx = uni((5, 4))
    symb = sub([("a", F32, (sym(0), 4))], [node("Add", ["a", "a"], ["m"])], ["m"])
    syme = sub([("a", F32, (sym(0), 4))], [node("Reduce", ["a"], ["r"], kind=S("max"), axes=IS([1]), keepdims=I(1)),
                                           node("Sub", ["a", "r"], ["m"])], ["m"])
    for c in (True, False):
        yield Case(f"If_symbolic_dims_{c}", [node("If", ["c", "x"], ["o"], then_branch=symb, else_branch=syme)],
                   {"c": np.array(c), "x": sx}, {"o": sx + sx if c else sx - sx.max(1, keepdims=True)},
                   dims={"x": [sym(0), 4]})
    # errors
    one_out = sub(caps, [node("Add", ["a", "b"], ["s"])], ["s"])
    yield Case("If_error_output_count", [node("If", ["c", "x", "y"], ["o1", "o2"], then_branch=then_b, else_branch=one_out)],
               {"c": np.array(True), "x": x, "y": y}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    as_int = sub(caps, [node("Cast", ["a"], ["s"], to=DT("int32"))], ["s"])
    yield Case("If_error_output_type", [node("If", ["c", "x", "y"], ["o"], then_branch=one_out, else_branch=as_int)],
               {"c": np.array(True), "x": x, "y": y}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("If_error_capture_count", [node("If", ["c", "x"], ["o"], then_branch=one_out, else_branch=one_out)],
               {"c": np.array(True), "x": x}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("If_error_capture_type", [node("If", ["c", "x", "y"], ["o"], then_branch=one_out, else_branch=one_out)],
               {"c": np.array(True), "x": x, "y": uni((3, 5))}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("If_error_cond_not_bool", [node("If", ["c", "x"], ["o"], then_branch=one, else_branch=other)],
               {"c": np.array(1, np.int32), "x": x}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("If_error_cond_enlarges_output", [node("If", ["c", "x"], ["o"], then_branch=one, else_branch=other)],
               {"c": np.ones((2, 3, 4), bool), "x": x}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("If_error_missing_branch", [node("If", ["c", "x"], ["o"], then_branch=one)],
               {"c": np.array(True), "x": x}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def while_oracle(cond, body, carried, max_it):
    for _ in range(max_it):
        if not cond(*carried):
            break
        carried = body(*carried)
    return carried


def while_cases():
    ci = [("i", "int64", ()), ("v", F32, (3,))]
    lt = lambda k: sub(ci, [node("Less", ["i", f"lim{k}"], ["c"])], ["c"], constants=[f"lim{k}"])
    body = sub(ci, [node("Add", ["i", "one"], ["i2"]), node("Mul", ["v", "v"], ["sq"]), node("Add", ["sq", "v"], ["v2"])],
               ["i2", "v2"], constants=["one"])
    consts = {"one": np.array(1, np.int64), "lim5": np.array(5, np.int64), "lim100": np.array(100, np.int64)}
    v0 = uni((3,), -0.5, 0.5)
    for name, lim, max_it in [("stops_at_cond", 5, 10), ("stops_at_max", 100, 4), ("zero_max", 5, 0)]:
        i, v = while_oracle(lambda i, v: i < lim, lambda i, v: (i + 1, v * v + v), (np.int64(0), v0), max_it)
        yield Case(f"While_{name}", [node("While", ["i0", "v0"], ["i", "v"], cond=lt(lim), body=body, max_iterations=I(max_it))],
                   {"i0": np.array(0, np.int64), "v0": v0}, {"i": np.array(i), "v": v}, sub_constants=consts)
    # cond false from the start: the carried values pass through
    yield Case("While_no_iteration", [node("While", ["i0", "v0"], ["i", "v"], cond=lt(5), body=body, max_iterations=I(3))],
               {"i0": np.array(7, np.int64), "v0": v0}, {"i": np.array(7, np.int64), "v": v0}, sub_constants=consts)
    # freeze: x = log(x) while x > 0.5; the unrolled steps after the stop see log of a negative
    # number (NaN) and must not leak into the result
    lc = [("x", F32, ())]
    half = sub(lc, [node("Greater", ["x", "h"], ["c"])], ["c"], constants=["h"])
    logb = sub(lc, [node("Log", ["x"], ["y"])], ["y"])
    (xf,) = while_oracle(lambda x: x > 0.5, lambda x: (np.log(x),), (np.float32(20),), 8)
    yield Case("While_freeze_hides_nan", [node("While", ["x0"], ["x"], cond=half, body=logb, max_iterations=I(8))],
               {"x0": np.array(20, np.float32)}, {"x": np.array(xf, np.float32)}, sub_constants={"h": np.array(0.5, np.float32)})
    # a param only the body declares, a carried matrix, a cond on a reduction
    w = uni((3, 3), -0.6, 0.6)
    mc = [("h", F32, (2, 3)), ("n", "int32", ())]
    mcond = sub(mc, [node("Reduce", ["h"], ["m"], kind=S("sum"), axes=IS([]), keepdims=I(0)),
                     node("Less", ["m", "cap"], ["c"])], ["c"], constants=["cap"])
    mbody = sub(mc, [node("MatMul", ["h", "W"], ["hw"]), node("Add", ["hw", "h"], ["h2"]), node("Add", ["n", "one32"], ["n2"])],
                ["h2", "n2"], params=["W"], constants=["one32"])
    h0 = uni((2, 3), 0.1, 0.5)
    hf, nf = while_oracle(lambda h, n: h.sum() < 40, lambda h, n: (h @ w + h, n + 1), (h0, np.int32(0)), 12)
    yield Case("While_subgraph_param", [node("While", ["h0", "n0"], ["h", "n"], cond=mcond, body=mbody, max_iterations=I(12))],
               {"h0": h0, "n0": np.array(0, np.int32)}, {"h": hf, "n": np.array(nf, np.int32)},
               sub_params={"W": w}, sub_constants={"cap": np.array(40, np.float32), "one32": np.array(1, np.int32)},
               atol=1e-4, rtol=1e-5)
    # errors
    w1 = dict(cond=lt(5), body=body)
    yield Case("While_error_missing_max_iterations", [node("While", ["i0", "v0"], ["i", "v"], **w1)],
               {"i0": np.array(0, np.int64), "v0": v0}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("While_error_negative_max_iterations", [node("While", ["i0", "v0"], ["i", "v"], max_iterations=I(-1), **w1)],
               {"i0": np.array(0, np.int64), "v0": v0}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    notbool = sub(ci, [node("Add", ["i", "one"], ["c"])], ["c"], constants=["one"])
    yield Case("While_error_cond_not_bool", [node("While", ["i0", "v0"], ["i", "v"], cond=notbool, body=body, max_iterations=I(3))],
               {"i0": np.array(0, np.int64), "v0": v0}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    short = sub(ci, [node("Add", ["i", "one"], ["i2"])], ["i2"], constants=["one"])
    yield Case("While_error_body_output_count", [node("While", ["i0", "v0"], ["i", "v"], cond=lt(5), body=short, max_iterations=I(3))],
               {"i0": np.array(0, np.int64), "v0": v0}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    widen = sub(ci, [node("Add", ["i", "one"], ["i2"]), node("Concat", ["v", "v"], ["v2"], axis=I(0))], ["i2", "v2"], constants=["one"])
    yield Case("While_error_body_output_type", [node("While", ["i0", "v0"], ["i", "v"], cond=lt(5), body=widen, max_iterations=I(3))],
               {"i0": np.array(0, np.int64), "v0": v0}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("While_error_carried_count", [node("While", ["i0"], ["i"], cond=lt(5), body=body, max_iterations=I(3))],
               {"i0": np.array(0, np.int64)}, {}, sub_constants=consts, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def scan_cases():
    # running sum with its trajectory (= cumsum)
    xs = uni((5, 2))
    add = sub([("s", F32, (2,)), ("x", F32, (2,))], [node("Add", ["s", "x"], ["s2"])], ["s2"])
    s0 = uni((2,))
    yield Case("Scan_cumsum_trajectory", [node("Scan", ["s0", "xs"], ["s", "traj"], body=add, length=I(5), num_xs=I(1),
                                               save_trajectory=I(1))],
               {"s0": s0, "xs": xs}, {"s": s0 + xs.sum(0), "traj": s0 + np.cumsum(xs, 0)}, atol=1e-5)
    # an RNN: carries (h, count), a broadcast weight, xs; per-step outputs (2h, sum h)
    T, W = 4, uni((3, 3), -0.8, 0.8)
    x4 = uni((T, 3))
    rnn = sub([("h", F32, (3,)), ("n", "int32", ()), ("w", F32, (3, 3)), ("x", F32, (3,))],
              [node("MatMul", ["w", "h"], ["wh"]), node("Add", ["wh", "x"], ["z"]), node("Tanh", ["z"], ["h2"]),
               node("Add", ["n", "one"], ["n2"]), node("Add", ["h2", "h2"], ["y1"]),
               node("Reduce", ["h2"], ["y2"], kind=S("sum"), axes=IS([0]), keepdims=I(0))],
              ["h2", "n2", "y1", "y2"], constants=["one"])
    h, n, hs, ns = uni((3,)), 0, [], []
    h0 = h.copy()
    for t in range(T):
        h = np.tanh(W @ h + x4[t])
        n += 1
        hs.append(h)
        ns.append(n)
    hs = np.stack(hs)
    for traj in (0, 1):
        outs = {"h": h, "n": np.array(n, np.int32)}
        names = ["h", "n"] + (["th", "tn"] if traj else []) + ["y1", "y2"]
        if traj:
            outs.update(th=hs, tn=np.array(ns, np.int32))
        outs.update(y1=2 * hs, y2=hs.sum(1))
        yield Case(f"Scan_rnn_bcast_ys_traj{traj}", [node("Scan", ["h0", "n0", "W", "xs"], names, body=rnn, length=I(T),
                                                          num_bcast=I(1), num_xs=I(1), save_trajectory=I(traj))],
                   {"h0": h0, "n0": np.array(0, np.int32), "W": W, "xs": x4}, outs, sub_constants={"one": np.array(1, np.int32)},
                   atol=1e-5)
    # the weight as a param only the body declares; xs made non-contiguous by a Transpose
    rnnp = sub([("h", F32, (3,)), ("x", F32, (3,))],
               [node("MatMul", ["Wp", "h"], ["wh"]), node("Add", ["wh", "x"], ["z"]), node("Tanh", ["z"], ["h2"])],
               ["h2"], params=["Wp"])
    yield Case("Scan_subgraph_param_transposed_xs", [node("Transpose", ["xt"], ["xs"], perm=IS([1, 0])),
                                                     node("Scan", ["h0", "xs"], ["h", "traj"], body=rnnp, length=I(T),
                                                          num_xs=I(1), save_trajectory=I(1))],
               {"h0": h0, "xt": x4.T.copy()}, {"h": h, "traj": hs}, sub_params={"Wp": W}, atol=1e-5)
    # no carries: a map over two xs; num_checkpoints is accepted (a backward-pass hint)
    a, b = uni((3, 2, 2)), uni((3, 2))
    mapb = sub([("a", F32, (2, 2)), ("b", F32, (2,))], [node("MatMul", ["a", "b"], ["y"])], ["y"])
    yield Case("Scan_map_no_carries", [node("Scan", ["a", "b"], ["y"], body=mapb, length=I(3), num_xs=I(2), num_checkpoints=I(2))],
               {"a": a, "b": b}, {"y": np.einsum("tij,tj->ti", a, b)}, atol=1e-5)
    # no xs: a fixed number of steps (fori_loop), rank-0 carry, per-step output
    dbl = sub([("c", F32, ())], [node("Add", ["c", "c"], ["c2"]), node("Neg", ["c2"], ["y"])], ["c2", "y"])
    yield Case("Scan_no_xs_scalar_carry", [node("Scan", ["c0"], ["c", "ys"], body=dbl, length=I(4))],
               {"c0": np.array(1.5, np.float32)}, {"c": np.array(24, np.float32), "ys": -np.array([3, 6, 12, 24], np.float32)})
    # length 0: carries pass through, stacked outputs are empty
    yield Case("Scan_length_zero", [node("Scan", ["s0", "xs"], ["s", "traj"], body=add, length=I(0), num_xs=I(1),
                                         save_trajectory=I(1))],
               {"s0": s0, "xs": np.zeros((0, 2), np.float32)}, {"s": s0, "traj": np.zeros((0, 2), np.float32)})
    # a carried If in the body: clamp the running sum at 1 (nested sub-graphs)
    cap = sub([("v", F32, (2,))], [node("Mul", ["v", "zero"], ["z"]), node("Add", ["z", "onef"], ["m"])], ["m"],
              constants=["zero", "onef"])
    keep = sub([("v", F32, (2,))], [node("Add", ["v", "zero"], ["m"])], ["m"], constants=["zero"])
    nested = sub([("s", F32, (2,)), ("x", F32, (2,))],
                 [node("Add", ["s", "x"], ["t"]), node("Reduce", ["t"], ["mx"], kind=S("max"), axes=IS([0]), keepdims=I(0)),
                  node("Greater", ["mx", "onef"], ["c"]), node("If", ["c", "t"], ["s2"], then_branch=cap, else_branch=keep)],
                 ["s2"], constants=["onef"])
    xp, s = uni((6, 2), 0.0, 0.6), np.zeros(2, np.float32)
    traj = []
    for t in range(6):
        s = s + xp[t]
        s = np.ones(2, np.float32) if s.max() > 1 else s
        traj.append(s)
    yield Case("Scan_nested_if", [node("Scan", ["s0", "xs"], ["s", "traj"], body=nested, length=I(6), num_xs=I(1),
                                       save_trajectory=I(1))],
               {"s0": np.zeros(2, np.float32), "xs": xp}, {"s": s, "traj": np.stack(traj)},
               sub_constants={"zero": np.array(0, np.float32), "onef": np.array(1, np.float32)}, atol=1e-6)
    # errors
    e = dict(expect_error="INVALID_ARGUMENT", modes=["lazy"])
    yield Case("Scan_error_xs_length", [node("Scan", ["s0", "xs"], ["s"], body=add, length=I(4), num_xs=I(1))],
               {"s0": s0, "xs": xs}, {}, **e)
    yield Case("Scan_error_num_xs", [node("Scan", ["s0", "xs"], ["s"], body=add, length=I(5), num_xs=I(3))],
               {"s0": s0, "xs": xs}, {}, **e)
    yield Case("Scan_error_missing_length", [node("Scan", ["s0", "xs"], ["s"], body=add, num_xs=I(1))],
               {"s0": s0, "xs": xs}, {}, **e)
    yield Case("Scan_error_body_inputs", [node("Scan", ["s0", "s0", "xs"], ["s", "s1"], body=add, length=I(5), num_xs=I(1))],
               {"s0": s0, "xs": xs}, {}, **e)
    two = sub([("s", F32, (2,)), ("t", F32, (2,)), ("x", F32, (2,))], [node("Add", ["s", "x"], ["s2"])], ["s2"])
    yield Case("Scan_error_too_few_body_outputs", [node("Scan", ["s0", "s0", "xs"], ["s", "t"], body=two, length=I(5), num_xs=I(1))],
               {"s0": s0, "xs": xs}, {}, **e)
    widen = sub([("s", F32, (2,)), ("x", F32, (2,))], [node("Concat", ["s", "x"], ["s2"], axis=I(0))], ["s2"])
    yield Case("Scan_error_carry_type", [node("Scan", ["s0", "xs"], ["s"], body=widen, length=I(5), num_xs=I(1))],
               {"s0": s0, "xs": xs}, {}, **e)
    yield Case("Scan_error_negative_checkpoints", [node("Scan", ["s0", "xs"], ["s"], body=add, length=I(5), num_xs=I(1),
                                                        num_checkpoints=I(-1))],
               {"s0": s0, "xs": xs}, {}, **e)


def assert_cases():
    """Assert(cond, xs...) passes xs through while every element of cond holds (numpy: xs
    themselves), fails the run naming the node and message otherwise; inside an If only where its
    branch is taken."""
    x = uni((3, 4))
    gt = node("Greater", ["x", "lo"], ["c"])
    for lo, ok in ((-2.0, True), (0.0, False)):  # all of x > -2; some of x <= 0
        case = dict(expect_error="INVALID_ARGUMENT", expect_message="assertion failed: x must exceed lo") if not ok else {}
        yield Case(f"Assert_elementwise_{ok}", [gt, node("Assert", ["c", "x", "lo"], ["y", "l"], message=S("x must exceed lo")),
                                                 node("Exp", ["y"], ["z"]), node("Neg", ["l"], ["nl"])],
                   {"x": x, "lo": np.array(lo, np.float32)}, {"z": np.exp(x), "nl": np.array(-lo, np.float32)} if ok else {}, **case)
    yield Case("Assert_empty_cond_holds", [node("Assert", ["c", "x"], ["y"], message=S("never"))],
               {"x": x, "c": np.zeros((0, 2), bool)}, {"y": x})
    yield Case("Assert_error_cond_not_bool", [node("Assert", ["c", "x"], ["y"], message=S("m"))],
               {"x": x, "c": np.ones(3, np.int32)}, {}, expect_error="INVALID_ARGUMENT", expect_message="must be bool", modes=["lazy"])
    # in an If branch: a failing Assert counts only when its branch is taken
    guarded = sub([("a", F32, (3, 4)), ("k", "bool", ())], [node("Assert", ["k", "a"], ["m"], message=S("branch assert"))], ["m"])
    plain = sub([("a", F32, (3, 4)), ("k", "bool", ())], [node("Neg", ["a"], ["m"])], ["m"])
    for c in (True, False):
        case = dict(expect_error="INVALID_ARGUMENT", expect_message="assertion failed: branch assert") if c else {}
        yield Case(f"Assert_in_if_branch_taken_{c}", [node("If", ["c", "x", "k"], ["o"], then_branch=guarded, else_branch=plain)],
                   {"c": np.array(c), "x": x, "k": np.array(False)}, {} if c else {"o": -x}, **case)


def cases():
    yield from if_cases()
    yield from assert_cases()
    yield from while_cases()
    yield from scan_cases()
