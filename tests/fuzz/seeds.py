"""Writes the fuzz targets' seed corpora into OUT/<target>/ (scripts/fuzz.sh):
fuzz_onnx: the ONNX backend node-test models (Debian libonnx-testdata 1.12 and the pinned onnx
wheel's node tests); fuzz_npy: .npy images of their first inputs (every dtype numpy writes);
fuzz_graph: a few fixed byte programs. usage: seeds.py OUT"""
import glob
import io
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

out = sys.argv[1]
for t in ("fuzz_onnx", "fuzz_npy", "fuzz_graph"):
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
