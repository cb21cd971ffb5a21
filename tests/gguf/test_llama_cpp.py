"""rlx's GGUF tokenizers and Llama-family decoder (rlx/llm.h) against llama.cpp itself.

The oracle is llama.cpp's libllama (the llama.cpp that PyPI's llama-cpp-python 0.3.36 vendors,
built by scripts/llama_cpp.sh into a cache folder) through tests/gguf/llama_cpp_oracle.c, on GGUF
files written here with gguf-py from seeded weights (llama_ref.write_model); the K-quant files are
made by llama.cpp's own llama_model_quantize from an F32 file (gguf-py cannot write K-quants).

Tokenization: a "llama" (SentencePiece-style) vocabulary and a "gpt2" (byte-level BPE) one trained
here on a multilingual sample, the latter with the gpt-2, llama-bpe and qwen2 pre-tokenizers:
every line of the sample, the whole sample and edge texts must encode (BOS as the file says) to
llama.cpp's ids, every id's piece must equal llama_token_to_piece's, and the pieces must decode
back to the text.

Logits: for each model the prompt (a sample line, tokenized) runs as one prefill and then 64
greedy decode steps through rlx; llama.cpp (F32 KV cache, flash attention off, 2 threads) runs
the same prompt greedily for 64 tokens, and teacher-forced over rlx's sequence (the prompt in one
batch, then one token per decode) for every row's logits. Row error = max |rlx - llama.cpp| /
max |llama.cpp| over the vocabulary.
- F32 and F16 weights: every row within 1e-3, and the 64 greedy tokens identical. llama.cpp's F32
  path is plain float32; for F16 weights its CPU matmuls round the activations to float16 (the
  vec_dot type of F16), 2^-11 relative per element, which leaves row errors of a few 1e-4.
- Quantized weights (Q8_0 written by gguf-py; Q4_K_M (Q4_K and Q6_K) and Q5_K_S written by
  llama_model_quantize): llama.cpp quantizes the activations, to Q8_0 (blocks of 32) or Q8_K
  (blocks of 256). rlx (its default options) rounds them to Q8_0 blocks for Q8_0, Q4_0, Q4_1, Q5_0,
  Q5_1 and Q2_K..Q6_K weights (checked against gguf-py in test_llama.py and ops.dequant) and
  multiplies the float activations by the exactly dequantized weights of the other types; so Q8_0's rows agree to 2e-7 but for one
  decode row (8e-3, not explained yet: ggml's x86 rounding of the activations, 127 / max|x| and
  ties to even, gives the same rows), while the K-quant files still differ. Where the
  roundings differ (Q8_K against Q8_0, or either against float; scale max|x|/127), each
  activation moves by up to 1/254 of its block's largest magnitude, uniformly, so about 0.2% of the
  block maximum RMS per element, summed over every matmul of every layer. That is a difference in
  the math, not an error on either side, so the bound is statistical: the row error of every row
  must stay below 5% and its mean over the rows below 2.5% (measured: max 1.0-2.8%, mean
  0.25-1.9%; the issue's estimate for Q8_0 is 2-4% of the logit range); the argmax must agree on every row whose llama.cpp top-2 margin
  exceeds twice that row's error, and the report lists the agreement rate and the margins of
  the rows that differ.

usage: test_llama_cpp.py BUILD_DIR   (exit 77, CTest's skip, when the oracle is not built: run
scripts/llama_cpp.sh, as scripts/test.sh does)"""
import os
import random
import subprocess
import sys
import tempfile

import gguf
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from llama_ref import EXTRA_TEXTS, SAMPLE, add_gpt2_vocab, add_vocab, gpt2_vocab, spm_vocab, write_model  # noqa: E402
from rlx_llm import Rlx  # noqa: E402

root = os.path.dirname(os.path.dirname(here))
r = subprocess.run([os.path.join(root, "scripts", "llama_cpp.sh"), "--installed"], capture_output=True, text=True)
if r.returncode:
    print("SKIP: llama.cpp's oracle is not built (scripts/llama_cpp.sh)")
    sys.exit(77)
