"""ONNX node tests generated here, for importer mappings that the ONNX backend suites cover
thinly: the expected outputs come from onnx.reference.ReferenceEvaluator (or numpy where the
reference evaluator is wrong), the cases are written in the backend-test layout
(model.onnx, test_data_set_0/{input,output}_K.pb) and run by the conformance runner, which must
pass every one of them.

usage: import_cases.py CONFORMANCE_BINARY WORKDIR"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from backend_case import fresh_dir, run_expected, save_case

rng = np.random.default_rng(21)


def write_case(root, name, nodes, inputs, outputs, opset, expected=None):
    """nodes: NodeProtos; inputs: {name: array}; outputs: output names (float/int types from the
    reference run); expected: {name: array} overriding the reference evaluator."""
    vin = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()]
    vout = [helper.make_tensor_value_info(k, TensorProto.UNDEFINED, None) for k in outputs]
    model = helper.make_model(helper.make_graph(nodes, name, vin, vout), opset_imports=[helper.make_opsetid("", opset)])
    got = dict(zip(outputs, ReferenceEvaluator(model).run(None, inputs))) if expected is None else expected
    for v in vout:
        v.type.tensor_type.elem_type = helper.np_dtype_to_tensor_dtype(np.asarray(got[v.name]).dtype)
    save_case(os.path.join(root, name), model, inputs, {k: got[k] for k in outputs})
    return name


def distinct(shape, dtype=np.float32):
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / 3.0 - 5).astype(dtype)


def maxpool_indices(root):
    """MaxPool with its Indices output: 1D/2D/3D, pads, dilations, ceil_mode, storage_order 1,
    ties (the first maximum in row-major window order), integers."""
    specs = [
        ("2d", distinct((2, 3, 7, 8)), dict(kernel_shape=[2, 2], strides=[2, 2])),
        ("2d_pads_dil", distinct((1, 2, 7, 8)), dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1], dilations=[2, 1])),
        ("2d_ceil", distinct((1, 2, 7, 7)), dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
        ("2d_storage_order", distinct((2, 2, 6, 5)), dict(kernel_shape=[2, 3], strides=[2, 1], pads=[1, 1, 0, 1], storage_order=1)),
        ("1d", distinct((2, 3, 11)), dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
        ("3d", distinct((1, 2, 5, 4, 6)), dict(kernel_shape=[2, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1])),
        ("2d_ties", np.ones((1, 2, 4, 5), np.float32), dict(kernel_shape=[2, 2], strides=[1, 2], pads=[0, 1, 1, 0])),
        ("2d_uint8", rng.integers(0, 4, size=(1, 2, 6, 6)).astype(np.uint8), dict(kernel_shape=[3, 3], strides=[2, 2])),
    ]
    for name, x, attrs in specs:
        yield write_case(root, f"test_maxpool_indices_{name}", [helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)],
                         {"x": x}, ["y", "i"], 12)


def quantized(root):
    """QLinearConv / ConvInteger with per-output-channel weight parameters, groups and strides;
    QLinearMatMul with per-row / per-column parameters; MatMulInteger with per-row zero points;
    QuantizeLinear / DequantizeLinear blocked along axis 0."""
    x = rng.integers(0, 256, size=(1, 4, 7, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, size=(6, 2, 3, 3)).astype(np.int8)
    ws, wz = rng.uniform(0.001, 0.01, size=6).astype(np.float32), np.zeros(6, np.int8)
    bias = rng.integers(-500, 500, size=6).astype(np.int32)
    ins = {"x": x, "xs": np.float32(0.02), "xz": np.uint8(128), "w": w, "ws": ws, "wz": wz, "ys": np.float32(0.05),
           "yz": np.uint8(100), "b": bias}
    yield write_case(root, "test_qlinearconv_per_channel_group", [
        helper.make_node("QLinearConv", list(ins), ["y"], group=2, strides=[2, 1], pads=[1, 1, 0, 1])], ins, ["y"], 10)
    wz8 = rng.integers(-3, 3, size=6).astype(np.int8)
    ins = {"x": x, "w": w, "xz": np.uint8(120), "wz": wz8}
    yield write_case(root, "test_convinteger_per_channel_zero_point", [
        helper.make_node("ConvInteger", list(ins), ["y"], group=2, pads=[1, 1, 1, 1], dilations=[1, 2])], ins, ["y"], 10)
    a = rng.integers(0, 256, size=(3, 5)).astype(np.uint8)
    b = rng.integers(0, 256, size=(5, 4)).astype(np.uint8)
    ins = {"a": a, "as": rng.uniform(0.01, 0.02, size=3).astype(np.float32), "az": rng.integers(100, 140, size=3).astype(np.uint8),
           "b": b, "bs": rng.uniform(0.01, 0.02, size=4).astype(np.float32), "bz": rng.integers(100, 140, size=4).astype(np.uint8),
           "ys": np.float32(0.2), "yz": np.uint8(10)}
    # the reference evaluator broadcasts a 1-D a_zero_point along K; the spec's per-row meaning is computed here
    acc = (a.astype(np.int64) - ins["az"][:, None]) @ (b.astype(np.int64) - ins["bz"])
    y = np.clip(np.rint(acc * (ins["as"][:, None] * ins["bs"] / ins["ys"]).astype(np.float32) + 10), 0, 255).astype(np.uint8)
    yield write_case(root, "test_qlinearmatmul_per_row_column", [helper.make_node("QLinearMatMul", list(ins), ["y"])],
                     ins, ["y"], 10, expected={"y": y})
    ins = {"a": a, "b": b, "az": ins["az"], "bz": ins["bz"]}
    acc = ((a.astype(np.int64) - ins["az"][:, None]) @ (b.astype(np.int64) - ins["bz"])).astype(np.int32)
    yield write_case(root, "test_matmulinteger_per_row_zero_point", [helper.make_node("MatMulInteger", list(ins), ["y"])],
                     ins, ["y"], 10, expected={"y": acc})
    xf = rng.uniform(-4, 4, size=(5, 3)).astype(np.float32)
    s, z = rng.uniform(0.02, 0.05, size=(3, 3)).astype(np.float32), rng.integers(-5, 5, size=(3, 3)).astype(np.int8)
    yield write_case(root, "test_quantizelinear_blocked_axis0", [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=0, block_size=2)], {"x": xf, "s": s, "z": z}, ["y"], 21)
    q = rng.integers(-128, 128, size=(5, 3)).astype(np.int8)
    yield write_case(root, "test_dequantizelinear_blocked_axis0", [
        helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0, block_size=2)], {"x": q, "s": s, "z": z}, ["y"], 21)


def main():
    runner, work = sys.argv[1:3]
    root = fresh_dir(work, "import_cases")
    names = list(maxpool_indices(root)) + list(quantized(root))
    return run_expected(runner, "import-cases", root, names, os.path.join(work, "import_cases_expected.txt"),
                        os.path.join(work, "import_cases_results.txt"))[0]


if __name__ == "__main__":
    sys.exit(main())
