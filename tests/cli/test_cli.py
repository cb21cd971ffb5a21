"""CLI tests: `rlx run`, `rlx info` and the errors bad input gets (exit status, message naming what
was wrong). The oracle for `rlx run` results is ONNX Runtime on a small ONNX model built here."""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

RLX = sys.argv[1]
failures = 0


def check(cond, what):
    global failures
    print(("ok   " if cond else "FAIL ") + what)
    failures += 0 if cond else 1


def run(*args):
    return subprocess.run([RLX, *args], capture_output=True, text=True)


def model(path):
    """y = softmax(x @ w + b) with a dynamic batch dim."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal((3,)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["a"]),
         helper.make_node("Softmax", ["a"], ["y"], axis=-1)],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


with tempfile.TemporaryDirectory() as d:
    m = os.path.join(d, "mlp.onnx")
    model(m)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    out = os.path.join(d, "out")
    for mode in ["lazy", "eager", "compiled"]:
        r = run("run", m, "--input", f"x={d}/x.npy", "--output-dir", out, "--mode", mode)
        check(r.returncode == 0 and "y: float32[5,3]" in r.stdout, f"run --mode {mode} prints the output summary")
        ref = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        got = np.load(os.path.join(out, "y.npy"))
        check(got.shape == ref.shape and np.allclose(got, ref, rtol=1e-5, atol=1e-6), f"run --mode {mode} matches ONNX Runtime")
    r = run("run", m, "--input", f"x={d}/x.npy", "--output-dir", out, "--precision", "tf32")
    check(r.returncode == 0 and np.allclose(np.load(os.path.join(out, "y.npy")), ref, rtol=1e-5, atol=1e-6),
          "run --precision tf32 is accepted on the CPU and changes nothing there")
    r = run("info", m)
    check(r.returncode == 0 and "MatMul" in r.stdout and "x: float32[batch,4]" in r.stdout, "info lists inputs and ops")
    r = run("info", m, "--graph", "--dim", "batch=2")
    check(r.returncode == 0 and "Softmax" in r.stdout and "float32[2,3]" in r.stdout, "info --graph prints the rlx graph")
    # errors: each names what was wrong and exits non-zero
    r = run("run", os.path.join(d, "missing.onnx"))
    check(r.returncode == 1 and "NOT_FOUND" in r.stderr and "missing.onnx" in r.stderr, "missing model file")
    r = run("run", m, "--input", f"nope={d}/x.npy")
    check(r.returncode == 1 and "'nope'" in r.stderr, "unknown input name")
    r = run("run", m)
    check(r.returncode == 1 and "'x'" in r.stderr, "missing input")
    np.save(os.path.join(d, "xi.npy"), x.astype(np.int32))
    r = run("run", m, "--input", f"x={d}/xi.npy")
    check(r.returncode == 1 and "float32" in r.stderr and "int32" in r.stderr, "input dtype mismatch names both dtypes")
    r = run("run", m, "--input", f"x={d}/x.npy", "--mode", "fast")
    check(r.returncode == 2 and "fast" in r.stderr, "unknown mode")
    r = run("run", m, "--input", f"x={d}/x.npy", "--precision", "fp16")
    check(r.returncode == 2 and "unknown precision 'fp16'" in r.stderr, "unknown precision")
    r = run("run", m, "--input", f"x={d}/x.npy", "--device", "gpu")
    has_gpu = "GPU available" in run("version").stdout
    check((r.returncode == 0) if has_gpu else (r.returncode == 1 and "UNAVAILABLE" in r.stderr and "GPU" in r.stderr),
          "--device gpu runs on a GPU or fails clearly without one")
    with open(os.path.join(d, "bad.onnx"), "wb") as f:
        f.write(b"not a model")
    r = run("info", os.path.join(d, "bad.onnx"))
    check(r.returncode == 1 and "DATA_LOSS" in r.stderr, "corrupt model file")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
