"""`rlx generate` on a small seeded model: the streamed text must be the greedy continuation that
an independent numpy forward pass (llama_ref.py, float64) picks for the prompt as sentencepiece
tokenizes it, decoded piece by piece; the timing line must be printed.

The model (llama, Q8_0 matrices, F32 embedding) and its vocabulary (control tokens, the 256 byte
tokens, letters and a few dozen merges with distinct scores) are written with gguf-py. Greedy
paths are only comparable while the oracle's top-2 logit margin exceeds rlx's float32 error
(test_llama.py bounds it by 1e-4 of the logit range; here 2e-4): the comparison stops at the first step
below that margin (reported), and at least 6 steps must be compared.

usage: test_generate.py BUILD_DIR [--cli-only] [--device gpu]   (--cli-only, for the sanitizer build: runs the
CLI and checks its exit status, token count and timing line without the numpy oracle)"""
import os
import random
import subprocess
import sys
import tempfile

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_ref import forward, sentencepiece_for, write_model  # noqa: E402

build = sys.argv[1]
cli_only = "--cli-only" in sys.argv[2:]
device = ["--device", "gpu"] if "gpu" in sys.argv[2:] else []
W = "\u2581"
rng = random.Random(3)
pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [W] + list("abcdefghijklmnopqrstuvwxyz,.")
merges = ["th", "he", "in", "er", "an", W + "t", W + "a", W + "th", W + "the", "on", "re", "at", "en", "nd", W + "w", "or", W + "s",
          "es", "ing", W + "o", "is", "it", W + "i", "ll", "ed", "ou", W + "c", "ar", "st", W + "b"]
pieces += merges
types = [2, 3, 3] + [6] * 256 + [1] * (len(pieces) - 259)
scores = [0.0] * 259 + [-10.0 - i for i in range(len(pieces) - 259 - len(merges))] + [-1.0 - 0.25 * i for i in range(len(merges))]
cfg = dict(arch="llama", dim=64, heads=4, kv_heads=2, ffn=128, vocab=len(pieces), layers=2, ctx=64, eps=1e-5, base=10000.0,
           wtype=gguf.GGMLQuantizationType.Q8_0)
prompt, max_tokens = "the cat sat on the mat", 12


def piece_bytes(i):
    if types[i] == 6:
        return bytes([int(pieces[i][3:5], 16)])
    if types[i] in (2, 3):
        return b""
    return pieces[i].replace(W, " ").encode()


failures = []
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.gguf")
    weights = write_model(path, cfg, np.random.default_rng(11), vocab=(pieces, scores, types))
    r = subprocess.run([os.path.join(build, "rlx"), "generate", path, "--prompt", prompt, "--max-tokens", str(max_tokens)] + device,
                       capture_output=True, timeout=300)
    out, err = r.stdout, r.stderr.decode(errors="replace")
    print(err.strip())
    if r.returncode != 0:
        sys.exit(f"FAIL rlx generate exited {r.returncode}: {err}")
    if "prefill:" not in err or "tokens/s" not in err:
        failures.append(f"no timing line on stderr: {err!r}")
    if not out.startswith(prompt.encode()):
        failures.append(f"the output does not start with the prompt: {out!r}")
    if not cli_only:
        ids = [1] + sentencepiece_for(pieces, scores, types).encode(prompt)
        seq, expect, compared = list(ids), b"", 0
        for step in range(max_tokens):
            logits = forward(weights, cfg, np.array(seq))[-1]
            top = np.sort(logits)
            if top[-1] - top[-2] <= 2e-4 * (logits.max() - logits.min()):
                print(f"step {step}: top-2 margin {top[-1] - top[-2]:.2e} too small to compare greedy choices; stopping there")
                break
            nxt = int(np.argmax(logits))
            if nxt == 2:
                break
            expect += piece_bytes(nxt)
            seq.append(nxt)
            compared += 1
        got = out[len(prompt):]
        print(f"rlx: {got!r}\nnumpy greedy ({compared} steps): {expect!r}")
        if not got.startswith(expect):
            failures.append(f"generated {got!r}, the oracle's greedy continuation is {expect!r}")
        if compared < 6:
            failures.append(f"only {compared} greedy steps comparable")
if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
