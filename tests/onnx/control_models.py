"""ONNX control flow through rlx's importer: If, Loop and Scan models written here, their expected
outputs computed by ONNX Runtime (cross-checked with onnx.reference.ReferenceEvaluator where that
supports the model), saved in the ONNX backend-test layout and
run by the conformance runner in the eager, lazy and compiled modes. Covers outer-scope captures
(graph inputs, computed values, initializers that become sub-graph params, constants), nesting
(Loop and Scan inside If, If inside Scan and Loop), several outputs, a run-time Loop condition,
Scan axes and directions (opset 9+), a condition known at import (the branch is inlined), and a
branch that does not type for the input shapes (left out behind a run-time Assert).

usage: control_models.py CONFORMANCE_BINARY WORKDIR"""
import os
import sys

import numpy as np
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

from backend_case import fresh_dir, run_expected, save_case

rng = np.random.default_rng(5)
F = TP.FLOAT


def vi(name, elem=F, shape=None):
    return h.make_tensor_value_info(name, elem, shape)


def const(name, arr):
    return h.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name))


def model(nodes, inputs, outputs, initializers=(), opset=16):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


def graph(nodes, outputs, inputs=(), initializers=()):
    return h.make_graph(nodes, "body", list(inputs), outputs, initializer=list(initializers))


