"""The optimization passes (src/opt, rlx/optimize.h) on hand-built ONNX graphs: for each pass, the
graph imported with `--optimize PASSES` must have the expected op counts (and the pattern must be
there with `--optimize none`, so the test sees the rewrite), and `rlx run` with those passes must
match onnx.reference.ReferenceEvaluator (or numpy) on random inputs.

usage: test_passes.py RLX_BINARY [PASS]   (PASS: run only that pass's cases)"""
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

RLX = sys.argv[1]
ONLY = sys.argv[2] if len(sys.argv) > 2 else None
rng = np.random.default_rng(3)


def f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def model(nodes, inputs, outputs, inits=None, opset=17):
    vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()]
    vo = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    g = helper.make_graph(nodes, "g", vi, vo, [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def op_counts(path, inputs, spec):
    args = [RLX, "info", path, "--graph", "--optimize", spec]
    for k, v in inputs.items():
        args += ["--shape", f"{k}=" + ",".join(map(str, v.shape))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return Counter(re.findall(r"^\s*%\d+(?:, %\d+)* = (\w+)", r.stdout, re.M))


def run(path, inputs, spec, d):
    args = [RLX, "run", path, "--optimize", spec, "--output-dir", os.path.join(d, "out")]
    for k, v in inputs.items():
        np.save(os.path.join(d, k + ".npy"), v)
        args += ["--input", f"{k}={d}/{k}.npy"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return os.path.join(d, "out")


CASES = []


def case(pass_name, name, m, inputs, before, after, tol=1e-5, spec=None):
    """before/after: {op: count} expected with --optimize none and with --optimize spec (default:
    the pass, then dce)."""
    CASES.append((pass_name, name, m, inputs, before, after, tol, spec or pass_name + ",dce"))


# ---- cse: duplicate subexpressions and constants ----
x = f32(3, 4)
case("cse", "duplicate_relu_exp", model([
    helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["x"], ["b"]),
    helper.make_node("Exp", ["a"], ["ea"]), helper.make_node("Exp", ["b"], ["eb"]),
    helper.make_node("Add", ["ea", "eb"], ["y"])], {"x": x}, ["y"]), {"x": x}, {"Relu": 2, "Exp": 2}, {"Relu": 1, "Exp": 1, "Add": 1})

# ---- fold_affine: Conv + BatchNormalization, Conv + scalar Mul/Add, MatMul / scalar ----
x = f32(1, 3, 9, 8)
W, b = f32(6, 3, 3, 3), f32(6)
bn = {"W": W, "b": b, "s": f32(6, lo=0.5, hi=1.5), "bb": f32(6), "m": f32(6), "v": f32(6, lo=0.5, hi=2.0)}
case("fold_affine", "conv_batchnorm", model([
    helper.make_node("Conv", ["x", "W", "b"], ["c"], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"], epsilon=1e-3)], {"x": x}, ["y"], bn),
    {"x": x}, {"Conv": 1, "Mul": 1, "Add": 1}, {"Conv": 1, "Mul": 0, "Add": 0},
    spec="constfold,fold_affine,dce")  # the importer's per-channel Reshapes of BatchNorm's a, b fold first
dw = {"W": f32(3, 1, 3, 3), "k": np.array([2.5], np.float32), "d": np.array([-0.75], np.float32)}
case("fold_affine", "depthwise_conv_scalar_mul_add", model([
    helper.make_node("Conv", ["x", "W"], ["c"], group=3, pads=[1, 1, 1, 1]), helper.make_node("Mul", ["k", "c"], ["e"]),
    helper.make_node("Add", ["e", "d"], ["y"])], {"x": x}, ["y"], dw), {"x": x}, {"Conv": 1, "Mul": 1, "Add": 1},
    {"Conv": 1, "Mul": 0, "Add": 0})
xm = f32(2, 5, 8)
mm = {"W": f32(8, 4), "c": f32(4, lo=0.5, hi=2)}
case("fold_affine", "matmul_div_per_column", model([
    helper.make_node("MatMul", ["x", "W"], ["c0"]), helper.make_node("Div", ["c0", "c"], ["y"])], {"x": xm}, ["y"], mm),
    {"x": xm}, {"MatMul": 1, "Div": 1}, {"MatMul": 1, "Div": 0})
# a Mul that broadcasts the conv output to a larger shape is not folded
case("fold_affine", "conv_mul_broadcasting_kept", model([
    helper.make_node("Conv", ["x", "W"], ["c"], group=3, pads=[1, 1, 1, 1]), helper.make_node("Mul", ["c", "k2"], ["y"])],
    {"x": x}, ["y"], {"W": dw["W"], "k2": f32(2, 1, 1, 1)}), {"x": x}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1})

# ---- epilogue: MatMul + bias + activation, Gemm ----
ep = {"W": f32(8, 16), "b": f32(16)}
case("epilogue", "matmul_bias_relu", model([
    helper.make_node("MatMul", ["x", "W"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]), helper.make_node("Relu", ["a"], ["y"])],
    {"x": xm}, ["y"], ep), {"x": xm}, {"MatMul": 1, "Add": 1, "Relu": 1}, {"FusedMatMulBiasAct": 1, "MatMul": 0, "Add": 0, "Relu": 0})
xg = f32(5, 8)
case("epilogue", "gemm_bias_sigmoid", model([
    helper.make_node("Gemm", ["x", "W", "b"], ["a"]), helper.make_node("Sigmoid", ["a"], ["y"])], {"x": xg}, ["y"], ep),
    {"x": xg}, {"MatMul": 1, "Add": 1, "Sigmoid": 1}, {"FusedMatMulBiasAct": 1, "MatMul": 0, "Add": 0, "Sigmoid": 0})


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for pass_name, name, m, inputs, before, after, tol, spec in CASES:
            if ONLY and pass_name != ONLY:
                continue
            path = os.path.join(d, name + ".onnx")
            with open(path, "wb") as f:
                f.write(m.SerializeToString())
            try:
                cb, ca = op_counts(path, inputs, "none"), op_counts(path, inputs, spec)
                want = ReferenceEvaluator(m).run(None, inputs)
                got = np.load(os.path.join(run(path, inputs, spec, d), m.graph.output[0].name + ".npy"))
            except RuntimeError as e:
                print(f"FAIL {pass_name} {name}: {str(e).strip()[:400]}")
                failures += 1
                continue
            bad = [f"{op}: {cb[op]} before (want {n})" for op, n in before.items() if cb[op] != n]
            bad += [f"{op}: {ca[op]} after (want {n})" for op, n in after.items() if ca[op] != n]
            err = float(np.abs(got - want[0]).max()) if got.shape == want[0].shape else float("inf")
            if err > tol * max(1.0, float(np.abs(want[0]).max())):
                bad.append(f"max abs error {err:.3g} against onnx.reference")
            failures += bool(bad)
            print(f"{'FAIL' if bad else 'ok  '} {pass_name} {name}: {'; '.join(bad) or f'max abs error {err:.2g}'}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
