"""Writes the fuzz targets' seed corpora into OUT/<target>/ (scripts/fuzz.sh):
fuzz_onnx: the ONNX backend node-test models (Debian libonnx-testdata 1.12 and the pinned onnx
wheel's node tests); fuzz_npy: .npy images of their first inputs (every dtype numpy writes);
fuzz_graph: a few fixed byte programs; fuzz_gguf: small GGUF files written by gguf-py (every value
type and array, plain and quantized tensors, a custom alignment, tiny llama/qwen2/mistral models
with a "llama" vocabulary, a tokenizer alone). usage: seeds.py OUT"""
import glob
import io
import os
import sys

import gguf
import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gguf"))
from llama_ref import add_vocab, write_model  # noqa: E402

out = sys.argv[1]
for t in ("fuzz_onnx", "fuzz_npy", "fuzz_graph", "fuzz_gguf"):
    os.makedirs(os.path.join(out, t), exist_ok=True)
wheel = glob.glob(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))
dirs = sorted(glob.glob("/usr/share/libonnx-testdata/data/node/*")) + sorted(glob.glob(os.path.join(wheel[0], "*")) if wheel else [])
for i, d in enumerate(dirs):
    model = os.path.join(d, "model.onnx")
    if not os.path.exists(model):
        continue
    with open(model, "rb") as f:
        data = f.read()
    if len(data) <= 65536:
        with open(os.path.join(out, "fuzz_onnx", f"{i:05d}.onnx"), "wb") as f:
            f.write(data)
    pb = os.path.join(d, "test_data_set_0", "input_0.pb")
    if os.path.exists(pb) and i % 4 == 0:
        try:
            arr = numpy_helper.to_array(onnx.load_tensor(pb))
        except Exception:  # noqa: BLE001 (types numpy cannot hold)
            continue
        if arr.dtype != object and arr.nbytes <= 65536:
            buf = io.BytesIO()
            np.save(buf, arr)
            with open(os.path.join(out, "fuzz_npy", f"{i:05d}.npy"), "wb") as f:
                f.write(buf.getvalue())
rng = np.random.default_rng(8)
for i in range(64):
    with open(os.path.join(out, "fuzz_graph", f"{i:03d}"), "wb") as f:
        f.write(rng.integers(0, 256, size=64, dtype=np.uint8).tobytes())

Q = gguf.GGMLQuantizationType
gdir = os.path.join(out, "fuzz_gguf")
rng = np.random.default_rng(9)
# a "llama" vocabulary: unk/bos/eos, byte tokens for a few bytes, letters, a few merges
pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in (0x0A, 0x09, 0xC3, 0xB6, 0xFF)] + \
    ["\u2581", "\u2581H", "He", "ll", "o", "\u2581w", "\u00f6", "rld", "\u4e2d", "\u6587"] + list("abcdefghijklmnopqrstuvwxyz")
types = [2, 3, 3] + [6] * 5 + [1] * (len(pieces) - 8)
scores = [0.0] * 8 + [-float(i) for i in range(len(pieces) - 8)]
w = gguf.GGUFWriter(os.path.join(gdir, "values.gguf"), "llama")
w.add_custom_alignment(64)
w.add_uint8("t.u8", 250); w.add_int8("t.i8", -100); w.add_uint16("t.u16", 65000); w.add_int16("t.i16", -30000)
w.add_uint32("t.u32", 4_000_000_000); w.add_int32("t.i32", -2_000_000_000); w.add_float32("t.f32", 0.1)
w.add_bool("t.bool", True); w.add_uint64("t.u64", 2**63 + 5); w.add_int64("t.i64", -(2**62)); w.add_float64("t.f64", 1e-300)
w.add_string("t.str", "h\u00e9llo \u2713 \u4e2d"); w.add_string("t.empty", "")
w.add_array("t.ints", [1, -2, 3]); w.add_array("t.floats", [0.5, -1.25]); w.add_array("t.strs", ["a", "", "\u2581the"]); w.add_array("t.none", [])
w.add_tensor("f32", rng.standard_normal((3, 5)).astype(np.float32))
w.add_tensor("f16", rng.standard_normal((2, 1, 1, 8)).astype(np.float16))
for qt in (Q.Q8_0, Q.Q4_0, Q.Q4_K, Q.Q6_K, Q.BF16, Q.I32):  # raw bytes of each type's blocks
    block, nbytes = gguf.GGML_QUANT_SIZES[qt]
    q = rng.integers(0, 256, size=(2, nbytes), dtype=np.uint8)
    w.add_tensor(f"q_{qt.name}", q, raw_shape=q.shape, raw_dtype=qt)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
w = gguf.GGUFWriter(os.path.join(gdir, "tokenizer.gguf"), "llama")
add_vocab(w, pieces, scores, types)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
V = len(pieces)
models = [dict(arch="llama", dim=8, heads=2, kv_heads=1, ffn=16, wtype=Q.F32),
          dict(arch="llama", dim=8, heads=2, kv_heads=2, ffn=8, n_rot=2, rope_scale=4.0, wtype=Q.F16, embd_type=Q.F16, tied=True),
          dict(arch="qwen2", dim=8, heads=2, kv_heads=1, ffn=8, wtype=Q.F16, bias=True, tied=True),
          dict(arch="mistral", dim=32, heads=2, kv_heads=1, ffn=32, wtype=Q.Q8_0),
          dict(arch="llama", dim=32, heads=2, kv_heads=1, ffn=32, wtype=Q.Q8_0, embd_type=Q.Q8_0, tied=True)]
for i, cfg in enumerate(models):
    cfg.update(vocab=V, layers=1, ctx=16, eps=1e-5, base=10000.0)
    write_model(os.path.join(gdir, f"model{i}.gguf"), cfg, np.random.default_rng(100 + i), (pieces, scores, types))
