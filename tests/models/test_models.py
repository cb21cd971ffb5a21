"""Pretrained models shipped in PyPI packages, run through `rlx run` and compared with ONNX Runtime
on the same (seeded random or silent) inputs: the PP-OCRv4 text detector and direction classifier
(rapidocr-onnxruntime), Silero VAD at both sample rates (silero-vad: If branches, LSTM) and the
NudeNet YOLOv8n detector (nudenet). usage: test_models.py RLX_BINARY"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

RLX = sys.argv[1]
SITE = os.path.dirname(os.path.dirname(onnx.__file__))
rng = np.random.default_rng(0)
CASES = [
    ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", {"x": rng.random((1, 3, 320, 320), dtype=np.float32)}, 1e-4),
    ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": rng.random((1, 3, 48, 192), dtype=np.float32)}, 1e-4),
    ("silero_vad/data/silero_vad.onnx", {"input": rng.standard_normal((1, 512)).astype(np.float32),
                                          "state": 0.1 * rng.standard_normal((2, 1, 128)).astype(np.float32),
                                          "sr": np.array(16000, np.int64)}, 1e-4),
    ("silero_vad/data/silero_vad.onnx", {"input": rng.standard_normal((1, 256)).astype(np.float32),
                                          "state": 0.1 * rng.standard_normal((2, 1, 128)).astype(np.float32),
                                          "sr": np.array(8000, np.int64)}, 1e-4),
    # box coordinates are pixels (up to 320): compare relative to the output's scale
    ("nudenet/320n.onnx", {"images": rng.random((1, 3, 320, 320), dtype=np.float32)}, 1e-5),
]

failures = 0
with tempfile.TemporaryDirectory() as d:
    for rel, feeds, tol in CASES:
        path = os.path.join(SITE, rel)
        args = []
        for k, v in feeds.items():
            np.save(os.path.join(d, f"{k}.npy"), v)
            args += ["--input", f"{k}={d}/{k}.npy"]
        out = os.path.join(d, "out")
        r = subprocess.run([RLX, "run", path, *args, "--output-dir", out], capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {rel}: rlx exited {r.returncode}: {r.stderr.strip()[:500]}")
            failures += 1
            continue
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for o, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
            got = np.load(os.path.join(out, o.name.replace("/", "_").replace(":", "_") + ".npy"))
            err = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
            scale = max(1.0, float(np.abs(ref).max()))
            ok = got.shape == ref.shape and err <= tol * scale
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {rel} {o.name}: shape {got.shape} vs {ref.shape}, max abs err {err:.3g} "
                  f"(tolerance {tol * scale:.3g})")
print(f"{failures} failures")
sys.exit(1 if failures else 0)
