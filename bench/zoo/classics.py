"""Transformer and CNN classics as ONNX graphs (opset 17) with seeded random weights, written with
onnx.helper and numpy in their standard architectures (no network, no torch needed):

- bert:   BERT-base (Devlin et al. 2018; Hugging Face BertModel layout): 12 layers, hidden 768,
          12 heads, FFN 3072, exact (erf) GELU, LayerNorm eps 1e-12, pooler; input_ids [1, SEQ].
- gpt2:   GPT-2 124M (Radford et al. 2019; Hugging Face GPT2LMHeadModel layout): 12 layers, hidden
          768, 12 heads, tanh GELU, pre-LayerNorm eps 1e-5, causal mask, LM head tied to the token
          embedding; input_ids [1, SEQ], no KV cache; output logits [1, SEQ, 50257].
- resnet50: ResNet-50 v1.5 (He et al. 2015; torchvision layout: stride on the 3x3 conv),
          BatchNormalization kept as nodes (eval mode, running statistics); input [B, 3, 224, 224].

The graphs are written the way exporters write them (Linear as MatMul + Add with a transposed
weight, attention as MatMul / scale / Softmax / MatMul, GELU spelled out with Erf or Tanh), so an
optimizer has the usual patterns to find. weights(name, seed) returns the parameters in PyTorch
state_dict layout and names (transformers' BertModel / GPT2LMHeadModel, torchvision's resnet50), so
bench/zoo/gpu.py can load the very same values into the PyTorch models.

usage: classics.py OUT_DIR [MODEL...]   writes OUT_DIR/<hash>/<model>.onnx (bert gpt2 resnet50 by default)
"""
import hashlib
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEQ = 128
OPSET = 17


# ---------------------------------------------------------------------------------------------
# Weights (PyTorch layout: Linear weight [out, in]; GPT-2's Conv1D weight [in, out])
# ---------------------------------------------------------------------------------------------

def _normal(rng, shape, std):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)).astype(np.float32)


def _ln(rng, w, prefix, n):
    w[prefix + ".weight"] = (1.0 + _normal(rng, (n,), 0.05)).astype(np.float32)
    w[prefix + ".bias"] = _normal(rng, (n,), 0.02)


def bert_weights(seed=0, layers=12, hidden=768, ffn=3072, vocab=30522):
    rng = np.random.default_rng(seed)
    w = {}
    e = "embeddings."
    w[e + "word_embeddings.weight"] = _normal(rng, (vocab, hidden), 0.02)
    w[e + "position_embeddings.weight"] = _normal(rng, (512, hidden), 0.02)
    w[e + "token_type_embeddings.weight"] = _normal(rng, (2, hidden), 0.02)
    _ln(rng, w, e + "LayerNorm", hidden)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for lin, (o, n) in {"attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
                            "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
                            "intermediate.dense": (ffn, hidden), "output.dense": (hidden, ffn)}.items():
            w[p + lin + ".weight"] = _normal(rng, (o, n), 0.02)
            w[p + lin + ".bias"] = _normal(rng, (o,), 0.02)
        _ln(rng, w, p + "attention.output.LayerNorm", hidden)
        _ln(rng, w, p + "output.LayerNorm", hidden)
    w["pooler.dense.weight"] = _normal(rng, (hidden, hidden), 0.02)
    w["pooler.dense.bias"] = _normal(rng, (hidden,), 0.02)
    return w


def gpt2_weights(seed=0, layers=12, hidden=768, vocab=50257, positions=1024):
    rng = np.random.default_rng(seed)
    w = {}
    t = "transformer."
    w[t + "wte.weight"] = _normal(rng, (vocab, hidden), 0.02)
    w[t + "wpe.weight"] = _normal(rng, (positions, hidden), 0.01)
    for i in range(layers):
        p = f"{t}h.{i}."
        _ln(rng, w, p + "ln_1", hidden)
        _ln(rng, w, p + "ln_2", hidden)
        for conv, (n, o) in {"attn.c_attn": (hidden, 3 * hidden), "attn.c_proj": (hidden, hidden),
                             "mlp.c_fc": (hidden, 4 * hidden), "mlp.c_proj": (4 * hidden, hidden)}.items():
            w[p + conv + ".weight"] = _normal(rng, (n, o), 0.02)
            w[p + conv + ".bias"] = _normal(rng, (o,), 0.02)
    _ln(rng, w, t + "ln_f", hidden)
    return w