oracle = r.stdout.strip()
rlx = Rlx(sys.argv[1])
Q = gguf.GGMLQuantizationType
N_GEN, THREADS = 64, 2
failures = []


def llama_cpp(*args, **kw):
    p = subprocess.run([oracle] + [str(a) for a in args], capture_output=True, text=True, timeout=600, **kw)
    if p.returncode:
        raise RuntimeError(f"llama_cpp_oracle {args[0]}: exit status {p.returncode} {p.stderr.strip()}")
    return p.stdout


def ids_of(line):
    return [int(x) for x in line.split()]


# ---- tokenization ----
TEXTS = SAMPLE.split("\n") + [SAMPLE] + EXTRA_TEXTS


def check_tokenizer(name, path, tmp):
    t = rlx.open_tokenizer(path)
    try:
        n_ids = 0
        for k, text in enumerate(TEXTS):
            raw = text.encode()
            tf = os.path.join(tmp, "text.txt")
            with open(tf, "wb") as f:
                f.write(raw)
            ref = ids_of(llama_cpp("tokenize", path, tf))
            got = rlx.encode(t, raw, add_bos=True)
            n_ids += len(got)
            if got != ref:
                failures.append(f"{name}: encode text {k} {text[:30]!r}:\n  rlx       {got}\n  llama.cpp {ref}")
            out = b"".join(rlx.piece(t, i) for i in got)
            if name.startswith("spm") and out.startswith(b" "):
                out = out[1:]  # the prepended space
            if out != raw:
                failures.append(f"{name}: decode text {k}: {out!r} != {raw!r}")
        vocab = rlx.lib.rlx_tokenizer_vocab_size(t)
        ref_pieces = [bytes.fromhex(x) for x in llama_cpp("pieces", path, *range(vocab)).split("\n")[:vocab]]
        bad = [i for i in range(vocab) if rlx.piece(t, i) != ref_pieces[i]]
        if bad:
            failures.append(f"{name}: pieces of ids {bad[:10]} differ from llama_token_to_piece (first: {rlx.piece(t, bad[0])!r} vs "
                            f"{ref_pieces[bad[0]]!r})")
        print(f"tokenizer {name}: {vocab} tokens, {len(TEXTS)} texts, {n_ids} ids equal to llama.cpp's: "
              f"{'yes' if not any(f.startswith(name + ':') for f in failures) else 'NO'}")
    finally:
        rlx.close_tokenizer(t)


# ---- logits ----
def base_cfg(**kw):
    cfg = dict(arch="llama", dim=64, heads=4, kv_heads=2, ffn=128, layers=2, ctx=256, eps=1e-5, base=10000.0, wtype=Q.F32)
    cfg.update(kw)
    return cfg


MODELS = [  # (config, vocab: "spm" or "gpt2", llama_model_quantize's ftype or None)
    (base_cfg(name="llama-f32"), "spm", None),
    (base_cfg(name="llama-f16-rope-linear-tied", dim=128, kv_heads=4, ffn=256, base=500000.0, rope_scale=4.0, wtype=Q.F16,
              embd_type=Q.F16, tied=True), "spm", None),
    (base_cfg(name="qwen2-f16-bias-tied", arch="qwen2", dim=96, heads=6, ffn=160, eps=1e-6, base=1000000.0, wtype=Q.F16, bias=True,
              tied=True), "gpt2", None),
    (base_cfg(name="llama-q8_0", dim=128, ffn=256, wtype=Q.Q8_0), "spm", None),
    (base_cfg(name="llama-q4_k_m", dim=256, ffn=512), "spm", 15),
    (base_cfg(name="qwen2-q5_k_s-bias", arch="qwen2", dim=256, heads=4, kv_heads=2, ffn=512, bias=True), "gpt2", 16),
]


def row_error(a, b):
    return np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)


