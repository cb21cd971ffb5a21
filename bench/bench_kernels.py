"""Single-op microbenchmark: rlx (`rlx run`, MLX CPU + rlx's kernels) against ONNX Runtime's
CPU kernels with 1 and 2 intra-op threads, on one-node ONNX models with shapes from real
networks (PP-OCRv4 rec/det, MobileNet/ConvNeXt-style blocks, ResNet-50, YOLOv8n, BERT's and
GPT-2's matrix products with their constant weights).

usage: bench_kernels.py RLX_BINARY [--rounds R] [--repeat N] [--filter SUBSTRING] [--mode lazy|compiled]

Each round runs, per shape, `rlx run --repeat N` (its mean per run after a first, untimed run)
then ONNX Runtime N times with 1 thread and N times with 2 threads (means); rounds interleave
the three, and the table shows the medians over rounds and the ratios rlx / ORT (< 1: rlx is
faster), plus the max abs difference between rlx's and ORT's outputs. rlx's kernel threads
follow RLX_NUM_THREADS (default: the CPUs available). Machines are noisy: compare the ratios
of one run."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(0)


def conv(name, n, c, co, hw, k, s=(1, 1), p=None, g=1, bias=True):
    p = p if p is not None else [k[0] // 2, k[1] // 2] * 2
    w = rng.uniform(-0.5, 0.5, (co, c // g, *k)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, co).astype(np.float32), "b"))
        ins.append("b")
    node = helper.make_node("Conv", ins, ["y"], kernel_shape=list(k), strides=list(s), pads=list(p), group=g)
    return name, node, inits, (n, c, *hw)


def convt(name, n, c, co, hw, k, s):
    w = rng.uniform(-0.5, 0.5, (c, co, *k)).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, co).astype(np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=list(k), strides=list(s))
    return name, node, [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")], (n, c, *hw)


def resize(name, shape, scales, **attrs):
    """Resize of x by constant scales (PP-OCRv4 det's and YOLOv8's upsamplings)."""
    inits = [numpy_helper.from_array(np.asarray(scales, np.float32), "scales")]
    return name, helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs), inits, shape


def matmul(name, m, k, n, trans_b=False, bias=False):
    """x [m, k] @ W [k, n] (+ b): a MatMul with a weight initializer, or a Gemm (W stored [n, k] with
    trans_b, as torch exports nn.Linear)."""
    w = rng.uniform(-0.5, 0.5, (n, k) if trans_b else (k, n)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")]
    if not trans_b and not bias:
        return name, helper.make_node("MatMul", ["x", "w"], ["y"]), inits, (m, k)
    inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, n).astype(np.float32), "b"))
    return name, helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=int(trans_b)), inits, (m, k)


def op(name, op_type, shape, **attrs):
    return name, helper.make_node(op_type, ["x"], ["y"], **attrs), [], shape


SHAPES = [
    # depthwise (PP-OCRv4 rec: C16-128 at 24x399 / 12x399, C240/480 5x5 at 6x200 / 3x200)
    conv("dw3 C64 24x399", 1, 64, 64, (24, 399), (3, 3), g=64),
    conv("dw3 C64 24x399 s2x1", 1, 64, 64, (24, 399), (3, 3), (2, 1), g=64),
    conv("dw3 C128 12x399 s1x2", 1, 128, 128, (12, 399), (3, 3), (1, 2), g=128),
    conv("dw5 C240 6x200", 1, 240, 240, (6, 200), (5, 5), g=240),
    conv("dw5 C480 3x200", 1, 480, 480, (3, 200), (5, 5), g=480),
    conv("dw7 C96 56x56", 1, 96, 96, (56, 56), (7, 7), g=96),
    # pointwise 1x1
    conv("pw C64->128 24x399", 1, 64, 128, (24, 399), (1, 1)),
    conv("pw C240->240 6x200", 1, 240, 240, (6, 200), (1, 1)),
    conv("pw C480->480 3x200", 1, 480, 480, (3, 200), (1, 1)),
    # few input channels, and an ordinary 3x3
    conv("c3->16 48x797 k3 s2", 1, 3, 16, (48, 797), (3, 3), (2, 2)),
    conv("c1->32 64x256 k3", 1, 1, 32, (64, 256), (3, 3)),
    conv("c64->64 56x56 k3", 1, 64, 64, (56, 56), (3, 3)),
    # ResNet-50 / YOLOv8n convolutions (batch 1)
    conv("c256->64 56x56 k1", 1, 256, 64, (56, 56), (1, 1)),
    conv("c64->256 56x56 k1", 1, 64, 256, (56, 56), (1, 1)),
    conv("c128->128 28x28 k3", 1, 128, 128, (28, 28), (3, 3)),
    conv("c512->512 7x7 k3", 1, 512, 512, (7, 7), (3, 3)),
    conv("c1024->2048 14x14 k1 s2", 1, 1024, 2048, (14, 14), (1, 1), (2, 2), p=[0, 0, 0, 0]),
    conv("c3->64 224x224 k7 s2", 1, 3, 64, (224, 224), (7, 7), (2, 2), p=[3, 3, 3, 3]),
    conv("c512->128 28x28 k1", 1, 512, 128, (28, 28), (1, 1)),
    conv("c128->512 28x28 k1", 1, 128, 512, (28, 28), (1, 1)),
    conv("c1024->256 14x14 k1", 1, 1024, 256, (14, 14), (1, 1)),
    conv("c256->1024 14x14 k1", 1, 256, 1024, (14, 14), (1, 1)),
    conv("c256->256 14x14 k3", 1, 256, 256, (14, 14), (3, 3)),
    conv("c2048->512 7x7 k1", 1, 2048, 512, (7, 7), (1, 1)),
    conv("c512->2048 7x7 k1", 1, 512, 2048, (7, 7), (1, 1)),
    conv("c256->512 28x28 k1 s2", 1, 256, 512, (28, 28), (1, 1), (2, 2), p=[0, 0, 0, 0]),
    conv("c128->128 56x56 k3 s2", 1, 128, 128, (56, 56), (3, 3), (2, 2)),
    conv("c32->64 160x160 k3 s2", 1, 32, 64, (160, 160), (3, 3), (2, 2)),
    conv("c16->16 80x80 k3", 1, 16, 16, (80, 80), (3, 3)),
    conv("c32->32 40x40 k3", 1, 32, 32, (40, 40), (3, 3)),
    conv("c64->64 40x40 k3", 1, 64, 64, (40, 40), (3, 3)),
    conv("c64->64 20x20 k3", 1, 64, 64, (20, 20), (3, 3)),
    conv("c48->32 80x80 k1", 1, 48, 32, (80, 80), (1, 1)),
    conv("c16->32 160x160 k3 s2", 1, 16, 32, (160, 160), (3, 3), (2, 2)),
    # matrix products with a constant weight (BERT-base / GPT-2 at sequence length 128)
    matmul("matmul 128x768 @ 768x768", 128, 768, 768),
    matmul("matmul 128x768 @ 768x3072", 128, 768, 3072),
    matmul("matmul 128x3072 @ 3072x768", 128, 3072, 768),
    matmul("gemm 128x768 @ (2304x768)^T + b", 128, 768, 2304, trans_b=True),
    # ConvTranspose with stride = kernel (PP-OCRv4 det's head)
    convt("convT2x2s2 C64->64 80x80", 1, 64, 64, (80, 80), (2, 2), (2, 2)),
    # Softmax (rec's output over 6625 classes; attention scores)
    op("softmax 100x6625", "Softmax", (1, 100, 6625), axis=-1),
    op("softmax 8x100x100", "Softmax", (1, 8, 100, 100), axis=-1),
    # pooling
    op("avgpool k3x2 s3x2 C480 3x200", "AveragePool", (1, 480, 3, 200), kernel_shape=[3, 2], strides=[3, 2]),
    op("maxpool k3 s2 p1 C64 112x112", "MaxPool", (1, 64, 112, 112), kernel_shape=[3, 3], strides=[2, 2],
       pads=[1, 1, 1, 1]),
    op("globalavgpool C480 3x200", "GlobalAveragePool", (1, 480, 3, 200)),
    op("sigmoid 1x240x6x200", "Sigmoid", (1, 240, 6, 200)),
    op("gelu 128x3072", "Gelu", (128, 3072)),  # BERT-base's intermediate activation (ONNX Gelu, opset 20)
    # Resize (PP-OCRv4 det's nearest 2x / 8x upsamplings, YOLOv8n's, a bilinear 2x)
    resize("resize nearest x2 C96 60x80", (1, 96, 60, 80), [1, 1, 2, 2], mode="nearest", nearest_mode="floor",
           coordinate_transformation_mode="asymmetric"),
    resize("resize nearest x8 C24 15x20", (1, 24, 15, 20), [1, 1, 8, 8], mode="nearest", nearest_mode="floor",
           coordinate_transformation_mode="asymmetric"),
    resize("resize nearest x2 C256 10x10", (1, 256, 10, 10), [1, 1, 2, 2], mode="nearest", nearest_mode="floor",
           coordinate_transformation_mode="asymmetric"),
    resize("resize linear x2 C64 60x80", (1, 64, 60, 80), [1, 1, 2, 2], mode="linear"),
]


def model(node, inits, shape):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def rlx_time(rlx, path, x_path, out_dir, repeat, mode):
    r = subprocess.run([rlx, "run", path, "--input", f"x={x_path}", "--output-dir", out_dir, "--repeat", str(repeat),
                        "--mode", mode], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip()[:300])
    return float(re.search(r"then ([0-9.]+) ms per run", r.stdout + r.stderr).group(1))


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_time(sess, feeds, repeat):
    sess.run(None, feeds)
    t = time.perf_counter()
    for _ in range(repeat):
        sess.run(None, feeds)
    return (time.perf_counter() - t) / repeat * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rlx")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--filter", default="")
    ap.add_argument("--mode", default="lazy")
    a = ap.parse_args()
    print(f"{'op':34} {'rlx ms':>8} {'ORT1 ms':>8} {'ORT2 ms':>8} {'rlx/ORT1':>8} {'rlx/ORT2':>8} {'max err':>9}")
    with tempfile.TemporaryDirectory() as d:
        for name, node, inits, shape in SHAPES:
            if a.filter not in name:
                continue
            path, x_path, out = os.path.join(d, "m.onnx"), os.path.join(d, "x.npy"), os.path.join(d, "out")
            onnx.save(model(node, inits, shape), path)
            x = rng.uniform(-1, 1, shape).astype(np.float32)
            np.save(x_path, x)
            s1, s2 = ort_session(path, 1), ort_session(path, 2)
            t = {"rlx": [], "o1": [], "o2": []}
            for _ in range(a.rounds):
                t["rlx"].append(rlx_time(a.rlx, path, x_path, out, a.repeat, a.mode))
                t["o1"].append(ort_time(s1, {"x": x}, a.repeat))
                t["o2"].append(ort_time(s2, {"x": x}, a.repeat))
            m = {k: statistics.median(v) for k, v in t.items()}
            err = float(np.abs(np.load(os.path.join(out, "y.npy")) - s1.run(None, {"x": x})[0]).max())
            print(f"{name:34} {m['rlx']:8.3f} {m['o1']:8.3f} {m['o2']:8.3f} {m['rlx'] / m['o1']:8.2f} "
                  f"{m['rlx'] / m['o2']:8.2f} {err:9.2g}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