RESNET50_BLOCKS = (3, 4, 6, 3)


def resnet50_weights(seed=0, classes=1000):
    rng = np.random.default_rng(seed)
    w = {}

    def conv(name, o, i, k):  # He (kaiming normal, fan_out) like torchvision's init
        w[name + ".weight"] = _normal(rng, (o, i, k, k), math.sqrt(2.0 / (o * k * k)))

    def bn(name, n, gamma=1.0):
        w[name + ".weight"] = (gamma * rng.uniform(0.8, 1.2, n)).astype(np.float32)
        w[name + ".bias"] = _normal(rng, (n,), 0.05)
        w[name + ".running_mean"] = _normal(rng, (n,), 0.05)
        w[name + ".running_var"] = rng.uniform(0.8, 1.2, n).astype(np.float32)

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    cin = 64
    for li, (n, width) in enumerate(zip(RESNET50_BLOCKS, (64, 128, 256, 512))):
        for b in range(n):
            p = f"layer{li + 1}.{b}."
            conv(p + "conv1", width, cin, 1)
            bn(p + "bn1", width)
            conv(p + "conv2", width, width, 3)
            bn(p + "bn2", width)
            conv(p + "conv3", width * 4, width, 1)
            # a small last gamma keeps the residual stream's scale steady over 16 blocks
            bn(p + "bn3", width * 4, gamma=0.2)
            if b == 0:
                conv(p + "downsample.0", width * 4, cin, 1)
                bn(p + "downsample.1", width * 4)
            cin = width * 4
    w["fc.weight"] = _normal(rng, (classes, 2048), 0.01)
    w["fc.bias"] = _normal(rng, (classes,), 0.01)
    return w


# ---------------------------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------------------------

class _Builder:
    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.array(arr, order="C"), name))
        return name

    def const(self, arr):
        self.n += 1
        return self.init(f"const_{self.n}", np.asarray(arr))

    def op(self, op_type, inputs, n_out=1, **attrs):
        self.n += 1
        outs = [f"{op_type.lower()}_{self.n}" + (f"_{k}" if n_out > 1 else "") for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=f"{op_type}_{self.n}", **attrs))
        return outs if n_out > 1 else outs[0]

    def linear(self, x, w_in_out, b):  # x @ W + b, W stored [in, out]
        return self.op("Add", [self.op("MatMul", [x, w_in_out]), b])

    def model(self, name, inputs, outputs):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="rlx-bench-zoo")
        m.ir_version = 8
        return m


def _attention(b, x, q, k, v, heads, dh, mask=None):
    """Multi-head attention over projected q/k/v [1, S, H*dh]: MatMul, scale, (mask), Softmax, MatMul."""
    split = b.const(np.array([0, 0, heads, dh], np.int64))
    qh = b.op("Transpose", [b.op("Reshape", [q, split])], perm=[0, 2, 1, 3])
    kt = b.op("Transpose", [b.op("Reshape", [k, split])], perm=[0, 2, 3, 1])
    vh = b.op("Transpose", [b.op("Reshape", [v, split])], perm=[0, 2, 1, 3])
    s = b.op("Div", [b.op("MatMul", [qh, kt]), b.const(np.array(math.sqrt(dh), np.float32))])
    if mask is not None:
        s = b.op("Add", [s, mask])
    p = b.op("Softmax", [s], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [p, vh])], perm=[0, 2, 1, 3])
    return b.op("Reshape", [ctx, b.const(np.array([0, 0, heads * dh], np.int64))])


