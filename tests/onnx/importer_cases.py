"""ONNX importer cases beyond the ONNX backend test data: one-node (or small) models whose expected
outputs come from onnx.reference.ReferenceEvaluator, written in the backend-test layout
(model.onnx + test_data_set_0/{input,output}_K.pb) and run through the conformance runner.

usage: importer_cases.py CONFORMANCE_RUNNER WORKDIR [--filter SUBSTRING]
Exits 1 unless every case passes."""
import os
import re
import subprocess
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from backend_case import fresh_dir, save_case

rng = np.random.default_rng(7)
OPSET = 22


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


class Case:
    """A model of `nodes` over named inputs (dict name -> array, in order); outputs named in `outputs`."""

    def __init__(self, name, nodes, inputs, outputs, opset=OPSET, initializers=None, domains=None, expected=None):
        self.name, self.nodes, self.inputs, self.outputs = name, nodes, inputs, outputs
        self.opset, self.initializers, self.domains = opset, initializers or {}, domains or {}
        self.expected = expected  # outputs from a numpy oracle where onnx.reference falls short

    def model(self):
        vi = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in self.inputs.items()]
        outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in self.outputs]
        inits = [numpy_helper.from_array(v, k) for k, v in self.initializers.items()]
        g = helper.make_graph(self.nodes, self.name, vi, outs, inits)
        imports = [helper.make_opsetid("", self.opset)] + [helper.make_opsetid(d, v) for d, v in self.domains.items()]
        return helper.make_model(g, opset_imports=imports)

    def write(self, root):
        m = self.model()
        want = self.expected if self.expected is not None else reference(self)
        save_case(os.path.join(root, "test_" + self.name), m, self.inputs, dict(zip(self.outputs, want)))


def reference(case):
    return ReferenceEvaluator(case.model()).run(None, case.inputs)


def one(name, op, inputs, n_out=1, opset=OPSET, domain="", expected=None, **attrs):
    """One node; inputs named "" are left out (optional inputs)."""
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, list(inputs), outs, domain=domain or None, **attrs)
    feed = {k: v for k, v in inputs.items() if k}
    return Case(name, [node], feed, outs, opset=opset, domains={domain: 1} if domain else None, expected=expected)


# ---- RNN / GRU / LSTM: a numpy oracle (onnx.reference ignores activations, clip and bidirectional) ----

def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTS = {"Tanh": lambda x, a, b: np.tanh(x), "Sigmoid": lambda x, a, b: sigmoid(x), "Relu": lambda x, a, b: np.maximum(x, 0),
        "Affine": lambda x, a, b: a * x + b, "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
        "ScaledTanh": lambda x, a, b: a * np.tanh(b * x), "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
        "Softsign": lambda x, a, b: x / (1 + np.abs(x))}


def recurrent_oracle(kind, X, W, R, B, h0, c0, P, hidden, direction, acts, alphas, betas, clip, lbr, layout):
    if layout:
        X = X.transpose(1, 0, 2)
    S, Bn, _ = X.shape
    D = 2 if direction == "bidirectional" else 1
    per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
    Y, Hs, Cs = np.zeros((S, D, Bn, hidden)), [], []
    for d in range(D):
        act = [(lambda x, k=k: ACTS[acts[k]](x, alphas[k], betas[k])) for k in range(d * per, d * per + per)]
        cl = (lambda x: np.clip(x, -clip, clip)) if clip else (lambda x: x)
        w, r = W[d].astype(np.float64), R[d].astype(np.float64)
        b = B[d].astype(np.float64) if B is not None else np.zeros(2 * w.shape[0])
        g = w.shape[0]
        wb, rb = b[:g], b[g:]
        H = h0[d].astype(np.float64) if h0 is not None else np.zeros((Bn, hidden))
        C = c0[d].astype(np.float64) if c0 is not None else np.zeros((Bn, hidden))
        steps = range(S - 1, -1, -1) if (d == 1 or direction == "reverse") else range(S)
        for t in steps:
            x = X[t].astype(np.float64)
            if kind == "RNN":
                H = act[0](cl(x @ w.T + H @ r.T + wb + rb))
            elif kind == "GRU":
                hs = hidden
                z = act[0](cl(x @ w[:hs].T + H @ r[:hs].T + wb[:hs] + rb[:hs]))
                rr = act[0](cl(x @ w[hs:2 * hs].T + H @ r[hs:2 * hs].T + wb[hs:2 * hs] + rb[hs:2 * hs]))
                if lbr:
                    hh = act[1](cl(x @ w[2 * hs:].T + rr * (H @ r[2 * hs:].T + rb[2 * hs:]) + wb[2 * hs:]))
                else:
                    hh = act[1](cl(x @ w[2 * hs:].T + (rr * H) @ r[2 * hs:].T + rb[2 * hs:] + wb[2 * hs:]))
                H = (1 - z) * hh + z * H
            else:
                gts = x @ w.T + H @ r.T + wb + rb
                gi, go, gf, gc = np.split(gts, 4, axis=-1)
                p = P[d] if P is not None else np.zeros(3 * hidden)
                i = act[0](cl(gi + p[:hidden] * C))
                f = act[0](cl(gf + p[2 * hidden:] * C))
                C = f * C + i * act[1](cl(gc))
                o = act[0](cl(go + p[hidden:2 * hidden] * C))
                H = o * act[2](C)
            Y[t, d] = H
        Hs.append(H)
        Cs.append(C)
    Yh, Yc = np.stack(Hs), np.stack(Cs)
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    outs = [Y, Yh] + ([Yc] if kind == "LSTM" else [])
    return [o.astype(X.dtype) for o in outs]


