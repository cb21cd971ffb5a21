"""`rlx calibrate`, `rlx info --cost` and `rlx run --device auto` on a small ONNX model whose FLOPs and
bytes are computed here from its shapes; outputs checked against numpy. usage: test_calibrate_cli.py RLX"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RLX = sys.argv[1]
failures = 0


def check(ok, what):
    global failures
    failures += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {what}")


def rlx(*args, env):
    return subprocess.run([RLX, *args], capture_output=True, text=True, env=env)


with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "xdg"), RLX_CALIBRATE_QUICK="1")
    keys = ["sgemm_large_flops", "sgemm_small_flops", "roundtrip_overhead_ns", "memory_bw_gbps", "attention_flops", "reduce_gbps"]

    r = rlx("calibrate", "--device", "cpu", "--json", env=env)
    check(r.returncode == 0, f"calibrate --json exits 0 ({r.stderr.strip()[-300:]})")
    first = json.loads(r.stdout)[0]
    check(all(first[k] > 0 for k in keys) and first["device_name"].startswith("cpu"), "the reference's keys, positive")
    check("calibrating cpu: 1/" in r.stderr, "a progress line while measuring")
    cache = [f for f in os.listdir(os.path.join(d, "xdg", "rlx")) if f.startswith("mlx-calib-cpu")]
    check(len(cache) == 1, f"one cache file in $XDG_CACHE_HOME/rlx: {cache}")

    r = rlx("calibrate", "--device", "cpu", "--json", env=env)
    check(json.loads(r.stdout)[0] == first and "calibrating" not in r.stderr, "second call loads the cache, no measuring")
    r = rlx("calibrate", env=env)
    check(r.returncode == 0 and "cached" in r.stdout and "sgemm_large_flops" in r.stdout and "GFLOP/s" in r.stdout,
          "calibrate prints a table")
    with open(os.path.join(d, "xdg", "rlx", cache[0]), "w") as f:
        f.write('{"device_name": "cpu')
    r = rlx("calibrate", "--device", "cpu", env=env)
    check(r.returncode == 0 and "warning" in r.stderr and "measuring again" in r.stderr and "measured now" in r.stdout,
          f"a truncated cache file: a warning, then measured ({r.stderr.strip()[-200:]})")
    r = rlx("calibrate", "--device", "tpu", env=env)
    check(r.returncode != 0 and "tpu" in r.stderr, "an unknown device is an error naming it")
    if "GPU not available" in rlx("version", env=env).stdout:
        r = rlx("calibrate", "--device", "gpu", env=env)
        check(r.returncode != 0 and "no GPU" in r.stderr, "calibrate --device gpu without a GPU fails")

    # x[M,K] @ w[K,N] + Relu: 2 M K N FLOPs for the matmul
    M, K, N = 64, 256, 512
    rng = np.random.default_rng(0)
    w = rng.standard_normal((K, N)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", N])], [numpy_helper.from_array(w, "w")])
    path = os.path.join(d, "mlp.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)

    r = rlx("info", path, "--cost", "--optimize", "none", "--shape", f"x={M},{K}", env=env)  # the graph as written: MatMul, Relu
    check(r.returncode == 0, f"info --cost exits 0 ({r.stderr.strip()[-300:]})")
    m = re.search(r"predicted on cpu: ([0-9.]+) ms per run \((\d+) nodes", r.stdout)
    mm = re.search(r"^\s+matmul\s+([0-9.]+) ms.*?\s([0-9.e+-]+) GFLOP\s+([0-9.e+-]+) MB$", r.stdout, re.M)
    check(bool(m and mm), f"per-device total and the matmul family:\n{r.stdout}")
    if m and mm:
        check(int(m.group(2)) == 2, "2 nodes run")
        check(abs(float(mm.group(2)) - 2 * M * K * N * 1e-9) < 1e-3 * 2 * M * K * N * 1e-9, "matmul GFLOP = 2 M K N")
        check(abs(float(mm.group(3)) / (4 * (M * K + K * N + M * N) * 1e-6) - 1) < 1e-3, "matmul MB = operands + result")
    check("faster: cpu" in r.stdout or "faster: gpu" in r.stdout, "says which device is faster")
    r = rlx("info", path, "--cost", env=env)
    check(r.returncode != 0 and "symbolic" in r.stderr, "info --cost with a symbolic batch asks for shapes")

    x = rng.standard_normal((M, K)).astype(np.float32)
    np.save(os.path.join(d, "x.npy"), x)
    r = rlx("run", path, "--input", f"x={d}/x.npy", "--device", "auto", "--output-dir", os.path.join(d, "out"), env=env)
    check(r.returncode == 0 and re.search(r"device auto: (cpu|gpu) \(", r.stdout) is not None, f"run --device auto says what it picked:\n{r.stdout}{r.stderr}")
    if r.returncode == 0:
        y = np.load(os.path.join(d, "out", "y.npy"))
        check(np.allclose(y, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4), "run --device auto output matches numpy")

print(f"{failures} failures")
sys.exit(1 if failures else 0)