def _layernorm(b, x, w, prefix, eps):
    return b.op("LayerNormalization", [x, b.init(prefix + ".weight", w[prefix + ".weight"]),
                                       b.init(prefix + ".bias", w[prefix + ".bias"])], axis=-1, epsilon=eps)


def bert_onnx(w, seq=SEQ, heads=12):
    b = _Builder()
    hidden = w["embeddings.word_embeddings.weight"].shape[1]
    layers = sum(1 for k in w if k.endswith("attention.self.query.weight"))
    e = "embeddings."
    x = b.op("Gather", [b.init(e + "word_embeddings.weight", w[e + "word_embeddings.weight"]), "input_ids"])
    pos = b.op("Gather", [b.init(e + "position_embeddings.weight", w[e + "position_embeddings.weight"]),
                          b.const(np.arange(seq, dtype=np.int64)[None])])
    tok = b.op("Gather", [b.init(e + "token_type_embeddings.weight", w[e + "token_type_embeddings.weight"]),
                          b.const(np.zeros((1, seq), np.int64))])
    x = _layernorm(b, b.op("Add", [b.op("Add", [x, tok]), pos]), w, e + "LayerNorm", 1e-12)

    def lin(x, name):
        return b.linear(x, b.init(name + ".weight_T", w[name + ".weight"].T), b.init(name + ".bias", w[name + ".bias"]))

    for i in range(layers):
        p = f"encoder.layer.{i}."
        q, k, v = (lin(x, p + "attention.self." + n) for n in ("query", "key", "value"))
        a = lin(_attention(b, x, q, k, v, heads, hidden // heads), p + "attention.output.dense")
        x = _layernorm(b, b.op("Add", [a, x]), w, p + "attention.output.LayerNorm", 1e-12)
        h = lin(x, p + "intermediate.dense")
        erf = b.op("Erf", [b.op("Div", [h, b.const(np.array(math.sqrt(2.0), np.float32))])])
        h = b.op("Mul", [b.op("Mul", [h, b.op("Add", [erf, b.const(np.array(1.0, np.float32))])]),
                         b.const(np.array(0.5, np.float32))])
        x = _layernorm(b, b.op("Add", [lin(h, p + "output.dense"), x]), w, p + "output.LayerNorm", 1e-12)
    b.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    first = b.op("Gather", [x, b.const(np.array(0, np.int64))], axis=1)
    b.nodes.append(helper.make_node("Tanh", [lin(first, "pooler.dense")], ["pooler_output"]))
    return b.model("bert_base", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden]),
                    helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, [1, hidden])])


def gpt2_onnx(w, seq=SEQ, heads=12):
    b = _Builder()
    t = "transformer."
    vocab, hidden = w[t + "wte.weight"].shape
    layers = sum(1 for k in w if k.endswith("attn.c_attn.weight"))
    x = b.op("Add", [b.op("Gather", [b.init(t + "wte.weight", w[t + "wte.weight"]), "input_ids"]),
                     b.op("Gather", [b.init(t + "wpe.weight", w[t + "wpe.weight"]),
                                     b.const(np.arange(seq, dtype=np.int64)[None])])])
    causal = np.triu(np.full((seq, seq), np.finfo(np.float32).min, np.float32), 1)[None, None]
    mask = b.const(causal)

    def conv1d(x, name):
        return b.linear(x, b.init(name + ".weight", w[name + ".weight"]), b.init(name + ".bias", w[name + ".bias"]))

    c = math.sqrt(2.0 / math.pi)
    for i in range(layers):
        p = f"{t}h.{i}."
        qkv = conv1d(_layernorm(b, x, w, p + "ln_1", 1e-5), p + "attn.c_attn")
        q, k, v = b.op("Split", [qkv, b.const(np.array([hidden] * 3, np.int64))], n_out=3, axis=-1)
        x = b.op("Add", [x, conv1d(_attention(b, x, q, k, v, heads, hidden // heads, mask), p + "attn.c_proj")])
        h = conv1d(_layernorm(b, x, w, p + "ln_2", 1e-5), p + "mlp.c_fc")
        inner = b.op("Mul", [b.op("Add", [h, b.op("Mul", [b.op("Pow", [h, b.const(np.array(3.0, np.float32))]),
                                                           b.const(np.array(0.044715, np.float32))])]),
                             b.const(np.array(c, np.float32))])
        h = b.op("Mul", [b.op("Mul", [h, b.const(np.array(0.5, np.float32))]),
                         b.op("Add", [b.op("Tanh", [inner]), b.const(np.array(1.0, np.float32))])])
        x = b.op("Add", [x, conv1d(h, p + "mlp.c_proj")])
    x = _layernorm(b, x, w, t + "ln_f", 1e-5)
    b.nodes.append(helper.make_node("MatMul", [x, b.init("lm_head.weight_T", w[t + "wte.weight"].T)], ["logits"]))
    return b.model("gpt2", [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, seq])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, seq, vocab])])


