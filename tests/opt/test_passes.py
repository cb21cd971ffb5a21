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
    vi = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()]
    vo = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    g = helper.make_graph(nodes, "g", vi, vo, [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def graph_text(path, inputs, spec):
    """The graph that rlx info prints after the passes of spec."""
    args = [RLX, "info", path, "--graph", "--optimize", spec]
    for k, v in inputs.items():
        args += ["--shape", f"{k}=" + ",".join(map(str, v.shape))]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr)
    return r.stdout


def op_counts(path, inputs, spec):
    return Counter(re.findall(r"^\s*%\d+(?:, %\d+)* = (\w+)", graph_text(path, inputs, spec), re.M))


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
MUL_SHAPES = {}  # case name -> the output shapes of its Mul nodes after the passes


def case(pass_name, name, m, inputs, before, after, tol=1e-5, spec=None, mul_shapes=None):
    """before/after: {op: count} expected with --optimize none and with --optimize spec (default:
    the pass, then dce); mul_shapes: the output shapes its Mul nodes must then have."""
    CASES.append((pass_name, name, m, inputs, before, after, tol, spec or pass_name + ",dce"))
    if mul_shapes is not None:
        MUL_SHAPES[name] = sorted(mul_shapes)


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
# input side: HardSwish then x 1.7 - 0.3 into a pointwise conv (no padding); not into a padded one
xs = {"x": x}
case("fold_affine", "affine_into_unpadded_conv", model([
    helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Mul", ["h", "k"], ["hk"]), helper.make_node("Sub", ["hk", "d"], ["a"]),
    helper.make_node("Conv", ["a", "W", "b"], ["y"], strides=[2, 1])], xs, ["y"],
    {"W": f32(5, 3, 1, 1), "b": f32(5), "k": np.array(1.7, np.float32), "d": np.array(0.3, np.float32)}), xs,
    {"Conv": 1, "Mul": 1, "Sub": 1}, {"Conv": 1, "Mul": 0, "Sub": 0})
case("fold_affine", "affine_kept_before_padded_conv", model([
    helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Mul", ["h", "k"], ["hk"]), helper.make_node("Add", ["hk", "d"], ["a"]),
    helper.make_node("Conv", ["a", "W"], ["y"], group=3, pads=[1, 1, 1, 1])], xs, ["y"],
    {"W": f32(3, 1, 3, 3), "k": np.array(1.7, np.float32), "d": np.array(0.3, np.float32)}), xs,
    {"Conv": 1, "Mul": 1, "Add": 1}, {"Conv": 1, "Mul": 1, "Add": 1})
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

# Conv + activation into the Conv's activation attribute (HardSwish after the activation pass
# writes ONNX's out as one op); not when the conv's result has another reader; a scalar Mul after
# a Conv that carries an activation is not folded into its weights
xc, cw = f32(2, 6, 9, 8, lo=-2, hi=2), {"W": f32(7, 6, 3, 3), "b": f32(7), "k": np.array(1.5, np.float32)}
case("epilogue", "conv_bias_relu", model([
    helper.make_node("Conv", ["x", "W", "b"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
    {"x": xc}, ["y"], cw), {"x": xc}, {"Conv": 1, "Relu": 1}, {"Conv": 1, "Relu": 0})
case("epilogue", "conv_hardswish", model([
    helper.make_node("Conv", ["x", "W"], ["c"], strides=[2, 2]), helper.make_node("HardSwish", ["c"], ["y"])],
    {"x": xc}, ["y"], cw, opset=14), {"x": xc}, {"Conv": 1, "Min": 1}, {"Conv": 1, "HardSwish": 0, "Min": 0},
    spec="activation,epilogue,dce")
case("epilogue", "conv_sigmoid_second_reader_kept", model([
    helper.make_node("Conv", ["x", "W", "b"], ["c"]), helper.make_node("Sigmoid", ["c"], ["y"])],
    {"x": xc}, ["y", "c"], cw), {"x": xc}, {"Conv": 1, "Sigmoid": 1}, {"Conv": 1, "Sigmoid": 1})
case("epilogue", "mul_after_conv_relu_not_folded", model([
    helper.make_node("Conv", ["x", "W", "b"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
    helper.make_node("Mul", ["r", "k"], ["y"])], {"x": xc}, ["y"], cw), {"x": xc}, {"Conv": 1, "Relu": 1, "Mul": 1},
    {"Conv": 1, "Relu": 0, "Mul": 1}, spec="epilogue,fold_affine,dce")


# ---- activation: GELU (exact, tanh), SiLU, HardSigmoid, HardSwish written out ----
def sc(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


xa = f32(2, 3, 8, lo=-4, hi=4)
consts = {"sqrt2": np.array(1.4142135, np.float32), "one": np.array(1, np.float32), "half": np.array(0.5, np.float32),
          "k": np.array(0.044715, np.float32), "three": np.array(3, np.float32), "c": np.array(0.7978845608, np.float32),
          "zero": np.array(0, np.float32), "six": np.array(6, np.float32)}
case("activation", "gelu_erf", model([
    helper.make_node("Div", ["x", "sqrt2"], ["a"]), helper.make_node("Erf", ["a"], ["b"]), helper.make_node("Add", ["b", "one"], ["e"]),
    helper.make_node("Mul", ["x", "e"], ["m"]), helper.make_node("Mul", ["m", "half"], ["y"])], {"x": xa}, ["y"], consts),
    {"x": xa}, {"Erf": 1, "Gelu": 0}, {"Gelu": 1, "Erf": 0, "Mul": 0, "Div": 0})
case("activation", "gelu_tanh", model([
    helper.make_node("Pow", ["x", "three"], ["p"]), helper.make_node("Mul", ["k", "p"], ["q"]), helper.make_node("Add", ["x", "q"], ["s"]),
    helper.make_node("Mul", ["s", "c"], ["t"]), helper.make_node("Tanh", ["t"], ["th"]), helper.make_node("Add", ["one", "th"], ["e"]),
    helper.make_node("Mul", ["half", "x"], ["h"]), helper.make_node("Mul", ["h", "e"], ["y"])], {"x": xa}, ["y"], consts),
    {"x": xa}, {"Tanh": 1, "GeluApprox": 0}, {"GeluApprox": 1, "Tanh": 0, "Mul": 0, "Pow": 0})
# jax2tf's grouping (Magika): x (x (0.044715 x)), the outer product 0.5 (1 + tanh) times x
case("activation", "gelu_tanh_nested_cube", model([
    helper.make_node("Mul", ["k", "x"], ["q1"]), helper.make_node("Mul", ["x", "q1"], ["q2"]), helper.make_node("Mul", ["x", "q2"], ["q"]),
    helper.make_node("Add", ["x", "q"], ["s"]), helper.make_node("Mul", ["c", "s"], ["t"]), helper.make_node("Tanh", ["t"], ["th"]),
    helper.make_node("Add", ["one", "th"], ["e"]), helper.make_node("Mul", ["half", "e"], ["h"]), helper.make_node("Mul", ["x", "h"], ["y"])],
    {"x": xa}, ["y"], consts), {"x": xa}, {"Tanh": 1, "GeluApprox": 0}, {"GeluApprox": 1, "Tanh": 0, "Mul": 0})
case("activation", "silu", model([helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"])],
                                 {"x": xa}, ["y"]), {"x": xa}, {"Sigmoid": 1, "Mul": 1}, {"Silu": 1, "Sigmoid": 0, "Mul": 0})
case("activation", "onnx_hardsigmoid", model([helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4)], {"x": xa}, ["y"]),
     {"x": xa}, {"Min": 1, "Max": 1, "HardSigmoid": 0}, {"HardSigmoid": 1, "Min": 0, "Max": 0, "Mul": 0, "Add": 0})
case("activation", "onnx_hardswish", model([helper.make_node("HardSwish", ["x"], ["y"])], {"x": xa}, ["y"], opset=14),
     {"x": xa}, {"Min": 1, "Max": 1, "HardSwish": 0}, {"HardSwish": 1, "Min": 0, "Max": 0, "Mul": 0, "Add": 0})
case("activation", "hardswish_relu6_div6", model([
    helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Max", ["a", "zero"], ["b"]), helper.make_node("Min", ["b", "six"], ["r"]),
    helper.make_node("Mul", ["x", "r"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])], {"x": xa}, ["y"], consts),
    {"x": xa}, {"Min": 1, "Div": 1}, {"HardSwish": 1, "Min": 0, "Max": 0, "Mul": 0, "Div": 0, "Add": 0})
# x relu6(x + 3) without the / 6 (exporters fold it into the next Conv): 6 HardSwish(x); with the
# whole pipeline the 6 moves into the pointwise Conv after it and the HardSwish into the one before
case("activation", "hardswish_times_6", model([
    helper.make_node("Add", ["x", "three"], ["a"]), helper.make_node("Max", ["a", "zero"], ["b"]), helper.make_node("Min", ["b", "six"], ["r"]),
    helper.make_node("Mul", ["x", "r"], ["y"])], {"x": xa}, ["y"], consts),
    {"x": xa}, {"Min": 1, "Mul": 1}, {"HardSwish": 1, "Mul": 1, "Min": 0, "Max": 0, "Add": 0})
xh = f32(1, 4, 6, 7, lo=-4, hi=4)
case("activation", "conv_hardswish6_conv", model([
    helper.make_node("Conv", ["x", "Wd"], ["c"], group=4, pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c", "three"], ["a"]), helper.make_node("Max", ["a", "zero"], ["b"]), helper.make_node("Min", ["b", "six"], ["r"]),
    helper.make_node("Mul", ["c", "r"], ["m"]), helper.make_node("Conv", ["m", "Wp"], ["y"])], {"x": xh}, ["y"],
    {**consts, "Wd": f32(4, 1, 3, 3), "Wp": f32(5, 4, 1, 1)}),
    {"x": xh}, {"Conv": 2, "Min": 1, "Mul": 1}, {"Conv": 2, "HardSwish": 0, "Mul": 0, "Min": 0, "Max": 0, "Add": 0}, spec="all")
# x relu6(x + 2) / 6 is not HardSwish (nor a multiple of it): left alone
case("activation", "not_hardswish_kept", model([
    helper.make_node("Add", ["x", "two"], ["a"]), helper.make_node("Max", ["a", "zero"], ["b"]), helper.make_node("Min", ["b", "six"], ["r"]),
    helper.make_node("Mul", ["x", "r"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])], {"x": xa}, ["y"],
    {**consts, "two": np.array(2, np.float32)}), {"x": xa}, {"Min": 1, "Div": 1}, {"HardSwish": 0, "HardSigmoid": 0, "Min": 1, "Div": 1})


# ---- norm: LayerNorm and RmsNorm written out ----
def layer_norm_nodes(axis, with_affine=True, square="Pow"):
    sq = helper.make_node("Pow", ["d", "two"], ["d2"]) if square == "Pow" else helper.make_node("Mul", ["d", "d"], ["d2"])
    nodes = [helper.make_node("ReduceMean", ["x"], ["m"], axes=[axis], keepdims=1), helper.make_node("Sub", ["x", "m"], ["d"]), sq,
             helper.make_node("ReduceMean", ["d2"], ["v"], axes=[axis], keepdims=1), helper.make_node("Add", ["v", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Div", ["d", "s"], ["n" if with_affine else "y"])]
    if with_affine:
        nodes += [helper.make_node("Mul", ["n", "g"], ["ng"]), helper.make_node("Add", ["ng", "b"], ["y"])]
    return nodes


xn = f32(2, 5, 16)
nc = {"two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32), "g": f32(16, lo=0.5, hi=1.5), "b": f32(16)}
case("norm", "layer_norm_last_axis", model(layer_norm_nodes(-1), {"x": xn}, ["y"], nc), {"x": xn},
     {"Sqrt": 1, "LayerNorm": 0}, {"LayerNorm": 1, "Sqrt": 0, "Reduce": 0, "Mul": 0, "Add": 0, "Div": 0})
case("norm", "layer_norm_no_affine_mul_square", model(layer_norm_nodes(2, False, "Mul"), {"x": xn}, ["y"], nc), {"x": xn},
     {"Sqrt": 1, "LayerNorm": 0}, {"LayerNorm": 1, "Sqrt": 0, "Reduce": 0})
xc = f32(1, 6, 4, 5)
ncc = {**nc, "g": f32(6, 1, 1, lo=0.5, hi=1.5), "b": f32(6, 1, 1)}
case("norm", "layer_norm_channels", model(layer_norm_nodes(1), {"x": xc}, ["y"], ncc), {"x": xc},
     {"Sqrt": 1, "LayerNorm": 0}, {"LayerNorm": 1, "Sqrt": 0, "Reduce": 0, "Mul": 0, "Add": 0})
case("norm", "rms_norm", model([
    helper.make_node("Pow", ["x", "two"], ["x2"]), helper.make_node("ReduceMean", ["x2"], ["ms"], axes=[-1], keepdims=1),
    helper.make_node("Add", ["ms", "eps"], ["e"]), helper.make_node("Sqrt", ["e"], ["r"]), helper.make_node("Div", ["x", "r"], ["n"]),
    helper.make_node("Mul", ["g", "n"], ["y"])], {"x": xn}, ["y"], nc), {"x": xn}, {"Sqrt": 1, "RmsNorm": 0},
    {"RmsNorm": 1, "Sqrt": 0, "Reduce": 0, "Mul": 0, "Div": 0})
# the variance of another tensor than the centred x: not a layer norm
case("norm", "not_layer_norm_kept", model([
    helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1], keepdims=1), helper.make_node("Sub", ["x", "m"], ["d"]),
    helper.make_node("Pow", ["x", "two"], ["d2"]), helper.make_node("ReduceMean", ["d2"], ["v"], axes=[-1], keepdims=1),
    helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]), helper.make_node("Div", ["d", "s"], ["y"])],
    {"x": xn}, ["y"], nc), {"x": xn}, {"Sqrt": 1}, {"LayerNorm": 0, "RmsNorm": 0, "Sqrt": 1})



# the moments form that jax (flax.linen.LayerNorm through tf2onnx) writes: sums scaled by 1/N,
# E[x^2] - m^2 clamped at 0, gamma times the reciprocal square root, Reshapes restoring the axis
def moments_nodes(scale="rn"):
    return [helper.make_node("ReduceSum", ["x", "ax"], ["s1"], keepdims=0), helper.make_node("Mul", ["x", "x"], ["x2"]),
            helper.make_node("ReduceSum", ["x2", "ax"], ["s2"], keepdims=0), helper.make_node("Mul", ["s2", scale], ["e2"]),
            helper.make_node("Mul", ["s1", scale], ["m"]), helper.make_node("Mul", ["m", "m"], ["mm"]),
            helper.make_node("Sub", ["e2", "mm"], ["v"]), helper.make_node("Max", ["zero", "v"], ["vc"]),
            helper.make_node("Add", ["vc", "eps"], ["ve"]), helper.make_node("Reshape", ["ve", "kshape"], ["ver"]),
            helper.make_node("Sqrt", ["ver"], ["sd"]), helper.make_node("Reciprocal", ["sd"], ["r"]),
            helper.make_node("Mul", ["r", "g"], ["rg"]), helper.make_node("Reshape", ["m", "kshape"], ["mr"]),
            helper.make_node("Sub", ["x", "mr"], ["c"]), helper.make_node("Mul", ["c", "rg"], ["y0"]),
            helper.make_node("Add", ["y0", "b"], ["y"])]


xj = f32(2, 6, 5, lo=-2, hi=3)
njc = {"ax": np.array([1], np.int64), "rn": np.array(1 / 6, np.float32), "rn7": np.array(1 / 7, np.float32),
       "zero": np.array(0, np.float32), "eps": np.array(1e-6, np.float32), "kshape": np.array([2, 1, 5], np.int64),
       "g": f32(1, 6, 1, lo=0.5, hi=1.5), "b": f32(1, 6, 1)}
case("norm", "layer_norm_moments_jax", model(moments_nodes(), {"x": xj}, ["y"], njc), {"x": xj},
     {"Sqrt": 1, "LayerNorm": 0}, {"LayerNorm": 1, "Reduce": 0, "Sqrt": 0, "Max": 0, "Mul": 0, "Add": 0, "Sub": 0})
# scaled by 1/7 over an axis of 6: not a mean, kept
case("norm", "layer_norm_moments_wrong_scale_kept", model(moments_nodes("rn7"), {"x": xj}, ["y"], njc), {"x": xj},
     {"Sqrt": 1}, {"LayerNorm": 0, "Sqrt": 1})

# ---- attention: MatMul, scale, mask, Softmax, MatMul ----
B, H, S, D = 2, 3, 7, 8
qkv = {"q": f32(B, H, S, D), "k": f32(B, H, S, D), "v": f32(B, H, S, D)}
mask = np.where(rng.random((B, 1, 1, S)) < 0.2, -1e4, 0).astype(np.float32)
case("attention", "bert_scale_mask", model([
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s0"]),
    helper.make_node("Div", ["s0", "sd"], ["s1"]), helper.make_node("Add", ["s1", "mask"], ["s2"]),
    helper.make_node("Softmax", ["s2"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])], qkv, ["y"],
    {"sd": np.array(np.sqrt(D), np.float32), "mask": mask}), qkv, {"Softmax": 1, "MatMul": 2}, {"Attention": 1, "Softmax": 0, "MatMul": 0})
case("attention", "scaled_q_reshaped_softmax", model([
    helper.make_node("Mul", ["q", "a"], ["qa"]), helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
    helper.make_node("MatMul", ["qa", "kt"], ["s0"]), helper.make_node("Softmax", ["s0"], ["p"], axis=3),
    helper.make_node("MatMul", ["p", "v"], ["y"])], qkv, ["y"], {"a": np.array([0.3], np.float32)}, opset=11), qkv,
    {"Softmax": 1, "MatMul": 2}, {"Attention": 1, "Softmax": 0, "MatMul": 0})
kt_in = {"q": qkv["q"], "kt": np.ascontiguousarray(qkv["k"].transpose(0, 1, 3, 2)), "v": qkv["v"]}
case("attention", "given_k_transposed", model([
    helper.make_node("MatMul", ["q", "kt"], ["s0"]), helper.make_node("Softmax", ["s0"], ["p"], axis=-1),
    helper.make_node("MatMul", ["p", "v"], ["y"])], kt_in, ["y"]), kt_in, {"Softmax": 1}, {"Attention": 1, "Softmax": 0, "MatMul": 0})
# softmax over another axis than the keys': not attention
case("attention", "softmax_other_axis_kept", model([
    helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), helper.make_node("MatMul", ["q", "kt"], ["s0"]),
    helper.make_node("Softmax", ["s0"], ["p"], axis=2), helper.make_node("MatMul", ["p", "v"], ["y"])], qkv, ["y"]), qkv,
    {"Softmax": 1}, {"Attention": 0, "Softmax": 1})


# ---- transpose: Transpose of a Transpose ----
xt = f32(2, 3, 4, 5)
case("transpose", "compose", model([helper.make_node("Transpose", ["x"], ["a"], perm=[0, 2, 3, 1]),
                                    helper.make_node("Transpose", ["a"], ["y"], perm=[2, 0, 3, 1])], {"x": xt}, ["y"]),
     {"x": xt}, {"Transpose": 2}, {"Transpose": 1})
case("transpose", "cancel", model([helper.make_node("Transpose", ["x"], ["a"], perm=[0, 2, 3, 1]),
                                   helper.make_node("Transpose", ["a"], ["b"], perm=[0, 3, 1, 2]), helper.make_node("Relu", ["b"], ["y"])],
                                  {"x": xt}, ["y"]), {"x": xt}, {"Transpose": 2}, {"Transpose": 0, "Relu": 1})

# ---- identity: view ops that return their input dropped, Reshape of a Reshape composed ----
xi = f32(1, 4, 6)
sh = {"s1": np.array([4, 6], np.int64), "s3": np.array([1, 4, 6], np.int64), "s2": np.array([2, 2, 6], np.int64)}
case("identity", "squeeze_unsqueeze", model([  # Reshape to [4,6] and back: both gone; then one Reshape of two
    helper.make_node("Reshape", ["x", "s1"], ["a"]), helper.make_node("Reshape", ["a", "s3"], ["b"]),
    helper.make_node("Relu", ["b"], ["r"]), helper.make_node("Reshape", ["r", "s1"], ["c"]),
    helper.make_node("Reshape", ["c", "s2"], ["y"])], {"x": xi}, ["y"], sh), {"x": xi}, {"Reshape": 4}, {"Reshape": 1, "Relu": 1})
sl = {"st": np.array([0, 0], np.int64), "en": np.array([9, 2**62], np.int64), "ax": np.array([0, 2], np.int64),
      "one": np.array([1, 1], np.int64), "neg": np.array([-1], np.int64), "big": np.array([-2**62], np.int64),
      "a1": np.array([1], np.int64), "e3": np.array([3], np.int64), "z": np.array([0], np.int64)}
case("identity", "whole_slices", model([  # full-range slices go; a reversing and a cutting Slice stay
    helper.make_node("Slice", ["x", "st", "en", "ax"], ["a"]), helper.make_node("Slice", ["a", "st", "en", "ax", "one"], ["b"]),
    helper.make_node("Slice", ["b", "neg", "big", "a1", "neg"], ["d"]), helper.make_node("Slice", ["d", "z", "e3", "a1"], ["y"])],
    {"x": xi}, ["y"], sl), {"x": xi}, {"Slice": 4}, {"Slice": 2})
xe = f32(3, 1, 5)
case("identity", "expand_same_shape", model([
    helper.make_node("Expand", ["x", "s"], ["a"]), helper.make_node("Exp", ["a"], ["y"])], {"x": xe}, ["y"],
    {"s": np.array([3, 1, 5], np.int64)}), {"x": xe}, {"Expand": 1}, {"Expand": 0, "Exp": 1})

# ---- scalarize: size-1 constants into rank-0 scalars (a [1,1,1,1] one that broadcasts stays) ----
case("scalarize", "size1_operands", model([
    helper.make_node("Mul", ["x", "c1"], ["a"]), helper.make_node("Add", ["c11", "a"], ["b"]), helper.make_node("Sub", ["b", "c4"], ["y"])],
    {"x": xa}, ["y"], {"c1": np.array([1.5], np.float32), "c11": np.array([[-0.5]], np.float32),
                       "c4": np.full((1, 1, 1, 1), 0.25, np.float32)}), {"x": xa}, {"Mul": 1, "Add": 1, "Sub": 1},
    {"Mul": 1, "Add": 1, "Sub": 1}, spec="scalarize,dce")


# ---- channel_scale: a per-channel scale of a Conv's input (squeeze-and-excitation) into its weights ----
xse = f32(1, 8, 10, 12)
se_nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]), helper.make_node("Sigmoid", ["p"], ["g"]),
            helper.make_node("Mul", ["x", "g"], ["m"])]
case("channel_scale", "se_into_pointwise_conv", model(se_nodes + [helper.make_node("Conv", ["m", "W", "b"], ["y"])], {"x": xse}, ["y"],
                                                       {"W": f32(4, 8, 1, 1), "b": f32(4)}),
     {"x": xse}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1}, mul_shapes=["[4,8,1,1]"])
case("channel_scale", "gate_first_padded_conv", model(se_nodes[:2] + [helper.make_node("Mul", ["g", "x"], ["m"]),
                                                     helper.make_node("Conv", ["m", "W"], ["y"], pads=[1, 1, 1, 1], strides=[2, 1])],
                                                    {"x": xse}, ["y"], {"W": f32(3, 8, 3, 3)}),
     {"x": xse}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1}, mul_shapes=["[3,8,3,3]"])
# kept: a grouped conv, weights larger than x, a scaled x with another reader
case("channel_scale", "grouped_conv_kept", model(se_nodes + [helper.make_node("Conv", ["m", "W"], ["y"], group=2)], {"x": xse}, ["y"],
                                                 {"W": f32(4, 4, 1, 1)}), {"x": xse}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1},
     mul_shapes=["[1,8,10,12]"])
xsm = f32(1, 8, 3, 3)
case("channel_scale", "larger_weights_kept", model(se_nodes + [helper.make_node("Conv", ["m", "W"], ["y"], pads=[1, 1, 1, 1])], {"x": xsm},
                                                   ["y"], {"W": f32(16, 8, 3, 3)}), {"x": xsm}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1},
     mul_shapes=["[1,8,3,3]"])
