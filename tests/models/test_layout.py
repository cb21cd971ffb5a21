"""The channels-last lowering (src/mlx/lower_layout.c, RLX_LAYOUT=channels_last; the default on a GPU)
on convolution chains built with onnx.helper, run through `rlx run` and compared with ONNX Runtime:
Conv (1D, 2D grouped and dilated, 3D) feeding elementwise ops with per-channel, row-vector, scalar
and full-size logical operands, BatchNormalization, Where, Cast, max/average pooling (pads,
count_include_pad, ceil_mode), Reduce (kept and dropped axes, the channel axis too), residual Adds,
and readers of the logical layout (Concat, Resize, Flatten, Transpose, outputs).
1x1 convolutions of group 1 without padding run as matmuls on the channels-last rows; Conv + bias +
ReLU and Conv + bias + residual Add + ReLU as one compiled function in lazy mode (rlx_l_epilogue),
except where a sum has another reader; activations that --optimize all moves into the Conv (ReLU,
HardSwish) applied channels-last. usage: test_layout.py RLX_BINARY"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RLX = sys.argv[1]
rng = np.random.default_rng(0)
F = TensorProto.FLOAT


def const(name, a):
    return numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)


def conv(x, y, ci, co, k, inits, nsp=2, **attrs):
    w, b = f"{y}_w", f"{y}_b"
    inits += [const(w, 0.3 * rng.standard_normal((co, ci // attrs.get("group", 1)) + (k,) * nsp)),
              const(b, 0.1 * rng.standard_normal(co))]
    return helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k] * nsp, **attrs)


def resnet_like():
    """2D: stem, max pool, bottleneck with a downsample branch, per-channel affine, pools, heads."""
    I = []
    n = [conv("x", "c1", 3, 8, 3, I, strides=[2, 2], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c1", "s", "b", "m", "v"], ["bn"]),
         helper.make_node("Relu", ["bn"], ["r1"]),
         helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
         conv("p1", "c2", 8, 16, 1, I),
         helper.make_node("Relu", ["c2"], ["r2"]),
         conv("r2", "c3", 16, 16, 3, I, pads=[2, 2, 2, 2], dilations=[2, 2], group=4),
         conv("p1", "down", 8, 16, 1, I),
         helper.make_node("Add", ["c3", "down"], ["res"]),
         helper.make_node("Relu", ["res"], ["r3"]),
         conv("r3", "c4", 16, 8, 1, I, strides=[2, 2]),           # pointwise, strided
         helper.make_node("Mul", ["r3", "chan"], ["m1"]),         # [16,1,1] per channel
         helper.make_node("Add", ["m1", "row"], ["a1"]),          # [4] along W
         helper.make_node("Sub", ["a1", "y"], ["a2"]),            # full-size graph input, logical layout
         helper.make_node("Sigmoid", ["a2"], ["sg"]),
         helper.make_node("Greater", ["sg", "half"], ["gt"]),
         helper.make_node("Where", ["gt", "sg", "a2"], ["wh"]),
         helper.make_node("Cast", ["wh"], ["h16"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["h16"], ["f32"], to=F),
         helper.make_node("AveragePool", ["f32"], ["ap1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("AveragePool", ["f32"], ["ap2"], kernel_shape=[2, 3], strides=[2, 2], pads=[0, 1, 0, 1],
                          count_include_pad=1, ceil_mode=1),
         helper.make_node("MaxPool", ["ap1"], ["mp2"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
         helper.make_node("ReduceMax", ["ap1", "ax1"], ["rmax"], keepdims=0),   # drops the channel axis
         helper.make_node("ReduceSum", ["ap1", "ax3"], ["rsum"], keepdims=0),   # drops W
         helper.make_node("GlobalAveragePool", ["f32"], ["gap"]),
         helper.make_node("Flatten", ["gap"], ["fl"]),
         helper.make_node("Gemm", ["fl", "fc_w", "fc_b"], ["logits"], transB=1),
         helper.make_node("Resize", ["r3", "", "scales"], ["up"], mode="nearest"),
         helper.make_node("Concat", ["up", "up"], ["cat"], axis=1),
         helper.make_node("Transpose", ["ap2"], ["tr"], perm=[0, 2, 3, 1]),
         conv("f32", "c5", 16, 8, 3, I, pads=[1, 1, 1, 1]),
         helper.make_node("HardSwish", ["c5"], ["hs"])]                  # the Conv's activation under --optimize all
    I += [const("s", rng.random(8) + 0.5), const("b", rng.standard_normal(8)), const("m", rng.standard_normal(8)),
          const("v", rng.random(8) + 0.5), const("chan", rng.standard_normal((16, 1, 1))), const("row", rng.standard_normal(4)),
          const("half", 0.5), numpy_helper.from_array(np.array([1], np.int64), "ax1"),
          numpy_helper.from_array(np.array([3], np.int64), "ax3"), const("fc_w", rng.standard_normal((10, 16))),
          const("fc_b", rng.standard_normal(10)), const("scales", [1, 1, 2, 2])]
    outs = ["logits", "mp2", "rmax", "rsum", "cat", "tr", "r3", "c2", "c4", "hs"]  # c2: a conv output with two readers
    g = helper.make_graph(n, "resnet_like",
                          [helper.make_tensor_value_info("x", F, [2, 3, 16, 16]), helper.make_tensor_value_info("y", F, [2, 16, 4, 4])],
                          [helper.make_tensor_value_info(o, F, None) for o in outs], I)
    return g, {"x": rng.standard_normal((2, 3, 16, 16)).astype(np.float32), "y": rng.standard_normal((2, 16, 4, 4)).astype(np.float32)}


def conv1d_3d():
    """1D and 3D chains: conv, relu, pools, a residual add, a mean over the spatial axes."""
    I = []
    n = [conv("x1", "k1", 4, 6, 3, I, nsp=1, pads=[1, 1]),
         helper.make_node("Relu", ["k1"], ["q1"]),
         helper.make_node("MaxPool", ["q1"], ["o1"], kernel_shape=[3], strides=[2], pads=[1, 1]),
         conv("x3", "k3", 2, 4, 3, I, nsp=3, pads=[1] * 6),
         helper.make_node("Relu", ["k3"], ["q3"]),
         conv("q3", "k3b", 4, 4, 1, I, nsp=3),
         helper.make_node("Add", ["q3", "k3b"], ["s3"]),
         helper.make_node("AveragePool", ["s3"], ["o3"], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
         helper.make_node("ReduceMean", ["s3", "sp"], ["m3"], keepdims=1)]
    I += [numpy_helper.from_array(np.array([2, 3, 4], np.int64), "sp")]
    g = helper.make_graph(n, "conv1d_3d",
                          [helper.make_tensor_value_info("x1", F, [2, 4, 9]), helper.make_tensor_value_info("x3", F, [1, 2, 4, 5, 6])],
                          [helper.make_tensor_value_info(o, F, None) for o in ["o1", "o3", "m3"]], I)
    return g, {"x1": rng.standard_normal((2, 4, 9)).astype(np.float32), "x3": rng.standard_normal((1, 2, 4, 5, 6)).astype(np.float32)}


failures = 0
with tempfile.TemporaryDirectory() as d:
    for make in (resnet_like, conv1d_3d):
        g, feeds = make()
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
        model.ir_version = 8
        path = os.path.join(d, f"{g.name}.onnx")
        onnx.save(model, path)
        args = []
        for k, v in feeds.items():
            np.save(os.path.join(d, f"{k}.npy"), v)
            args += ["--input", f"{k}={d}/{k}.npy"]
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        for layout in ("channels_last", "channels_first"):
            for mode in ("lazy", "eager", "compiled"):
                for opt in ("all", "none") if mode != "compiled" else ("all",):
                    out = os.path.join(d, f"out_{layout}_{mode}_{opt}")
                    env = dict(os.environ, RLX_LAYOUT=layout)
                    r = subprocess.run([RLX, "run", path, *args, "--mode", mode, "--optimize", opt, "--output-dir", out],
                                       capture_output=True, text=True, env=env)
                    tag = f"{g.name} {layout} {mode} --optimize {opt}"
                    if r.returncode:
                        print(f"FAIL {tag}: rlx exited {r.returncode}: {r.stderr.strip()[:500]}")
                        failures += 1
                        continue
                    for name, ref in refs.items():
                        got = np.load(os.path.join(out, f"{name}.npy"))
                        err = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
                        tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
                        ok = got.shape == ref.shape and err <= tol
                        failures += not ok
                        if not ok:
                            print(f"FAIL {tag} {name}: shape {got.shape} vs {ref.shape}, max abs err {err:.3g} (tolerance {tol:.3g})")
                print(f"done {g.name} {layout} {mode}")
    bad = subprocess.run([RLX, "run", os.path.join(d, "conv1d_3d.onnx"), "--input", f"x1={d}/x1.npy", "--input", f"x3={d}/x3.npy"],
                         capture_output=True, text=True, env=dict(os.environ, RLX_LAYOUT="nhwc"))
    if bad.returncode == 0 or "RLX_LAYOUT" not in bad.stderr:
        print(f"FAIL RLX_LAYOUT=nhwc: exit {bad.returncode}, stderr {bad.stderr.strip()[:300]}")
        failures += 1
print(f"{failures} failures")
sys.exit(1 if failures else 0)