def resnet50_onnx(w, batch=1):
    b = _Builder()

    def conv_bn(x, conv, bn, stride=1, relu=True):
        k = w[conv + ".weight"].shape[-1]
        y = b.op("Conv", [x, b.init(conv + ".weight", w[conv + ".weight"])], kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4)
        y = b.op("BatchNormalization", [y] + [b.init(f"{bn}.{s}", w[f"{bn}.{s}"])
                                              for s in ("weight", "bias", "running_mean", "running_var")], epsilon=1e-5)
        return b.op("Relu", [y]) if relu else y

    x = conv_bn("input", "conv1", "bn1", stride=2)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    for li, n in enumerate(RESNET50_BLOCKS):
        for j in range(n):
            p = f"layer{li + 1}.{j}."
            stride = 2 if (j == 0 and li > 0) else 1
            y = conv_bn(x, p + "conv1", p + "bn1")
            y = conv_bn(y, p + "conv2", p + "bn2", stride=stride)
            y = conv_bn(y, p + "conv3", p + "bn3", relu=False)
            sc = conv_bn(x, p + "downsample.0", p + "downsample.1", stride=stride, relu=False) if j == 0 else x
            x = b.op("Relu", [b.op("Add", [y, sc])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    b.nodes.append(helper.make_node("Gemm", [x, b.init("fc.weight", w["fc.weight"]), b.init("fc.bias", w["fc.bias"])],
                                    ["logits"], transB=1))
    return b.model("resnet50", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 1000])])


# name -> (weights(seed), graph(weights), seeded inputs(rng))
def _ids(vocab):
    return lambda rng: {"input_ids": rng.integers(0, vocab, (1, SEQ), dtype=np.int64)}


def _image(batch):
    return lambda rng: {"input": rng.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


CLASSICS = {
    "bert": (bert_weights, bert_onnx, _ids(30522)),
    "gpt2": (gpt2_weights, gpt2_onnx, _ids(50257)),
    "resnet50": (resnet50_weights, lambda w: resnet50_onnx(w, 1), _image(1)),
    "resnet50_b8": (resnet50_weights, lambda w: resnet50_onnx(w, 8), _image(8)),
}


def write(name, out_dir, seed=0):
    """Writes OUT_DIR/<hash>/<name>.onnx unless it is there already (the hash of this file and the
    seed: an edit here never reuses a stale cache); returns its path."""
    with open(__file__, "rb") as f:
        tag = hashlib.sha256(f.read() + str(seed).encode()).hexdigest()[:12]
    out_dir = os.path.join(out_dir, tag)
    path = os.path.join(out_dir, f"{name}.onnx")
    if not os.path.exists(path):
        weights, graph, _ = CLASSICS[name]
        m = graph(weights(seed))
        onnx.checker.check_model(m)
        os.makedirs(out_dir, exist_ok=True)
        tmp = path + ".tmp"
        onnx.save(m, tmp)
        os.replace(tmp, path)
    return path


def inputs(name, seed=0):
    return CLASSICS[name][2](np.random.default_rng(seed))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for n in sys.argv[2:] or CLASSICS:
        print(write(n, sys.argv[1]))