def recurrent_cases():
    configs = [("fwd", dict()), ("rev", dict(direction="reverse")), ("bidi", dict(direction="bidirectional")),
               ("layout1", dict(layout=1)), ("clip", dict(clip=0.5)),
               ("acts", dict(direction="bidirectional", acts=True))]
    for kind in ["RNN", "GRU", "LSTM"]:
        G = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
        per = {"RNN": 1, "GRU": 2, "LSTM": 3}[kind]
        for tag, cfg in configs:
            S, Bn, In, Hd = 4, 2, 3, 5
            direction = cfg.get("direction", "forward")
            D = 2 if direction == "bidirectional" else 1
            layout = cfg.get("layout", 0)
            X = f32(Bn, S, In) if layout else f32(S, Bn, In)
            W, R, B = f32(D, G * Hd, In, lo=-0.5, hi=0.5), f32(D, G * Hd, Hd, lo=-0.5, hi=0.5), f32(D, 2 * G * Hd, lo=-0.5, hi=0.5)
            h0 = f32(Bn, D, Hd) if layout else f32(D, Bn, Hd)
            attrs = dict(hidden_size=Hd, direction=direction, layout=layout)
            acts, al, be = (["Tanh"], ["Sigmoid", "Tanh"], ["Sigmoid", "Tanh", "Tanh"])[per - 1] * D, [0.0] * per * D, [0.0] * per * D
            if cfg.get("acts"):
                acts = (["Relu"], ["HardSigmoid", "Softsign"], ["HardSigmoid", "ScaledTanh", "Affine"])[per - 1] + \
                       (["LeakyRelu"], ["Sigmoid", "Affine"], ["Sigmoid", "Tanh", "Softsign"])[per - 1]
                al, be = [0.3, 0.9, 0.7, 0.1, 0.4, 0.6][:per * D], [0.2, 0.5, 1.1, 0.3, 0.7, 0.4][:per * D]
                attrs.update(activations=acts, activation_alpha=al, activation_beta=be)
            if cfg.get("clip"):
                attrs["clip"] = cfg["clip"]
            if kind == "GRU" and tag == "rev":
                attrs["linear_before_reset"] = 1
            h0o = h0.transpose(1, 0, 2) if layout else h0
            ins = {"X": X, "W": W, "R": R, "B": B, "": None, "h0": h0}
            c0 = P = None
            if kind == "LSTM":
                c0 = f32(*h0.shape)
                P = f32(D, 3 * Hd, lo=-0.5, hi=0.5)
                ins.update(c0=c0, P=P)
            c0o = c0.transpose(1, 0, 2) if (layout and c0 is not None) else c0
            want = recurrent_oracle(kind, X, W, R, B, h0o, c0o, P, Hd, direction, acts, al, be, cfg.get("clip"),
                                    attrs.get("linear_before_reset", 0), layout)
            yield one(f"{kind.lower()}_{tag}", kind, ins, n_out=len(want), expected=want, **attrs)