def check_model(cfg, vocab_kind, ftype, seed, tmp, vocabs):
    name = cfg["name"]
    toks, add = vocabs[vocab_kind]
    cfg = dict(cfg, vocab=len(toks))
    path = os.path.join(tmp, name + ".gguf")
    write_model(path, cfg, np.random.default_rng(seed), vocab=add)
    if ftype is not None:
        qpath = os.path.join(tmp, name + ".q.gguf")
        llama_cpp("quantize", path, qpath, ftype, 0)
        path = qpath
    V = cfg["vocab"]
    t = rlx.open_tokenizer(path)
    try:
        prompt = rlx.encode(t, SAMPLE.split("\n")[seed % 7].encode(), add_bos=True)
    finally:
        rlx.close_tokenizer(t)
    m = rlx.open_model(path)
    try:
        rows, nxt = rlx.step(m, prompt, V)
        gen = []
        for _ in range(N_GEN):
            gen.append(nxt)
            if len(gen) == N_GEN:
                break
            lg, nxt = rlx.step(m, [nxt], V)
            rows = np.concatenate([rows, lg])
    finally:
        rlx.close_model(m)
    seq = prompt + gen[:-1]
    lf = os.path.join(tmp, name + ".logits")
    llama_cpp("logits", path, THREADS, len(prompt), lf, *seq)
    ref = np.fromfile(lf, np.float32).reshape(len(seq), V)
    err = row_error(rows, ref)
    P = len(prompt)
    srt = np.sort(ref, axis=1)
    margin = srt[:, -1] - srt[:, -2]
    differ = np.nonzero(rows.argmax(1) != ref.argmax(1))[0]
    agree = 1 - len(differ) / len(seq)
    line = (f"{name}: {P} prompt + {N_GEN - 1} decode rows, row error max prefill {err[:P].max():.2e} decode {err[P:].max():.2e} "
            f"mean {err.mean():.2e}; argmax agreement {agree:.1%}")
    if len(differ):
        line += f", differing rows (llama.cpp top-2 margin / logit range): " + ", ".join(
            f"{i}: {margin[i] / (srt[i, -1] - srt[i, 0]):.1e}" for i in differ[:8])
    if ftype is None and cfg["wtype"] in (Q.F32, Q.F16):
        greedy = ids_of(llama_cpp("greedy", path, THREADS, N_GEN, *prompt))
        same = next((i for i in range(N_GEN) if greedy[i] != gen[i]), N_GEN)
        line += f"; greedy tokens identical for {same}/{N_GEN} steps"
        if same < N_GEN:
            failures.append(f"{name}: greedy token {same} differs: rlx {gen[same]}, llama.cpp {greedy[same]}")
        if err.max() > 1e-3:
            failures.append(f"{name}: row error {err.max():.2e} > 1e-3 (rows {np.nonzero(err > 1e-3)[0].tolist()[:10]})")
    else:
        if err.max() > 0.05 or err.mean() > 0.025:
            failures.append(f"{name}: row error max {err.max():.2e} (bound 5e-2), mean {err.mean():.2e} (bound 2.5e-2)")
        bad = [int(i) for i in differ if margin[i] > 2 * err[i] * np.abs(ref[i]).max()]
        if bad:
            failures.append(f"{name}: argmax differs where llama.cpp's margin exceeds twice the row error: rows {bad}")
    print(line)


with tempfile.TemporaryDirectory() as tmp:
    pieces, scores, types = spm_vocab(random.Random(7))
    btoks, btypes, merges = gpt2_vocab()
    vocabs = {"spm": (pieces, lambda w: add_vocab(w, pieces, scores, types)),
              "gpt2": (btoks, lambda w: add_gpt2_vocab(w, btoks, btypes, merges, "qwen2"))}
    tiny = base_cfg(dim=32, heads=2, kv_heads=1, ffn=32, layers=1)
    for name, toks, add in [("spm", pieces, vocabs["spm"][1])] + [
            (f"gpt2-{pre}", btoks, lambda w, pre=pre: add_gpt2_vocab(w, btoks, btypes, merges, pre)) for pre in ("gpt-2", "llama-bpe", "qwen2")]:
        path = os.path.join(tmp, f"tok-{name}.gguf")
        write_model(path, dict(tiny, vocab=len(toks)), np.random.default_rng(1), vocab=add)
        check_tokenizer(name, path, tmp)
    for k, (cfg, vocab_kind, ftype) in enumerate(MODELS):
        check_model(cfg, vocab_kind, ftype, 4000 + k, tmp, vocabs)

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