case("channel_scale", "second_reader_kept", model(se_nodes + [helper.make_node("Conv", ["m", "W"], ["c"]), helper.make_node("Relu", ["m"], ["r"]),
                                                             helper.make_node("ReduceSum", ["r"], ["rs"], keepdims=0),
                                                             helper.make_node("Add", ["c", "rs"], ["y"])], {"x": xse}, ["y"],
                                                  {"W": f32(4, 8, 1, 1)}), {"x": xse}, {"Conv": 1, "Mul": 1}, {"Conv": 1, "Mul": 1},
     mul_shapes=["[1,8,10,12]"])


# ---- onehot: a one-hot encoding's product with a matrix into a gather of its rows ----
# indices in [0, V) and outside it (negative, V and beyond: zero rows), the range as [V] or
# [1, 1, V] and on either side of Equal, int32 and int64; kept: a range that is not 0..V-1
def onehot_model(idx, V, D, range_shape=None, range_first=False, start=0):
    rng_v = np.arange(start, start + V, dtype=idx.dtype).reshape(range_shape or (V,))
    eq = ["r", "i"] if range_first else ["i", "r"]
    return model([helper.make_node("Unsqueeze", ["idx", "ax"], ["i"]), helper.make_node("Equal", eq, ["e"]),
                  helper.make_node("Cast", ["e"], ["oh"], to=TensorProto.FLOAT), helper.make_node("MatMul", ["oh", "W"], ["y"])],
                 {"idx": idx}, ["y"], {"ax": np.array([-1], np.int64), "r": rng_v, "W": f32(V, D)})


