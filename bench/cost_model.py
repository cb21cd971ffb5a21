"""The cost model against measurement: predicted (`rlx run --device auto`, as `rlx info --cost`) vs
measured (`rlx run`) time per run for the model zoo and for op microbenchmarks, on one or both devices.

Models: the zoo of bench/zoo/zoo.py when it is there (packaged pretrained models and the classics it
writes with seeded weights: BERT-base, GPT-2, ResNet-50), else the packaged models of
tests/models/test_models.py. Microbenchmarks: one-op ONNX models written here (matmuls, convolutions,
norms, reductions, elementwise, data movement).

Procedure: `rlx calibrate --force` for each device first (figures taken under the same machine load
as the timings; with --recalibrate again before each model), then per model the prediction for each
device (`rlx run --device auto` prints them) and `--rounds` interleaved timed rounds of `rlx run
--repeat R` (lazy mode; its mean per run after a first run; R about 1 s of predicted time unless
given), reporting the median round.
Prints a table (predicted, measured, predicted/measured) and the summary: share of zoo models
predicted within 2x, and with --device both, whether the predicted faster device is the measured one.

--cpu-time (CPU only): validation on a loaded machine. Everything runs on one thread (RLX_NUM_THREADS=1,
OPENBLAS_NUM_THREADS=1), the calibration times with the process's CPU time (RLX_CALIBRATE_CLOCK=cpu,
cached in a temporary directory) and a run's time is the CPU time of `rlx run --repeat 1+R` minus that
of `--repeat 1`, over R: both are what an idle machine's wall clock would show for one thread, nearly
independent of the other processes.

usage: cost_model.py RLX [--device cpu|gpu|both] [--rounds N] [--repeat R] [--models a,b] [--no-micro]
                         [--no-zoo] [--cache DIR] [--json FILE] [--recalibrate] [--cpu-time] [--budget-s S]
"""
import argparse
import atexit
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(0)


def packaged_fallback():
    """name -> (path, feeds): the packaged models of tests/models/test_models.py."""
    r = lambda s: rng.random(s, dtype=np.float32)  # noqa: E731
    n = lambda s, k=1.0: (k * rng.standard_normal(s)).astype(np.float32)  # noqa: E731
    return {
        "ocr_det": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", {"x": r((1, 3, 480, 640))}),
        "ocr_rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", {"x": r((1, 3, 48, 320))}),
        "ocr_cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": r((1, 3, 48, 192))}),
        "silero_vad": ("silero_vad/data/silero_vad.onnx",
                       {"input": n((1, 512)), "state": n((2, 1, 128), 0.1), "sr": np.array(16000, np.int64)}),
        "yolov8n": ("nudenet/320n.onnx", {"images": r((1, 3, 320, 320))}),
    }


def zoo_models(cache, only):
    """[(name, path, feeds)] from bench/zoo/zoo.py when present, else the packaged fallback."""
    sys.path.insert(0, os.path.join(HERE, "zoo"))
    try:
        import zoo  # noqa: E402
        names = [m for m in zoo.ORDER if not only or m in only]
        out = []
        for m in names:
            try:
                path, feeds, _tol, _what = zoo.model_spec(m, cache)
                if not os.path.exists(path):
                    raise FileNotFoundError(f"{path} is not installed")
                out.append((m, path, feeds))
            except Exception as e:  # a model whose package is missing
                print(f"skipped {m}: {e}", file=sys.stderr)
        return out
    except ImportError:
        from paths import site_file  # noqa: E402
        return [(m, site_file(p), f) for m, (p, f) in packaged_fallback().items() if not only or m in only]