def cases():
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    # If: both branches read outer values (an input, a computed value, an initializer -> sub-graph
    # param), two outputs; the cond is computed at run time
    then_b = graph([h.make_node("MatMul", ["x", "W"], ["t1"]), h.make_node("Add", ["t1", "xx"], ["o1"]),
                    h.make_node("Neg", ["xx"], ["o2"])], [vi("o1"), vi("o2")])
    else_b = graph([h.make_node("Sub", ["xx", "x"], ["o1"]), h.make_node("Abs", ["x"], ["o2"])], [vi("o1"), vi("o2")])
    m = model([h.make_node("Add", ["x", "x"], ["xx"]), h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
               h.make_node("Greater", ["s", "zero"], ["c"]),
               h.make_node("If", ["c"], ["y1", "y2"], then_branch=then_b, else_branch=else_b)],
              [vi("x", F, [3, 4])], [vi("y1"), vi("y2")], [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.float32(0), "zero")],
              opset=11)
    yield "if_captures_two_outputs_pos", m, {"x": np.abs(x)}
    yield "if_captures_two_outputs_neg", m, {"x": -np.abs(x)}
    # nested If in a branch, captures through two levels
    inner_t = graph([h.make_node("Mul", ["x", "x"], ["r"])], [vi("r")])
    inner_e = graph([h.make_node("Identity", ["x"], ["r"])], [vi("r")])
    outer_t = graph([h.make_node("If", ["c2"], ["r2"], then_branch=inner_t, else_branch=inner_e)], [vi("r2")])
    outer_e = graph([h.make_node("Identity", ["x"], ["r2"])], [vi("r2")])
    m = model([h.make_node("If", ["c1"], ["y"], then_branch=outer_t, else_branch=outer_e)],
              [vi("c1", TP.BOOL, []), vi("c2", TP.BOOL, []), vi("x", F, [3, 4])], [vi("y")], opset=11)
    for c1 in (True, False):
        for c2 in (True, False):
            yield f"if_nested_{int(c1)}{int(c2)}", m, {"c1": np.array(c1), "c2": np.array(c2), "x": x}
    # a cond known at import: only the chosen branch is imported (its output type differs from the other's)
    m = model([const("c", np.array(False)),
               h.make_node("If", ["c"], ["y"], then_branch=graph([const("k", np.ones((2, 2), np.float32))], [vi("k")]),
                           else_branch=graph([h.make_node("Relu", ["x"], ["r"])], [vi("r")]))],
              [vi("x", F, [3, 4])], [vi("y")], opset=11)
    yield "if_constant_cond_inlined", m, {"x": x}
    # a cond computed from an input's value, and an else_branch that does not type for x's shape (as
    # Silero VAD's 8 kHz branch for a 16 kHz frame): the import keeps the branch the value picks
    # behind a run-time Assert (ONNX runs only the taken branch)
    m = model([const("k", np.array(16000, np.int64)), h.make_node("Equal", ["sr", "k"], ["c"]),
               h.make_node("If", ["c"], ["y"],
                           then_branch=graph([const("s23", np.array([2, 3], np.int64)), h.make_node("Reshape", ["x", "s23"], ["r"])], [vi("r")]),
                           else_branch=graph([const("q", np.array([4000], np.int64)), const("m1", np.array([-1], np.int64)),
                                              h.make_node("Div", ["sr", "q"], ["rows"]),  # [sr / 4000, -1]: [4, -1] here
                                              h.make_node("Concat", ["rows", "m1"], ["s4"], axis=0),
                                              h.make_node("Reshape", ["x", "s4"], ["r"])], [vi("r")]))],
              [vi("x", F, [1, 6]), vi("sr", TP.INT64, [])], [vi("y")], opset=13)
    yield "if_untypable_branch_left_out", m, {"x": rng.uniform(-1, 1, (1, 6)).astype(np.float32), "sr": np.array(16000, np.int64)}

    # Loop with a trip count, loop-carried values, a scan output and the iteration index feeding
    # a Slice (each unrolled iteration folds its own start)
    body = graph([h.make_node("Identity", ["cin"], ["cout"]), h.make_node("Unsqueeze", ["i", "ax0"], ["st"]),
                  h.make_node("Add", ["st", "one"], ["en"]), h.make_node("Slice", ["tbl", "st", "en"], ["row1"]),
                  h.make_node("Squeeze", ["row1", "ax0"], ["row"]),
                  h.make_node("Add", ["acc", "row"], ["acc2"]), h.make_node("Mul", ["acc2", "scale"], ["sc"])],
                 [vi("cout", TP.BOOL, []), vi("acc2"), vi("sc")],
                 [vi("i", TP.INT64, []), vi("cin", TP.BOOL, []), vi("acc")],
                 [numpy_helper.from_array(np.array([0], np.int64), "ax0"), numpy_helper.from_array(np.array([1], np.int64), "one")])
    tbl = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    # (the cond input is given: onnx's ReferenceEvaluator runs no iteration when it is omitted)
    m = model([const("t", np.array(True)), h.make_node("Loop", ["M", "t", "a0"], ["acc", "scans"], body=body)],
              [vi("M", TP.INT64, []), vi("a0", F, [4]), vi("scale", F, [4])], [vi("acc"), vi("scans")],
              [numpy_helper.from_array(tbl, "tbl")])
    yield "loop_slice_by_iteration_scan_output", m, {"M": np.array(5, np.int64), "a0": x[0], "scale": x[1]}
    # Loop stopping on a run-time condition (sum below a bound), M as a bound, two carried values
    body = graph([h.make_node("Mul", ["v", "f"], ["v2"]), h.make_node("Add", ["n", "onei"], ["n2"]),
                  h.make_node("ReduceSum", ["v2"], ["s"], keepdims=0), h.make_node("Less", ["s", "lim"], ["cout"])],
                 [vi("cout", TP.BOOL, []), vi("v2"), vi("n2", TP.INT32, [])],
                 [vi("i", TP.INT64, []), vi("cin", TP.BOOL, []), vi("v"), vi("n", TP.INT32, [])],
                 [numpy_helper.from_array(np.int32(1), "onei")])
    m = model([h.make_node("Loop", ["M", "c0", "v0", "n0"], ["v", "n"], body=body)],
              [vi("M", TP.INT64, []), vi("c0", TP.BOOL, []), vi("v0", F, [4]), vi("n0", TP.INT32, []), vi("f", F, []),
               vi("lim", F, [])], [vi("v"), vi("n", TP.INT32, [])])
    v0 = np.array([0.5, 1.0, 0.25, 0.75], np.float32)
    for name, c0, lim, mm in [("stops", True, 20.0, 10), ("hits_bound", True, 1e6, 6), ("never_starts", False, 20.0, 10)]:
        yield f"loop_runtime_cond_{name}", m, {"M": np.array(mm, np.int64), "c0": np.array(c0), "v0": v0,
                                                 "n0": np.array(0, np.int32), "f": np.float32(1.5), "lim": np.float32(lim)}
    # Loop without a trip count whose condition folds at import (a counter over constants)
    body = graph([h.make_node("Add", ["k", "one"], ["k2"]), h.make_node("Less", ["k2", "five"], ["cout"]),
                  h.make_node("Add", ["y", "x"], ["y2"])],
                 [vi("cout", TP.BOOL, []), vi("k2", TP.INT64, []), vi("y2")],
                 [vi("i", TP.INT64, []), vi("cin", TP.BOOL, []), vi("k", TP.INT64, []), vi("y")],
                 [numpy_helper.from_array(np.int64(1), "one"), numpy_helper.from_array(np.int64(5), "five")])
    m = model([const("k0", np.int64(0)), const("t", np.array(True)),
               h.make_node("Loop", ["", "t", "k0", "x"], ["k", "y"], body=body)], [vi("x", F, [3, 4])],
              [vi("k", TP.INT64, []), vi("y")])
    yield "loop_cond_only_folds", m, {"x": x}

    # Scan-8: a batch axis (2 elements, each its own scan), reversed scan input
    sb8 = graph([h.make_node("Add", ["s", "e"], ["s2"]), h.make_node("Mul", ["s2", "e"], ["y"])], [vi("s2"), vi("y")],
                [vi("s", F, [2]), vi("e", F, [2])])
    m = model([h.make_node("Scan", ["", "s0", "xs"], ["s", "ys"], body=sb8, num_scan_inputs=1, directions=[1])],
              [vi("s0", F, [2, 2]), vi("xs", F, [2, 3, 2])], [vi("s"), vi("ys")], opset=8)
    yield "scan8_batch_reverse", m, {"s0": x[:2, :2], "xs": rng.uniform(-1, 1, (2, 3, 2)).astype(np.float32)}
    # Scan-9+: states, outer captures (an input and an initializer), scan axes and directions
    sb = graph([h.make_node("MatMul", ["u", "Wr"], ["uw"]), h.make_node("Add", ["h", "uw"], ["z"]),
                h.make_node("Mul", ["z", "g"], ["z2"]), h.make_node("Tanh", ["z2"], ["h2"]),
                h.make_node("ReduceMax", ["h2"], ["mx"], keepdims=0, axes=[0]), h.make_node("Identity", ["h2"], ["hy"])],
               [vi("h2"), vi("mx"), vi("hy")], [vi("h"), vi("u")])
    wr = rng.uniform(-1, 1, (3, 3)).astype(np.float32)
    u = rng.uniform(-1, 1, (3, 5)).astype(np.float32)  # scanned along axis 1
    for dirs in [(0, 0, 0), (1, 1, 0), (0, 0, 1)]:
        m = model([h.make_node("Scan", ["h0", "u"], ["h", "mxs", "hys"], body=sb, num_scan_inputs=1, scan_input_axes=[1],
                               scan_input_directions=[dirs[0]], scan_output_directions=[dirs[1], dirs[2]],
                               scan_output_axes=[0, -1])],
                  [vi("h0", F, [3]), vi("u", F, [3, 5]), vi("g", F, [])], [vi("h"), vi("mxs"), vi("hys")],
                  [numpy_helper.from_array(wr, "Wr")], opset=11)
        yield f"scan_axes_directions_{''.join(map(str, dirs))}", m, {"h0": x[0, :3], "u": u, "g": np.float32(0.7)}
    # If inside a Scan body (captures through two levels) and a Scan inside an If branch
    ib_t = graph([h.make_node("Add", ["acc", "e"], ["r"])], [vi("r")])
    ib_e = graph([h.make_node("Sub", ["acc", "off"], ["r"])], [vi("r")])
    sb = graph([h.make_node("Greater", ["e", "thr"], ["c"]), h.make_node("If", ["c"], ["acc2"], then_branch=ib_t, else_branch=ib_e),
                h.make_node("Identity", ["acc2"], ["o"])], [vi("acc2"), vi("o")], [vi("acc", F, []), vi("e", F, [])])
    scan = h.make_node("Scan", ["a0", "xs"], ["a", "trace"], body=sb, num_scan_inputs=1)
    m = model([h.make_node("If", ["go"], ["a", "trace"], then_branch=graph([scan], [vi("a"), vi("trace")]),
                           else_branch=graph([h.make_node("Neg", ["a0"], ["na"]), h.make_node("Identity", ["xs"], ["tr"])],
                                             [vi("na"), vi("tr")]))],
              [vi("go", TP.BOOL, []), vi("a0", F, []), vi("xs", F, [6]), vi("thr", F, []), vi("off", F, [])],
              [vi("a"), vi("trace")], opset=11)
    xs = rng.uniform(-1, 1, 6).astype(np.float32)
    yield "scan_in_if_with_nested_if", m, {"go": np.array(True), "a0": np.float32(0.25), "xs": xs, "thr": np.float32(0.1),
                                           "off": np.float32(0.5)}
    # Loop inside an If branch: the unrolled copies live in the branch sub-graph and capture x
    body = graph([h.make_node("Identity", ["cin"], ["cout"]), h.make_node("Mul", ["y", "x"], ["y2"])],
                 [vi("cout", TP.BOOL, []), vi("y2")], [vi("i", TP.INT64, []), vi("cin", TP.BOOL, []), vi("y")])
    lt = graph([const("three", np.int64(3)), const("t", np.array(True)), h.make_node("Loop", ["three", "t", "x"], ["p"], body=body)],
               [vi("p")])
    m = model([h.make_node("If", ["c"], ["y"], then_branch=lt, else_branch=graph([h.make_node("Identity", ["x"], ["p"])], [vi("p")]))],
              [vi("c", TP.BOOL, []), vi("x", F, [3, 4])], [vi("y")], opset=13)
    yield "loop_in_if_branch", m, {"c": np.array(True), "x": x}