idx32 = rng.integers(-3, 12, size=(2, 7)).astype(np.int32)
case("onehot", "embedding_int32", onehot_model(idx32, 10, 6), {"idx": idx32}, {"MatMul": 1, "Equal": 1},
     {"MatMul": 0, "Equal": 0, "Gather": 1, "Concat": 1})
idx64 = rng.integers(-2, 260, size=(1, 300)).astype(np.int64)
case("onehot", "range_first_rank3_int64", onehot_model(idx64, 257, 16, (1, 1, 257), range_first=True), {"idx": idx64},
     {"MatMul": 1, "Equal": 1}, {"MatMul": 0, "Equal": 0, "Gather": 1})
case("onehot", "range_from_1_kept", onehot_model(idx32, 10, 6, start=1), {"idx": idx32}, {"MatMul": 1, "Equal": 1},
     {"MatMul": 1, "Equal": 1, "Gather": 0})


# ---- sink_reshape: an elementwise op after a Reshape that only drops or inserts size-1 axes moved before it ----
# a 1D convolution written as a 2D one over [N, C, L, 1], squeezed, then bias and activation: with
# the passes that follow, the Conv takes both; axes inserted, a constant on either side; kept: a
# Reshape that regroups axes, and one with a second reader
def i64(*v):
    return np.array(v, np.int64)