def micro_models(d):
    """[(name, path, feeds)]: one-op ONNX models."""
    specs = []

    def add(name, nodes, inputs, inits, out_shape):
        ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape)) for k, v in inputs.items()]
        g = helper.make_graph(nodes, name, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
        path = os.path.join(d, f"{name}.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
        specs.append((name, path, inputs))

    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    for m, k, n in ((256, 768, 3072), (128, 512, 512), (8, 64, 64), (1, 768, 768)):
        add(f"matmul_{m}x{k}x{n}", [helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": f(m, k)}, {"w": f(k, n)}, [m, n])
    for name, (c, h, w_, co, k, g, s) in {
        "conv3x3_64x56x56": (64, 56, 56, 64, 3, 1, 1), "conv3x3_s2_32x160x160": (32, 160, 160, 64, 3, 1, 2),
        "conv1x1_240x12x200": (240, 12, 200, 480, 1, 1, 1), "conv1x1_64x64x64": (64, 64, 64, 128, 1, 1, 1),
        "dwconv3x3_96x56x56": (96, 56, 56, 96, 3, 96, 1), "dwconv5x5_240x12x200": (240, 12, 200, 240, 5, 240, 1),
        "dwconv3x3_s2_32x160x160": (32, 160, 160, 32, 3, 32, 2), "conv3x3_96to24_120x160": (96, 120, 160, 24, 3, 1, 1),
        "conv3x3_s2_3x480x640": (3, 480, 640, 16, 3, 1, 2),
    }.items():
        p = k // 2
        ho, wo = (h + 2 * p - k) // s + 1, (w_ + 2 * p - k) // s + 1
        add(name, [helper.make_node("Conv", ["x", "w"], ["y"], pads=[p] * 4, strides=[s, s], group=g)], {"x": f(1, c, h, w_)},
            {"w": f(co, c // g, k, k)}, [1, co, ho, wo])
    add("softmax_8x128x128", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": f(8, 128, 128)}, {}, [8, 128, 128])
    add("layernorm_128x768", [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], {"x": f(128, 768)},
        {"g": f(768), "b": f(768)}, [128, 768])
    add("reducesum_1024x1024", [helper.make_node("ReduceSum", ["x", "ax"], ["y"], keepdims=0)], {"x": f(1024, 1024)},
        {"ax": np.array([-1], np.int64)}, [1024])
    add("add_1M", [helper.make_node("Add", ["x", "z"], ["y"])], {"x": f(1 << 20), "z": f(1 << 20)}, {}, [1 << 20])
    add("sigmoid_64x112x112", [helper.make_node("Sigmoid", ["x"], ["y"])], {"x": f(1, 64, 112, 112)}, {}, [1, 64, 112, 112])
    add("transpose_64x128x256", [helper.make_node("Transpose", ["x"], ["y"], perm=[0, 2, 1])], {"x": f(64, 128, 256)}, {},
        [64, 256, 128])
    add("maxpool3x3_s2_64x112x112", [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)],
        {"x": f(1, 64, 112, 112)}, {}, [1, 64, 56, 56])
    add("resize_nearest2x_96x60x80", [helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest", nearest_mode="floor",
                                                       coordinate_transformation_mode="asymmetric")],
        {"x": f(1, 96, 60, 80)}, {"sc": np.array([1, 1, 2, 2], np.float32)}, [1, 96, 120, 160])
    add("hardswish_16x240x320", [helper.make_node("HardSwish", ["x"], ["y"])], {"x": f(1, 16, 240, 320)}, {}, [1, 16, 240, 320])
    add("gelu_128x3072", [helper.make_node("Mul", ["x", "r2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
                          helper.make_node("Add", ["e", "one"], ["b"]), helper.make_node("Mul", ["x", "b"], ["c"]),
                          helper.make_node("Mul", ["c", "half"], ["y"])],
        {"x": f(128, 3072)}, {"r2": np.array(0.70710677, np.float32), "one": np.array(1, np.float32),
                              "half": np.array(0.5, np.float32)}, [128, 3072])
    add("linear_gelu_128x768x3072", [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["h"]),
                                     helper.make_node("Mul", ["h", "r2"], ["a"]), helper.make_node("Erf", ["a"], ["e"]),
                                     helper.make_node("Add", ["e", "one"], ["b1"]), helper.make_node("Mul", ["h", "b1"], ["c"]),
                                     helper.make_node("Mul", ["c", "half"], ["y"])],
        {"x": f(1, 128, 768)}, {"w": f(768, 3072), "b": f(3072), "r2": np.array(0.70710677, np.float32),
                                "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)}, [1, 128, 3072])
    c = lambda v: np.array(v, np.float32)  # noqa: E731
    add("gelu_tanh_128x3072", [helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("Mul", ["x2", "x"], ["x3"]),
                               helper.make_node("Mul", ["x3", "k"], ["a"]), helper.make_node("Add", ["x", "a"], ["i"]),
                               helper.make_node("Mul", ["i", "s"], ["i2"]), helper.make_node("Tanh", ["i2"], ["t"]),
                               helper.make_node("Add", ["t", "one"], ["b"]), helper.make_node("Mul", ["x", "b"], ["m"]),
                               helper.make_node("Mul", ["m", "half"], ["y"])],
        {"x": f(128, 3072)}, {"k": c(0.044715), "s": c(0.7978846), "one": c(1), "half": c(0.5)}, [128, 3072])
    add("erf_128x3072", [helper.make_node("Erf", ["x"], ["y"])], {"x": f(128, 3072)}, {}, [128, 3072])
    add("tanh_128x3072", [helper.make_node("Tanh", ["x"], ["y"])], {"x": f(128, 3072)}, {}, [128, 3072])
    add("mul_channel_96x60x80", [helper.make_node("Mul", ["x", "s"], ["y"])], {"x": f(1, 96, 60, 80)}, {"s": f(1, 96, 1, 1)},
        [1, 96, 60, 80])
    add("convtranspose2x2_s2_64x60x80", [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])],
        {"x": f(1, 64, 60, 80)}, {"w": f(64, 32, 2, 2)}, [1, 32, 120, 160])
    add("concat_4x24x120x160", [helper.make_node("Concat", ["a", "b", "c", "d"], ["y"], axis=1)],
        {k: f(1, 24, 120, 160) for k in "abcd"}, {}, [1, 96, 120, 160])
    add("gather_rows_128_of_30522x768", [helper.make_node("Gather", ["w", "i"], ["y"], axis=0)],
        {"i": rng.integers(0, 30522, (1, 128)).astype(np.int64)}, {"w": f(30522, 768)}, [1, 128, 768])
    # attention written out: softmax(q k^T / 8) v, [1,12,128,64]
    add("attention_1x12x128x64", [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                                  helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Mul", ["s", "c"], ["ss"]),
                                  helper.make_node("Softmax", ["ss"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])],
        {"q": f(1, 12, 128, 64), "k": f(1, 12, 128, 64), "v": f(1, 12, 128, 64)}, {"c": np.array(0.125, np.float32)},
        [1, 12, 128, 64])
    return specs


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])}...: {r.stderr.strip()[-400:]}")
    return r.stdout


def children_cpu_s():
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def shape_args(feeds, d, name):
    args = []
    for k, v in feeds.items():
        p = os.path.join(d, f"{name}.{k}.npy")
        np.save(p, v)
        args += ["--input", f"{k}={p}"]
    return args


def predict(rlx, path, inputs):
    """{device: predicted ms}: `rlx run --device auto` prints the prediction for each device (given the
    input values, which some imports need, e.g. Silero VAD's sample rate)."""
    out = run([rlx, "run", path, *inputs, "--device", "auto"])
    m = re.search(r"device auto: \w+ \(predicted ([0-9.]+) ms per run on the GPU vs ([0-9.]+) ms on the CPU\)", out)
    if m:
        return {"gpu": float(m.group(1)), "cpu": float(m.group(2))}
    return {"cpu": float(re.search(r"device auto: cpu \(no GPU available; predicted ([0-9.]+) ms", out).group(1))}


def measure(rlx, path, inputs, device, repeat, cpu_time=False):
    """ms per run: `rlx run`'s wall-clock mean, or with cpu_time the CPU time of `--repeat 1+R` minus
    that of `--repeat 1`, over R."""
    if not cpu_time:
        out = run([rlx, "run", path, *inputs, "--device", device, "--repeat", str(repeat)])
        return float(re.search(r"then ([0-9.]+) ms per run", out).group(1))
    spent = []
    for r in (1, 1 + repeat):
        t0 = children_cpu_s()
        run([rlx, "run", path, *inputs, "--device", device, "--repeat", str(r)])
        spent.append(children_cpu_s() - t0)
    return (spent[1] - spent[0]) / repeat * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rlx")
    ap.add_argument("--device", default="cpu", choices=["cpu", "gpu", "both"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=0, help="runs per round (default: about 1 s of predicted time, 3..100)")
    ap.add_argument("--models", default="")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "rlx", "zoo"))
    ap.add_argument("--json")
    ap.add_argument("--recalibrate", action="store_true",
                    help="calibrate again before each model (a shared, loaded machine: figures and timings under the same load)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no model after this many seconds (0: no limit); the table covers those done")
    ap.add_argument("--cpu-time", action="store_true",
                    help="one thread, CPU time instead of wall-clock time, for calibration and runs (CPU only; see above)")
    a = ap.parse_args()
    if a.cpu_time:
        if a.device != "cpu":
            ap.error("--cpu-time measures the CPU only")
        cache = tempfile.mkdtemp(prefix="rlx-cost-model-")
        atexit.register(shutil.rmtree, cache, True)
        os.environ.update(RLX_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", RLX_CALIBRATE_CLOCK="cpu", XDG_CACHE_HOME=cache)
    start = time.time()
    devices = ["cpu", "gpu"] if a.device == "both" else [a.device]
    only = set(a.models.split(",")) if a.models else None
    for dev in devices:
        print(run([a.rlx, "calibrate", "--device", dev, "--force"]), end="")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        todo = [] if a.no_zoo else [("zoo", *m) for m in zoo_models(a.cache, only)]
        todo += [] if a.no_micro else [("micro", *m) for m in micro_models(d) if not only or m[0] in only]
        for i, (kind, name, path, feeds) in enumerate(todo):
            if a.budget_s and time.time() - start > a.budget_s:
                print(f"budget of {a.budget_s:.0f} s spent: skipped {', '.join(t[1] for t in todo[i:])}", flush=True)
                break
            try:
                if a.recalibrate:
                    for dev in devices:
                        run([a.rlx, "calibrate", "--device", dev, "--force"])
                inputs = shape_args(feeds, d, name)
                pred = predict(a.rlx, path, inputs)
                times = {dev: [] for dev in devices}
                for _ in range(a.rounds):
                    for dev in devices:
                        rep = a.repeat or max(3, min(100, int(1000 / max(pred[dev], 1e-3))))
                        times[dev].append(measure(a.rlx, path, inputs, dev, rep, a.cpu_time))
            except RuntimeError as e:
                print(f"{name}: {e}", file=sys.stderr)
                continue
            row = {"kind": kind, "model": name}
            for dev in devices:
                row[f"{dev}_pred_ms"], row[f"{dev}_meas_ms"] = pred[dev], statistics.median(times[dev])
            rows.append(row)
            cells = "  ".join(f"{dev}: pred {row[f'{dev}_pred_ms']:9.3f} meas {row[f'{dev}_meas_ms']:9.3f} "
                              f"x{row[f'{dev}_pred_ms'] / row[f'{dev}_meas_ms']:5.2f}" for dev in devices)
            print(f"{kind:5s} {name:28s} {cells}", flush=True)
    print()
    for kind in ("zoo", "micro"):
        rs = [r for r in rows if r["kind"] == kind]
        for dev in devices:
            within = [r for r in rs if 0.5 <= r[f"{dev}_pred_ms"] / r[f"{dev}_meas_ms"] <= 2]
            if rs:
                print(f"{kind} on {dev}: {len(within)}/{len(rs)} predicted within 2x of measured")
        if len(devices) == 2 and rs:
            right = [r for r in rs if (r["gpu_pred_ms"] < r["cpu_pred_ms"]) == (r["gpu_meas_ms"] < r["cpu_meas_ms"])]
            wrong = [r["model"] for r in rs if r not in right]
            print(f"{kind}: CPU/GPU ranking right for {len(right)}/{len(rs)}" + (f" (wrong: {', '.join(wrong)})" if wrong else ""))
    print(f"({time.time() - start:.0f} s)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