def unsupported_cases():
    """Models rlx reports as UNIMPLEMENTED (loops it cannot unroll at import)."""
    body = graph([h.make_node("Add", ["v", "v"], ["v2"]), h.make_node("ReduceSum", ["v2"], ["s"], keepdims=0),
                  h.make_node("Less", ["s", "lim"], ["cout"]), h.make_node("Identity", ["v2"], ["y"])],
                 [vi("cout", TP.BOOL, []), vi("v2"), vi("y")], [vi("i", TP.INT64, []), vi("cin", TP.BOOL, []), vi("v")])
    ins = {"v0": np.ones(2, np.float32), "lim": np.float32(10)}
    big = const("M", np.array(2 ** 62, np.int64))
    # a while loop (huge trip count, run-time condition), and scan outputs under a run-time condition
    body1 = graph(body.node[:3], body.output[:2], body.input)
    yield "loop_unbounded_runtime_cond", model([big, const("t", np.array(True)), h.make_node("Loop", ["M", "t", "v0"], ["v"], body=body1)],
                                              [vi("v0", F, [2]), vi("lim", F, [])], [vi("v")]), ins
    yield "loop_scan_output_runtime_cond", model([const("M", np.array(8, np.int64)), const("t", np.array(True)),
                                                  h.make_node("Loop", ["M", "t", "v0"], ["v", "ys"], body=body)],
                                                 [vi("v0", F, [2]), vi("lim", F, [])], [vi("v"), vi("ys")]), ins