x1 = f32(1, 4, 10, 1)
case("sink_reshape", "conv1d_squeezed_bias_act", model([
    helper.make_node("Conv", ["x", "W"], ["c"]), helper.make_node("Reshape", ["c", "s"], ["r"]),
    helper.make_node("Add", ["r", "b"], ["a"]), helper.make_node("Tanh", ["a"], ["y"])], {"x": x1}, ["y"],
    {"W": f32(6, 4, 3, 1), "s": i64(1, 6, 8), "b": f32(6, 1)}), {"x": x1}, {"Conv": 1, "Add": 1, "Tanh": 1},
    {"Conv": 1, "Add": 0, "Tanh": 0, "Reshape": 1}, spec="sink_reshape,constfold,fold_affine,epilogue,dce")
x2 = f32(2, 6)
case("sink_reshape", "inserted_axis_mul_sub", model([
    helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Mul", ["r", "m"], ["p"]),
    helper.make_node("Sub", ["c", "p"], ["y"])], {"x": x2}, ["y"], {"s": i64(2, 1, 6), "m": f32(6), "c": f32(1, 1, 6)}),
    {"x": x2}, {"Mul": 1, "Sub": 1}, {"Mul": 1, "Sub": 1}, mul_shapes=["[2,6]"])
case("sink_reshape", "regrouping_kept", model([
    helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Mul", ["r", "m"], ["y"])], {"x": x2}, ["y"],
    {"s": i64(3, 4), "m": f32(4)}), {"x": x2}, {"Mul": 1}, {"Mul": 1}, mul_shapes=["[3,4]"])
case("sink_reshape", "reshape_with_second_reader_kept", model([
    helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Mul", ["r", "m"], ["p"]),
    helper.make_node("Add", ["p", "r"], ["y"])], {"x": x2}, ["y"], {"s": i64(2, 1, 6), "m": f32(6)}),
    {"x": x2}, {"Mul": 1}, {"Mul": 1}, mul_shapes=["[2,1,6]"])


def op_shapes(path, inputs, spec, op):
    """Output shapes of the nodes of op `op` in the graph printed by rlx info."""
    return re.findall(rf"= {op}\([^)]*\)[^:\n]*: \w+(\[[0-9,]*\])", graph_text(path, inputs, spec))


def scalar_constants(path, inputs, spec):
    """Shapes of the constants in the graph printed by rlx info."""
    return re.findall(r"= Constant : float32(\[[0-9,]*\])", graph_text(path, inputs, spec))


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
            if name == "size1_operands":  # the [1] and [1,1] initializers became rank-0 constants, not the broadcasting one
                shapes = sorted(scalar_constants(path, inputs, spec))
                if shapes != ["[]", "[]"]:
                    bad.append(f"constants {shapes}, want two of shape []")
            if name in MUL_SHAPES and sorted(op_shapes(path, inputs, spec, "Mul")) != MUL_SHAPES[name]:
                bad.append(f"Mul shapes {sorted(op_shapes(path, inputs, spec, 'Mul'))}, want {MUL_SHAPES[name]}")
            failures += bool(bad)
            print(f"{'FAIL' if bad else 'ok  '} {pass_name} {name}: {'; '.join(bad) or f'max abs error {err:.2g}'}")
    print(f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
