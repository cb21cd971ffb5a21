"""ONNX DFT and STFT models beyond the backend suites (dft_length cut and zero-pad, complex
one-sided, real inverse, every signal axis, odd irfft lengths, STFT with frame_length and window,
complex signals, two-sided), with expected outputs from onnx.reference.ReferenceEvaluator, written
in the backend-test layout and run through the conformance runner; every case must pass.
usage: fftsample_models.py CONFORMANCE_BINARY WORKDIR"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from backend_case import fresh_dir, run_expected, save_case

rng = np.random.default_rng(21)


def model(op, opset, inputs, attrs):
    """A one-node model whose inputs are graph inputs (None: an absent optional input), as the
    backend suites pass dft_length, axis and frame_step."""
    node = helper.make_node(op, [k if v is not None else "" for k, v in inputs.items()], ["y"], **attrs)
    while node.input and node.input[-1] == "":
        node.input.pop()
    g_in = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()
            if v is not None]
    out = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)
    graph = helper.make_graph([node], f"{op}_case", g_in, [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def write(root, name, op, opset, inputs, attrs):
    m = model(op, opset, inputs, attrs)
    feeds = {k: v for k, v in inputs.items() if v is not None}
    (y,) = ReferenceEvaluator(m).run(None, feeds)
    save_case(os.path.join(root, name), m, feeds, {"y": y})
    return name


def dft_case(root, name, opset, shape, axis, length=None, inverse=0, onesided=0, dtype=np.float64):
    inputs = {"x": rng.standard_normal(shape).astype(dtype), "dft_length": None if length is None else np.array(length, np.int64)}
    attrs = {"inverse": inverse, "onesided": onesided}
    if opset >= 20:
        inputs["axis"] = np.array(axis, np.int64)
    else:
        attrs["axis"] = axis
    return write(root, name, "DFT", opset, inputs, attrs)


def stft_case(root, name, shape, step, frame, window=False, onesided=1, dtype=np.float64):
    w = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(dtype) if window else None
    inputs = {"signal": rng.standard_normal(shape).astype(dtype), "frame_step": np.array(step, np.int64), "window": w,
              "frame_length": None if window else np.array(frame, np.int64)}
    return write(root, name, "STFT", 17, inputs, {"onesided": onesided})


def main():
    runner, work = sys.argv[1:3]
    root = fresh_dir(work, "fftsample_models")
    names = []
    for opset in (17, 20):
        names += [
            dft_case(root, f"dft{opset}_real_cut", opset, (2, 12, 1), 1, length=8),
            dft_case(root, f"dft{opset}_real_pad", opset, (2, 5, 1), 1, length=9),
            dft_case(root, f"dft{opset}_complex_pad_inverse", opset, (3, 6, 2), 1, length=8, inverse=1),
            dft_case(root, f"dft{opset}_complex_onesided", opset, (2, 7, 2), 1, onesided=1),
            dft_case(root, f"dft{opset}_real_inverse", opset, (2, 6, 1), 1, inverse=1),
            dft_case(root, f"dft{opset}_axis0", opset, (5, 3, 2), 0),
            dft_case(root, f"dft{opset}_axis2_rank4", opset, (2, 3, 7, 2), 2, onesided=0),
            dft_case(root, f"dft{opset}_negative_axis", opset, (2, 4, 3, 1), -3, onesided=1),
            dft_case(root, f"dft{opset}_irfft_odd", opset, (2, 5, 2), 1, length=9, inverse=1, onesided=1),
            dft_case(root, f"dft{opset}_irfft_cut", opset, (2, 8, 2), 1, length=6, inverse=1, onesided=1),
            dft_case(root, f"dft{opset}_float32_onesided", opset, (1, 16, 1), 1, onesided=1, dtype=np.float32),
        ]
    names += [
        stft_case(root, "stft_frame_length_two_sided", (2, 40, 1), 5, frame=8, onesided=0),
        stft_case(root, "stft_window_complex", (1, 33, 2), 4, frame=10, window=True, onesided=0),
        stft_case(root, "stft_window_onesided_odd", (2, 30, 1), 3, frame=7, window=True),
    ]
    return run_expected(runner, "fftsample", root, names, os.path.join(work, "fftsample_models_expected.txt"),
                        os.path.join(work, "conformance-fftsample.txt"))[0]


if __name__ == "__main__":
    sys.exit(main())