def write_case(root, name, m, inputs):
    inputs = {k: np.asarray(v) for k, v in inputs.items()}
    outs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, inputs)
    try:
        ref = ReferenceEvaluator(m).run(None, inputs)
    except (RuntimeError, TypeError):  # it lacks Scan axes other than 0 and Scan-8
        ref = outs
    for a, b in zip(outs, ref):
        np.testing.assert_allclose(np.asarray(b).reshape(np.shape(a)), a, rtol=1e-5, atol=1e-6)
    save_case(os.path.join(root, "test_" + name), m, inputs, {o.name: v for o, v in zip(m.graph.output, outs)})
    return "test_" + name


def main():
    binary, work = sys.argv[1:3]
    root = fresh_dir(work, "onnx_control")
    names = [write_case(root, *c) for c in cases()]
    unsupported = [write_case(root, *c) for c in unsupported_cases()]
    rc = 0
    for mode in ["eager", "lazy", "compiled"]:
        env = dict(os.environ, RLX_MLX_MODE=mode)
        code, lines = run_expected(binary, f"control-{mode}", root, names, os.path.join(work, "onnx_control_expected.txt"),
                                   os.path.join(work, f"onnx_control_{mode}.txt"), env=env)
        rc |= code
        for u in unsupported:
            if not any(l.startswith(f"UNSUPPORTED {u}:") for l in lines):
                print(f"{u} should be UNSUPPORTED in mode {mode}")
                rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