def einsum_cases():
    eqs = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
           ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("bii->b", [(2, 3, 3)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
           ("ijk->kji", [(2, 3, 4)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
           ("iij->j", [(2, 2, 3)]), ("ab,cb->ac", [(2, 3), (4, 3)]), ("i,i->", [(6,), (6,)])]
    for k, (eq, shapes) in enumerate(eqs):
        ins = {f"x{i}": f32(*s) for i, s in enumerate(shapes)}
        yield one(f"einsum_{k}", "Einsum", ins, equation=eq)


def grid_cases():
    for mode in ["nearest", "linear", "cubic"]:
        for pad in ["zeros", "border", "reflection"]:
            for align in [0, 1]:
                x, g = f32(2, 3, 4, 5), f32(2, 3, 6, 2, lo=-1.7, hi=1.7)
                yield one(f"gridsample_{mode}_{pad}_{align}", "GridSample", {"x": x, "g": g}, mode=mode, padding_mode=pad,
                          align_corners=align)
    for mode in ["nearest", "linear"]:
        for pad in ["zeros", "reflection"]:
            x, g = f32(1, 2, 3, 4, 2), f32(1, 2, 3, 2, 3, lo=-1.4, hi=1.4)
            yield one(f"gridsample_3d_{mode}_{pad}", "GridSample", {"x": x, "g": g}, mode=mode, padding_mode=pad)
    x = f32(2, 3, 6, 7)
    rois = np.array([[0.5, 1.0, 5.0, 4.5], [-2.0, -1.0, 3.0, 8.0], [2.0, 2.0, 2.4, 2.2], [1.0, 0.0, 6.5, 5.5]], np.float32)
    bidx = np.array([0, 1, 1, 0], np.int64)
    for mode in ["avg", "max"]:
        for ctm in ["half_pixel", "output_half_pixel"]:
            for sr in [0, 2]:
                yield one(f"roi_align_{mode}_{ctm}_{sr}", "RoiAlign", {"x": x, "r": rois, "b": bidx}, mode=mode,
                          coordinate_transformation_mode=ctm, sampling_ratio=sr, output_height=3, output_width=2, spatial_scale=0.9)
    for tag, grp, og, st, dil, pads, with_mask in [("plain", 1, 1, [1, 1], [1, 1], [0, 0, 0, 0], False),
                                                    ("groups_mask", 2, 2, [2, 1], [1, 2], [1, 0, 1, 2], True),
                                                    ("offset_groups", 1, 2, [1, 2], [2, 1], [2, 1, 0, 1], True)]:
        N, C, H, W, OC, kh, kw = 2, 4, 6, 7, 6, 2, 3
        oh = (H + pads[0] + pads[2] - dil[0] * (kh - 1) - 1) // st[0] + 1
        ow = (W + pads[1] + pads[3] - dil[1] * (kw - 1) - 1) // st[1] + 1
        ins = {"x": f32(N, C, H, W), "w": f32(OC, C // grp, kh, kw), "o": f32(N, og * 2 * kh * kw, oh, ow, lo=-1.5, hi=1.5),
               "b": f32(OC)}
        if with_mask:
            ins["m"] = f32(N, og * kh * kw, oh, ow, lo=0, hi=1)
        yield one(f"deform_conv_{tag}", "DeformConv", ins, opset=22, group=grp, offset_group=og, strides=st, dilations=dil, pads=pads,
                  kernel_shape=[kh, kw])
    x, g = f32(1, 1, 3, 3), f32(1, 2, 2, 2)
    want = reference(one("", "GridSample", {"x": x, "g": g}, mode="linear"))
    yield one("gridsample_bilinear_opset16", "GridSample", {"x": x, "g": g}, opset=16, expected=want, mode="bilinear")
    for align in [0, 1]:
        yield one(f"affine_grid_2d_{align}", "AffineGrid", {"t": f32(2, 2, 3), "s": np.array([2, 1, 3, 4], np.int64)},
                  align_corners=align)
        yield one(f"affine_grid_3d_{align}", "AffineGrid", {"t": f32(1, 3, 4), "s": np.array([1, 1, 2, 3, 2], np.int64)},
                  align_corners=align)


def index_cases():
    x = f32(3, 4, 5)
    for ax in [0, 2, -1]:
        for ex in [0, 1]:
            for rev in [0, 1]:
                yield one(f"cumprod_{ax}_{ex}_{rev}", "CumProd", {"x": x, "a": np.array(ax, np.int64)}, opset=26, exclusive=ex, reverse=rev)
    yield one("cumprod_i32", "CumProd", {"x": rng.integers(-3, 4, size=(6,)).astype(np.int32), "a": np.array(0, np.int32)}, opset=26)
    c = np.array([True, False, True, True])
    yield one("compress_axis1", "Compress", {"x": x, "c": c}, axis=1)
    yield one("compress_short", "Compress", {"x": x, "c": c[:2]}, axis=-1)
    yield one("compress_flat", "Compress", {"x": x, "c": rng.integers(0, 2, size=(50,)).astype(bool)})
    for shape, axes in [((2, 6, 3), None), ((5, 2, 7), None), ((3, 3), [0, 2]), ((7,), [-2])]:
        kw = {"axes": axes} if axes else {}
        yield one(f"center_crop_pad_{'_'.join(map(str, shape))}", "CenterCropPad", {"x": x, "s": np.array(shape, np.int64)}, **kw)
    for st, dil, pads in [([1, 1], [1, 1], [0, 0, 0, 0]), ([2, 1], [1, 2], [1, 0, 1, 2])]:
        img, blk = [5, 6], [2, 3]
        nb = [(img[i] + pads[i] + pads[i + 2] - dil[i] * (blk[i] - 1) - 1) // st[i] + 1 for i in range(2)]
        yield one(f"col2im_{st[0]}{dil[1]}{pads[0]}", "Col2Im", {"x": f32(2, 3 * 6, nb[0] * nb[1]), "i": np.array(img, np.int64),
                                                                   "b": np.array(blk, np.int64)}, strides=st, dilations=dil, pads=pads)
    yield one("reverse_sequence_time0", "ReverseSequence", {"x": f32(4, 3, 2), "l": np.array([4, 1, 3], np.int64)})
    yield one("reverse_sequence_batch0", "ReverseSequence", {"x": f32(3, 5), "l": np.array([2, 5, 1], np.int64)}, batch_axis=0,
              time_axis=1)
    xi = np.array([[[[1, 2], [3, 4]]], [[[5, 6], [7, 8]]]], np.float32)
    ii = np.array([[[[0, 3], [8, 10]]], [[[17, 18], [28, 31]]]], np.int64)
    yield one("max_unpool_2x2", "MaxUnpool", {"x": xi, "i": ii}, kernel_shape=[2, 2], strides=[2, 2])
    past, upd = f32(2, 3, 6, 4), f32(2, 3, 3, 4)
    yield one("tensor_scatter_linear", "TensorScatter", {"p": past, "u": upd, "w": np.array([1, 3], np.int64)}, opset=24)
    yield one("tensor_scatter_circular", "TensorScatter", {"p": past, "u": upd, "w": np.array([4, 5], np.int64)}, opset=24,
              mode="circular")
    yield one("tensor_scatter_axis1", "TensorScatter", {"p": f32(2, 5, 3), "u": f32(2, 2, 3)}, opset=24, axis=1)
    for center in [0, 1]:
        boxes = np.concatenate([f32(2, 12, 2, lo=0, hi=8), f32(2, 12, 2, lo=1, hi=4)], -1)
        if not center:
            boxes[..., 2:] += boxes[..., :2]
        scores = np.round(f32(2, 3, 12, lo=0, hi=1), 1)  # ties
        yield one(f"nms_center{center}", "NonMaxSuppression", {"b": boxes, "s": scores, "m": np.array([4], np.int64),
                                                                "i": np.array([0.3], np.float32), "t": np.array([0.25], np.float32)},
                  center_point_box=center)
    yield one("non_zero_i32", "NonZero", {"x": rng.integers(-1, 2, size=(3, 4)).astype(np.int32)})
    xu = rng.integers(0, 3, size=(4, 5)).astype(np.float32)
    xa = np.concatenate([xu, xu[:, :2]], 1)
    for srt in [0, 1]:
        yield one(f"unique_flat_{srt}", "Unique", {"x": xu}, n_out=4, expected=unique_oracle(xu, None, srt), sorted=srt)
        yield one(f"unique_axis1_{srt}", "Unique", {"x": xa}, n_out=4, expected=unique_oracle(xa, 1, srt), sorted=srt, axis=1)


def unique_oracle(x, axis, srt):
    """numpy.unique, reordered by first occurrence when not sorted (onnx.reference mishandles axis then)."""
    y, idx, inv, cnt = np.unique(x if axis is not None else x.ravel(), True, True, True, axis=axis)
    if not srt:
        order = np.argsort(idx, kind="stable")
        pos = np.empty_like(order)
        pos[order] = np.arange(len(order))
        y, idx, cnt, inv = np.take(y, order, axis=axis or 0), idx[order], cnt[order], pos[inv.reshape(-1)]
    return [y, idx.astype(np.int64), inv.reshape(-1).astype(np.int64), cnt.astype(np.int64)]


def misc_cases():
    for shape in [(1, 1), (3, 3), (2, 4, 4), (5, 5)]:
        yield one(f"det_{'x'.join(map(str, shape))}", "Det", {"x": f32(*shape)})
    sing = f32(4, 4)
    sing[2] = sing[0]  # exactly singular
    yield one("det_singular", "Det", {"x": sing})
    perm = np.eye(4, dtype=np.float64)[[2, 0, 3, 1]]
    yield one("det_permutation_f64", "Det", {"x": perm})
    for tag, x in [("mixed", f32(3, 4)), ("positive", f32(5, lo=0.5, hi=3)), ("negative", f32(2, 3, lo=-4, hi=-1)),
                   ("zeros", np.zeros((3,), np.float32))]:
        yield one(f"dynamic_quantize_{tag}", "DynamicQuantizeLinear", {"x": x}, n_out=3)
    T = "ai.onnx.preview.training"
    r, t0, t3 = np.array(0.1, np.float32), np.array(0, np.int64), np.array(3, np.int64)
    for tag, t in [("t0", t0), ("t3", t3)]:
        x1, g1, h1, x2, g2, h2 = f32(3), f32(3), f32(3, lo=0, hi=1), f32(2, 2), f32(2, 2), f32(2, 2, lo=0, hi=1)
        yield one(f"adagrad_{tag}", "Adagrad", {"r": r, "t": t, "x1": x1, "x2": x2, "g1": g1, "g2": g2, "h1": h1, "h2": h2}, n_out=4,
                  domain=T, decay_factor=0.1, epsilon=1e-6, norm_coefficient=0.01)
        v1, v2 = f32(3), f32(2, 2)
        yield one(f"adam_{tag}", "Adam", {"r": r, "t": t, "x1": x1, "x2": x2, "g1": g1, "g2": g2, "v1": v1, "v2": v2, "h1": h1, "h2": h2},
                  n_out=6, domain=T, alpha=0.8, beta=0.95, epsilon=1e-6, norm_coefficient=0.01, norm_coefficient_post=0.02)
        for mode in ["standard", "nesterov"]:
            yield one(f"momentum_{mode}_{tag}", "Momentum", {"r": r, "t": t, "x1": x1, "g1": g1, "v1": v1}, n_out=2, domain=T, alpha=0.9,
                      beta=0.5, mode=mode, norm_coefficient=0.01)
    yield one("binarizer", "Binarizer", {"x": f32(3, 4)}, domain="ai.onnx.ml", threshold=0.5)
    yield one("array_feature_extractor_2d", "ArrayFeatureExtractor", {"x": f32(3, 5), "i": np.array([4, 0, 2], np.int64)},
              domain="ai.onnx.ml")
    yield one("array_feature_extractor_1d", "ArrayFeatureExtractor", {"x": f32(5), "i": np.array([[1, 3]], np.int64)}, domain="ai.onnx.ml")
    yield one("mel_weight_matrix", "MelWeightMatrix", {"m": np.array(6, np.int64), "d": np.array(32, np.int64),
                                                        "s": np.array(8000, np.int64), "l": np.array(100.0, np.float32),
                                                        "u": np.array(3500.0, np.float32)}, opset=17)
    for fn, a in [("HannWindow", 0), ("HammingWindow", 1), ("BlackmanWindow", 0)]:
        yield one(f"{fn}_periodic{a}", fn, {"n": np.array(9, np.int64)}, opset=17, periodic=a, output_datatype=TensorProto.DOUBLE)
    xt = rng.integers(0, 5, size=(3, 9)).astype(np.int32)
    pool = [2, 3, 4, 0, 1, 2, 3, 4, 4, 1, 1, 1]  # unigrams 2 3 4; bigrams (0 1) (2 3) (4 4) (1 1); trigram... none
    for mode in ["TF", "IDF", "TFIDF"]:
        for mn, mx, skip in [(1, 2, 0), (2, 2, 2), (1, 1, 3), (1, 2, 4)]:
            attrs = dict(mode=mode, min_gram_length=mn, max_gram_length=mx, max_skip_count=skip, ngram_counts=[0, 3],
                         ngram_indexes=[0, 1, 2, 3, 4, 5, 6], pool_int64s=pool[:11])
            if mode != "TF":
                attrs["weights"] = [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]
            yield one(f"tfidf_{mode}_{mn}{mx}{skip}", "TfIdfVectorizer", {"x": xt}, opset=9, **attrs)
    attrs = dict(mode="TFIDF", min_gram_length=1, max_gram_length=2, max_skip_count=1, ngram_counts=[0, 2], ngram_indexes=[3, 0, 1, 2],
                 pool_int64s=[4, 2, 0, 1, 3, 3])
    x1 = {"x": xt[0].astype(np.int64)}
    want = reference(one("", "TfIdfVectorizer", x1, opset=9, weights=[1.0] * 4, **attrs))  # no weights = weights 1
    yield one("tfidf_1d_no_weights", "TfIdfVectorizer", x1, opset=9, expected=want, **attrs)
    xq = f32(3, 7)
    sq = f32(3, 4, lo=0.01, hi=0.1)
    zq = rng.integers(-20, 20, size=(3, 4)).astype(np.int8)
    yield one("quantize_blocked", "QuantizeLinear", {"x": xq, "s": sq, "z": zq}, opset=21, axis=1, block_size=2)
    yield one("dequantize_blocked", "DequantizeLinear", {"x": rng.integers(-128, 127, size=(6, 2)).astype(np.int8),
                                                          "s": f32(2, 2, lo=0.01, hi=0.1)}, opset=21, axis=0, block_size=3)
    xb = f32(2, 3, 4, 2)
    yield one("batchnorm_training", "BatchNormalization", {"x": xb, "s": f32(3), "b": f32(3), "m": f32(3), "v": f32(3, lo=0.5, hi=2)},
              n_out=3, opset=15, training_mode=1, momentum=0.8, epsilon=1e-3)
    yield one("range_f16", "Range", {"a": np.array(1.5, np.float16), "b": np.array(7, np.float16), "c": np.array(0.75, np.float16)})
    x = f32(3, 5)
    yield one("shrink", "Shrink", {"x": x}, bias=0.3, lambd=0.7)
    yield one("swish", "Swish", {"x": x}, opset=24, alpha=0.7)
    # [N,C]: no spatial axes to reduce, x itself (onnx.reference's GlobalMaxPool reduces axes
    # (rank-2, rank-1) whatever the rank, so a scalar here: numpy's max over axes () instead)
    yield one("GlobalAveragePool_rank2", "GlobalAveragePool", {"x": x})
    yield one("GlobalMaxPool_rank2", "GlobalMaxPool", {"x": x}, expected=[np.max(x, axis=(), keepdims=True)])
    # GlobalLpPool (no onnx.reference kernel): the spec's (sum over the spatial axes of |x|^p)^(1/p)
    yield one("GlobalLpPool_rank2", "GlobalLpPool", {"x": x}, expected=[np.sum(np.abs(x) ** 3, axis=(), keepdims=True) ** (1 / 3)], p=3)


def stateful_cases():
    x, w, b = f32(2, 3, 6), f32(3, 1, 4), f32(3)
    yield one("causal_conv_plain", "CausalConvWithState", {"x": x, "w": w}, n_out=2, opset=27)
    yield one("causal_conv_all", "CausalConvWithState", {"x": x, "w": w, "b": b, "p": f32(2, 3, 3)}, n_out=2, opset=27, activation="silu")
    yield one("causal_conv_k1", "CausalConvWithState", {"x": x, "w": f32(3, 1, 1)}, n_out=2, opset=27)
    yield one("causal_conv_short", "CausalConvWithState", {"x": f32(1, 3, 2), "w": w, "": None, "p": f32(1, 3, 3)}, n_out=2, opset=27)
    B, T, Hq, Hkv, dk, dv = 2, 5, 4, 2, 3, 2
    q, k, v, S = f32(B, T, Hq * dk), f32(B, T, Hkv * dk, lo=-0.5, hi=0.5), f32(B, T, Hkv * dv), f32(B, Hkv, dk, dv)
    g_key, g_head = f32(B, T, Hkv * dk, lo=-1, hi=0), f32(B, T, Hkv, lo=-1, hi=0)
    beta_h, beta_1 = f32(B, T, Hkv, lo=0, hi=1), f32(B, T, 1, lo=0, hi=1)
    specs = [("linear", {}), ("gated_key", {"g": g_key}), ("gated_head", {"g": g_head}), ("delta", {"b": beta_h}),
             ("gated_delta", {"g": g_key, "b": beta_1})]
    for tag, extra in specs:
        rule = tag.split("_")[0] if tag != "gated_delta" else "gated_delta"
        ins = {"q": q, "k": k, "v": v, "s": S, "g": extra.get("g"), "b": extra.get("b")}
        ins = {key if val is not None else "": val for key, val in ins.items()}
        yield one(f"linear_attention_{tag}", "LinearAttention", ins, n_out=2, opset=27, q_num_heads=Hq, kv_num_heads=Hkv,
                  update_rule=rule, scale=0.7 if tag == "delta" else 0.0)
    T2 = 300  # longer than one Concat (256 inputs)
    yield one("linear_attention_long_no_past", "LinearAttention", {"q": f32(1, T2, 2), "k": f32(1, T2, 2, lo=-0.1, hi=0.1),
                                                                     "v": f32(1, T2, 2)}, n_out=2, opset=27, q_num_heads=1,
              kv_num_heads=1, update_rule="linear")


def provided_value_cases():
    """Inputs whose values the importer needs (the runner gives every input's value): computed on
    demand from the nodes they depend on, also through arithmetic, inside an If branch that
    captures them and for a count (TopK's k)."""
    x, s = f32(2, 3, 4), np.array([4, 6], np.int64)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["s", "one"], ["shape"]),
             helper.make_node("Reshape", ["r", "shape"], ["y0"])]
    yield Case("provided_reshape_shape_from_arithmetic", nodes, {"x": x, "s": s - 1}, ["y0"],
               initializers={"one": np.array([1, 1], np.int64)})
    then = helper.make_graph([helper.make_node("Mul", ["s", "two"], ["ts"]), helper.make_node("Reshape", ["x", "ts"], ["t"])],
                             "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)],
                             [numpy_helper.from_array(np.array([1, 2], np.int64), "two")])
    other = helper.make_graph([helper.make_node("Reshape", ["x", "s12"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([6, 4], np.int64), "s12")])
    nodes = [helper.make_node("ReduceSum", ["x"], ["tot"], keepdims=0), helper.make_node("Greater", ["tot", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y0"], then_branch=then, else_branch=other)]
    for tag, xv in (("then", np.abs(x)), ("else", -np.abs(x))):
        yield Case(f"provided_if_branch_capture_{tag}", nodes, {"x": xv, "s": np.array([6, 2], np.int64)}, ["y0"],
                   initializers={"zero": np.array(0, np.float32)})
    nodes = [helper.make_node("Sub", ["n", "one"], ["k"]), helper.make_node("TopK", ["x", "k"], ["y0", "y1"], axis=-1)]
    yield Case("provided_topk_k", nodes, {"x": f32(3, 9), "n": np.array([4], np.int64)}, ["y0", "y1"],
               initializers={"one": np.array([1], np.int64)})


def all_cases():
    yield from provided_value_cases()
    yield from stateful_cases()
    yield from einsum_cases()
    yield from misc_cases()
    yield from index_cases()
    yield from grid_cases()
    yield from recurrent_cases()


def main():
    runner, work = sys.argv[1:3]
    filt = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--filter" else ""
    root = fresh_dir(work, "importer_cases")
    for c in all_cases():
        if filt in c.name:
            c.write(root)
    res = os.path.join(work, "importer_cases.txt")
    out = subprocess.run([runner, "importer", root, "--results", res], capture_output=True, text=True).stdout
    sys.stdout.write(out)
    for line in open(res):
        if not line.startswith("PASS"):
            sys.stdout.write(line)
    m = re.search(r"(\d+)/(\d+) passed", out)
    return 0 if m and m.group(1) == m.group(2) else 1


if __name__ == "__main__":
    sys.exit(main())
