"""CLI tests: `rlx run`, `rlx info`, `rlx bench` and the errors bad input gets (exit status, message naming what
was wrong). The oracle for `rlx run` results is ONNX Runtime on a small ONNX model built here."""
import json
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


def check(cond, what, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else "\n" + detail))
    failures += 0 if cond else 1


def run(*args, env=None):
    return subprocess.run([RLX, *args], capture_output=True, text=True, env=env)


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
    # shapes only, an If whose else_branch does not type for x's shape (its Reshape target depends on
    # sr's value): the then_branch is kept behind an Assert on cond (ONNX runs only the taken branch)
    k = onnx.numpy_helper.from_array
    reshape = lambda shape: helper.make_graph([helper.make_node("Reshape", ["x", shape], ["r"])], "b", [],
                                              [helper.make_tensor_value_info("r", TensorProto.FLOAT, None)])
    eb = reshape("s4")
    eb.node.insert(0, helper.make_node("Concat", ["sr1", "m1"], ["s4"], axis=0))
    g = helper.make_graph(
        [helper.make_node("Equal", ["sr", "k"], ["c"]), helper.make_node("Reshape", ["sr", "one"], ["sr1"]),
         helper.make_node("If", ["c"], ["y"], then_branch=reshape("s23"), else_branch=eb)],
        "if", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6]), helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [k(np.array(16000, np.int64), "k"), k(np.array([1], np.int64), "one"), k(np.array([-1], np.int64), "m1"),
         k(np.array([2, 3], np.int64), "s23")])
    mi = os.path.join(d, "if.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), mi)
    r = run("info", mi, "--graph")
    check(r.returncode == 0 and "= Assert(" in r.stdout and "takes its else_branch at run time" in r.stdout and "float32[2,3]" in r.stdout,
          "info --graph: an If branch that does not type is left out behind an Assert", r.stdout + r.stderr)
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
    # the mode: RLX_MLX_MODE when --mode is not given, --mode over it
    env = dict(os.environ, RLX_MLX_MODE="compiled")
    r = run("run", m, "--input", f"x={d}/x.npy", env=env)
    check(r.returncode == 0 and "mode compiled," in r.stdout, "run honours RLX_MLX_MODE without --mode")
    check("rlx: first run: tracing and compiling" in r.stderr and "rlx: first run took" in r.stderr,
          "compiled first run: progress lines")
    # compiled mode's CPU kernels land in the per-user cache (RLX_CACHE_DIR over XDG_CACHE_HOME)
    chain = os.path.join(d, "chain.onnx")
    g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["a"]), helper.make_node("Add", ["a", "x"], ["y"])], "chain",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), chain)
    cache = os.path.join(d, "cache")
    r = run("run", chain, "--input", f"x={d}/x.npy", "--output-dir", out, "--mode", "compiled",
            env=dict(os.environ, RLX_CACHE_DIR=cache, XDG_CACHE_HOME=os.path.join(d, "xdg")))
    libs = [f for _, _, fs in os.walk(cache) for f in fs if f.endswith(".so")]
    check(r.returncode == 0 and np.allclose(np.load(os.path.join(out, "y.npy")), x * x + x) and len(libs) > 0
          and not os.path.exists(os.path.join(d, "xdg")), "compiled kernels cached under RLX_CACHE_DIR", r.stderr)
    r = run("run", m, "--input", f"x={d}/x.npy", "--mode", "eager", env=env)
    check(r.returncode == 0 and "mode eager," in r.stdout, "--mode wins over RLX_MLX_MODE")
    # the demo script leaves the mode to rlx unless given one (a stand-in rlx records its arguments)
    fake = os.path.join(d, "fake_rlx")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\necho \"$@\" > {d}/fake_args\nexit 3\n")
    os.chmod(fake, 0o755)
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ocr_demo.py")
    r = subprocess.run([sys.executable, demo, fake, "--repeat", "1"], capture_output=True, text=True)
    args = open(os.path.join(d, "fake_args")).read()
    check(r.returncode == 3 and args.startswith("run ") and "--mode" not in args, "ocr_demo.py passes no --mode by default")
    r = subprocess.run([sys.executable, demo, fake, "--mode", "eager"], capture_output=True, text=True)
    check("--mode eager" in open(os.path.join(d, "fake_args")).read(), "ocr_demo.py passes --mode when given")
    # progress lines on stderr (import), none with --quiet
    r = run("run", m, "--input", f"x={d}/x.npy")
    check("rlx: importing " in r.stderr and "rlx: imported in " in r.stderr, "import progress lines")
    r = run("run", m, "--input", f"x={d}/x.npy", "--quiet")
    check(r.returncode == 0 and r.stderr == "", "--quiet: no progress lines")
    # output files: each printed; names with '/', ':', ' ' mapped to '_', clashes get ~<index>
    m2 = os.path.join(d, "names.onnx")
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["enc/out:0"]), helper.make_node("Neg", ["x"], ["enc_out 0"])], "names",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 4])],
        [helper.make_tensor_value_info("enc/out:0", TensorProto.FLOAT, [5, 4]),
         helper.make_tensor_value_info("enc_out 0", TensorProto.FLOAT, [5, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), m2)
    out2 = os.path.join(d, "out2")
    r = run("run", m2, "--input", f"x={d}/x.npy", "--output-dir", out2)
    f0, f1 = os.path.join(out2, "enc_out_0.npy"), os.path.join(out2, "enc_out_0~1.npy")
    check(r.returncode == 0 and f"-> {f0}" in r.stdout and f"-> {f1}" in r.stdout, "run prints each output file", r.stdout)
    check(os.path.exists(f0) and np.array_equal(np.load(f0), np.maximum(x, 0)) and os.path.exists(f1)
          and np.array_equal(np.load(f1), -x), "mapped file names hold the right outputs")
    # info: the output types after --dim/--shape
    r = run("info", m, "--dim", "batch=7")
    check(r.returncode == 0 and "outputs as imported (after --dim/--shape):\n  y: float32[7,3]" in r.stdout, "info shows inferred output shapes")
    r = run("info", m, "--shape", "x=2,4")
    check(r.returncode == 0 and "  y: float32[2,3]" in r.stdout, "info --shape")
    # bench: latency statistics as JSON, inputs generated from --dim or read from --input
    r = run("bench", m, "--dim", "batch=3", "--warmup", "2", "--runs", "20", "--json", "--quiet")
    try:
        b = json.loads(r.stdout)
    except ValueError:
        b = None
    lat = b["latency_ms"] if b else {}
    check(r.returncode == 0 and b is not None and b["runs"] == 20 and b["warmup"] == 2 and b["mode"] == "lazy", "bench --json", r.stdout + r.stderr)
    check(bool(lat) and 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"] and lat["min"] <= lat["mean"] <= lat["max"],
          "bench: min <= p50 <= p90 <= p99 <= max")
    check(bool(lat) and abs(b["throughput_per_s"] * lat["mean"] / 1e3 - 1) < 1e-6 and b["first_run_ms"] > 0
          and b["peak_memory_bytes"]["process_rss"] > 0 and b["peak_memory_bytes"]["mlx"] > 0, "bench: throughput, first run, peak memory")
    r = run("bench", m, "--input", f"x={d}/x.npy", "--runs", "3", "--mode", "compiled")
    check(r.returncode == 0 and "mode compiled" in r.stdout and "p99" in r.stdout and "throughput" in r.stdout, "bench (text) with --input")
    r = run("bench", m)
    check(r.returncode == 1 and "input 'x'" in r.stderr and "--dim" in r.stderr, "bench: a symbolic input without data is refused")
    r = run("bench", m, "--runs", "0")
    check(r.returncode == 2 and "--runs" in r.stderr, "bench: --runs needs a positive count")
    with open(os.path.join(d, "bad.onnx"), "wb") as f:
        f.write(b"not a model")
    r = run("info", os.path.join(d, "bad.onnx"))
    check(r.returncode == 1 and "DATA_LOSS" in r.stderr, "corrupt model file")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
