"""ONNX models for the importer paths of Attention, RotaryEmbedding and RMSNormalization that the
onnx 1.22 node tests leave out, written in the backend test layout (model.onnx + test_data_set_0)
with expected outputs from onnx.reference.ReferenceEvaluator, then run through the conformance
runner. Where the evaluator itself is wrong (a bool attn_mask with is_causal computes 0 * -inf =
NaN; nonpad_kv_seqlen without attn_mask fails to broadcast) the expected outputs come from an
equivalent model with a float 0/-inf mask.
usage: attention_models.py CONFORMANCE WORKDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import helper as h
from onnx.reference import ReferenceEvaluator

from backend_case import fresh_dir, run_expected, save_case

rng = np.random.default_rng(0)


def f32(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def model(node, inputs, outputs, opset):
    vi = [h.make_tensor_value_info(k, onnx.helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()]
    outs = [h.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in outputs]
    return h.make_model(h.make_graph([node], "g", vi, outs), opset_imports=[h.make_opsetid("", opset)])


def write(root, name, node, inputs, opset=23, ref_node=None, ref_inputs=None):
    outputs = [o for o in node.output if o]
    m = model(node, inputs, outputs, opset)
    ref = model(ref_node or node, ref_inputs or inputs, outputs, opset)
    res = ReferenceEvaluator(ref).run(None, ref_inputs or inputs)
    save_case(os.path.join(root, name), m, inputs, dict(zip(outputs, res)))
    return name


def additive(m):
    return np.where(m, 0, -np.inf).astype(np.float32)


def cases(root):
    # bool attn_mask with is_causal, 3-D packed GQA, Sq != Sk (ONNX aligns causal upper-left)
    q, k, v = f32(2, 3, 24), f32(2, 5, 8), f32(2, 5, 8)
    m = rng.integers(0, 2, (3, 5)).astype(bool)
    m[:, 0] = True
    nd = h.make_node("Attention", ["Q", "K", "V", "M"], ["Y"], is_causal=1, q_num_heads=6, kv_num_heads=2)
    yield write(root, "bool_mask_causal_3d_gqa", nd, {"Q": q, "K": k, "V": v, "M": m}, ref_node=nd,
                ref_inputs={"Q": q, "K": k, "V": v, "M": additive(m)})
    # 3-D inputs, present_key/value requested without a past, causal, softcap and scale
    q, k, v = f32(1, 4, 8), f32(1, 4, 8), f32(1, 4, 8)
    nd = h.make_node("Attention", ["Q", "K", "V"], ["Y", "PK", "PV"], is_causal=1, q_num_heads=2, kv_num_heads=2, softcap=1.5,
                     scale=0.3)
    yield write(root, "present_without_past_3d", nd, {"Q": q, "K": k, "V": v})
    # a bool mask shorter than past + new keys (padded with false), with a past and is_causal
    q, k, v, pk, pv = f32(1, 2, 2, 4), f32(1, 2, 2, 4), f32(1, 2, 2, 4), f32(1, 2, 3, 4), f32(1, 2, 3, 4)
    m = np.ones((2, 4), bool)
    m[1, 1] = False
    nd = h.make_node("Attention", ["Q", "K", "V", "M", "PK", "PV"], ["Y", "OK", "OV"], is_causal=1)
    ins = {"Q": q, "K": k, "V": v, "M": m, "PK": pk, "PV": pv}
    yield write(root, "short_bool_mask_past_causal", nd, ins, ref_node=nd, ref_inputs={**ins, "M": additive(m)})
    # nonpad_kv_seqlen alone (opset 24)
    q, k, v = f32(2, 2, 3, 4), f32(2, 2, 6, 4), f32(2, 2, 6, 4)
    n = np.array([2, 6], np.int64)
    pad = np.arange(6)[None, None, None, :] < n[:, None, None, None]
    yield write(root, "nonpad_only", h.make_node("Attention", ["Q", "K", "V", "", "", "", "N"], ["Y"]),
                {"Q": q, "K": k, "V": v, "N": n}, opset=24, ref_node=h.make_node("Attention", ["Q", "K", "V", "M"], ["Y"]),
                ref_inputs={"Q": q, "K": k, "V": v, "M": additive(pad)})
    # a rank-1 float mask [Sk]
    q, k, v = f32(1, 2, 4, 4), f32(1, 2, 5, 4), f32(1, 2, 5, 4)
    yield write(root, "rank1_mask", h.make_node("Attention", ["Q", "K", "V", "M"], ["Y"]), {"Q": q, "K": k, "V": v, "M": f32(5)})
    # RotaryEmbedding: 3-D input, interleaved, partial rotation, position ids
    x = f32(2, 4, 12)
    ang = rng.uniform(0, 3, (10, 2))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    pos = np.array([[0, 3, 5, 9], [1, 1, 2, 7]], np.int64)
    yield write(root, "rotary_3d_interleaved_positions",
                h.make_node("RotaryEmbedding", ["X", "C", "S", "P"], ["Y"], interleaved=1, num_heads=2, rotary_embedding_dim=4),
                {"X": x, "C": cos, "S": sin, "P": pos})
    # RMSNormalization over two axes with a scale broadcast over the first
    yield write(root, "rms_two_axes", h.make_node("RMSNormalization", ["X", "S"], ["Y"], axis=1, epsilon=1e-3),
                {"X": f32(2, 3, 4), "S": f32(4)})


def main():
    runner, work = sys.argv[1:3]
    root = fresh_dir(work, "attention_models")
    names = list(cases(root))
    return run_expected(runner, "attention_models", root, names, os.path.join(work, "attention_models.expect"),
                        os.path.join(work, "attention_models.txt"))[0]


if __name__ == "__main__":
    sys.exit(main())
