"""The main job: text recognition with PaddleOCR's pretrained PP-OCRv4 recognizer (shipped in the
PyPI package rapidocr-onnxruntime) running through rlx on MLX's CPU backend.

1. A text line is rendered to an image with Pillow and Debian's DejaVu Sans font.
2. The image is preprocessed as RapidOCR does (height 48, values scaled to [-1, 1]) and saved as .npy.
3. `rlx run` imports the ONNX model, runs it on MLX and writes the output (per-timestep character
   probabilities) as .npy, with the time per run.
4. The probabilities are decoded (CTC greedy: best class per step, merge repeats, drop blanks) with
   the model's own character table (ONNX metadata "character").
5. ONNX Runtime runs the same model on the same input: the max abs / rel error is printed.

usage: ocr_demo.py RLX_BINARY [--device cpu|gpu] [--mode lazy|eager|compiled] [--text TEXT]
(without --mode, rlx takes the mode from RLX_MLX_MODE, lazy when unset)
"""
import argparse
import importlib.util
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from PIL import Image, ImageDraw, ImageFont

# Located without importing the package (installed --no-deps: only its model files are used).
_rapidocr = importlib.util.find_spec("rapidocr_onnxruntime")
MODEL = os.path.join(_rapidocr.submodule_search_locations[0] if _rapidocr else "rapidocr_onnxruntime", "models",
                     "ch_PP-OCRv4_rec_infer.onnx")
# Debian's DejaVu Sans (fonts-dejavu-core), installed or unpacked into .deps by scripts/bootstrap.sh (RLX_DEBS)
_DEJAVU = "usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
_DEPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps")
FONT = next((f for f in ("/" + _DEJAVU, os.path.join(_DEPS, _DEJAVU)) if os.path.exists(f)), "/" + _DEJAVU)


def render(text, font_path=FONT):
    font = ImageFont.truetype(font_path, 40)
    img = Image.new("RGB", (int(font.getlength(text)) + 24, 56), "white")
    ImageDraw.Draw(img).text((12, 4), text, font=font, fill="black")
    return img


def preprocess(img, height=48, min_width=320):
    """RapidOCR's rec preprocessing: resize to height 48 keeping the aspect ratio, scale to [-1, 1],
    CHW, right-pad with zeros to the batch width."""
    w = int(math.ceil(height * img.width / img.height))
    width = max(min_width, w)
    a = np.asarray(img.resize((w, height), Image.BILINEAR), np.float32).transpose(2, 0, 1) / 255.0
    out = np.zeros((3, height, width), np.float32)
    out[:, :, :w] = (a - 0.5) / 0.5
    return out[None]


def ctc_decode(probs, chars):
    ids, conf = probs.argmax(-1), probs.max(-1)
    text, scores, prev = [], [], -1
    for i, p in zip(ids, conf):
        if i != prev and i != 0:
            text.append(chars[i])
            scores.append(p)
        prev = i
    return "".join(text), float(np.mean(scores)) if scores else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rlx")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default=None, help="default: RLX_MLX_MODE, else lazy")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--text", default="The quick brown fox jumps over 13 lazy dogs")
    ap.add_argument("--model", default=MODEL, help="the .onnx file (default: from rapidocr-onnxruntime)")
    ap.add_argument("--font", default=FONT, help="a TrueType font (default: Debian's DejaVu Sans)")
    a = ap.parse_args()

    meta = {p.key: p.value for p in onnx.load(a.model, load_external_data=False).metadata_props}
    chars = ["<blank>"] + meta["character"].split("\n") + [" "]
    x = preprocess(render(a.text, a.font))
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "x.npy"), x)
        out_dir = os.path.join(tmp, "out")
        cmd = [a.rlx, "run", a.model, "--input", f"x={tmp}/x.npy", "--output-dir", out_dir, "--repeat", str(a.repeat),
               "--device", a.device] + (["--mode", a.mode] if a.mode else [])
        print("$", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode:
            return r.returncode
        probs = np.load(os.path.join(out_dir, "softmax_11.tmp_0.npy"))
        mode = re.search(r"^mode (\w+), device", r.stdout, re.M).group(1)

    sess = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    t0 = time.perf_counter()
    for _ in range(a.repeat):
        sess.run(None, {"x": x})
    ort_ms = (time.perf_counter() - t0) / a.repeat * 1e3

    text, conf = ctc_decode(probs[0], chars)
    ref_text, _ = ctc_decode(ref[0], chars)
    err = np.abs(probs - ref)
    rel = err / np.maximum(np.abs(ref), 1e-6)
    print(f"model: PP-OCRv4 text recognition ({os.path.basename(a.model)}, from PyPI rapidocr-onnxruntime)")
    print(f"input: a rendered text line, tensor {list(x.shape)}; rendered text: {a.text!r}")
    print(f"rlx on MLX ({a.device}, {mode}) reads: {text!r} (mean confidence {conf:.3f})")
    print(f"ONNX Runtime reads:   {ref_text!r}")
    print(f"agreement with ONNX Runtime: max abs error {err.max():.3g}, max rel error {rel.max():.3g} "
          f"(over {probs.size} probabilities); ONNX Runtime CPU {ort_ms:.2f} ms per run")
    return 0 if text == ref_text and err.max() < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
