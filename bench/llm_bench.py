"""LLM inference on the CPU: rlx (rlx/llm.h, compiled mode) against llama.cpp with the same threads,
prefill and decode tokens/s, on one ~110M-parameter Llama-shaped model in F16, Q8_0, Q4_K (and Q4_0,
Q4_K_M, Q5_K_M).

The model is written once into --dir (default ${XDG_CACHE_HOME:-~/.cache}/rlx/llm_bench) with
gguf-py from seeded weights: llama, 12 layers, dim 768, 12 heads (4 KV heads), SwiGLU 2048, a
32000-token "llama" vocabulary, tied embeddings (25M + 12 x 6.3M = 100M parameters in the matrices);
F16 and Q8_0 by gguf-py, Q4_K and Q4_0 (every matrix, embedding included) and Q4_K_M / Q5_K_M
(llama.cpp's mixes as downloaded files have them: Q6_K for the embedding/output and some attn_v and
ffn_down matrices, Q4_K / Q5_K for the rest) by llama.cpp's llama_model_quantize (gguf-py cannot write K-quants).
Both sides run the same prompt of --prompt tokens as one batch, then --gen greedy one-token steps
(rlx: rlx_llm_generate, each step committed before the one before is read back),
--reps times, interleaved (rlx's run then llama.cpp's, the order alternating every repetition: the
machine's memory bandwidth, which bounds decode, varies with its neighbours' load from one minute
to the next); rlx's model is opened and warmed up once (compiled mode traces there), llama.cpp's
program loads the model and makes one untimed run before each timed one; medians are reported. rlx: RLX_NUM_THREADS =
--threads (its kernel pool, which runs BLAS single-threaded tiles); llama.cpp (scripts/llama_cpp.sh's oracle program): n_threads =
n_threads_batch = --threads, F32 KV cache like rlx's, flash attention off.

usage: .venv/bin/python bench/llm_bench.py [--threads 2] [--prompt 128] [--gen 64] [--reps 5]
       [--types f16,q8_0,q4_k[,q4_0,q4_k_m,q5_k_m]] [--dir DIR] [--build build] [--prepare-only] [--json FILE]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--gen", type=int, default=64)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--types", default="f16,q8_0,q4_k")
ap.add_argument("--dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlx", "llm_bench"))
ap.add_argument("--build", default=os.path.join(root, "build"))
ap.add_argument("--prepare-only", action="store_true")
ap.add_argument("--json")
args = ap.parse_args()
os.environ["RLX_NUM_THREADS"] = str(args.threads)  # rlx runs BLAS single-threaded inside its own pool

import gguf  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(root, "tests", "gguf"))
from llama_ref import add_vocab, write_model  # noqa: E402
from rlx_llm import Rlx  # noqa: E402

Q = gguf.GGMLQuantizationType
CFG = dict(arch="llama", dim=768, heads=12, kv_heads=4, ffn=2048, vocab=32000, layers=12, ctx=1024, eps=1e-5, base=10000.0, tied=True)

oracle = subprocess.run([os.path.join(root, "scripts", "llama_cpp.sh")], capture_output=True, text=True, check=True).stdout.strip()


def vocab(w):
    n = CFG["vocab"]
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + [f"\u2581t{i}" for i in range(n - 259)]
    add_vocab(w, pieces, [0.0] * 259 + [-float(i) for i in range(n - 259)], [2, 3, 3] + [6] * 256 + [1] * (n - 259))


def model_path(kind):
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"llama110m-{kind}.gguf")
    if os.path.exists(path):
        return path
    t0 = time.time()
    if kind in ("q4_k", "q4_0", "q4_k_m", "q5_k_m"):  # LLAMA_FTYPE_MOSTLY_Q4_K_S / Q4_0 pure; Q4_K_M, Q5_K_M as files ship
        src = model_path("f16")
        ftype, pure = {"q4_k": ("14", "1"), "q4_0": ("2", "1"), "q4_k_m": ("15", "0"), "q5_k_m": ("17", "0")}[kind]
        subprocess.run([oracle, "quantize", src, path + ".tmp", ftype, pure], check=True)
    else:
        wtype = {"f16": Q.F16, "q8_0": Q.Q8_0}[kind]
        write_model(path + ".tmp", dict(CFG, wtype=wtype, embd_type=wtype), np.random.default_rng(110), vocab=vocab)
    os.replace(path + ".tmp", path)
    print(f"wrote {path} ({os.path.getsize(path) / 2**20:.0f} MiB) in {time.time() - t0:.0f} s", flush=True)
    return path


def bench_llama_cpp(path):
    """One timed run (after the program's untimed one): (prefill, decode) tokens/s."""
    out = subprocess.run([oracle, "bench", path] + [str(v) for v in (args.threads, args.prompt, args.gen, 1)], capture_output=True, text=True,
                         check=True).stdout
    r = json.loads(out)
    return r["prefill_tok_s"], r["decode_tok_s"]


def bench_pair(rlx, path):
    """(rlx prefill, llama.cpp prefill, rlx decode, llama.cpp decode): medians of --reps interleaved runs."""
    m = rlx.open_model(path, capacity=args.prompt + args.gen + 1)
    prompt = (1 + np.arange(args.prompt) % (CFG["vocab"] - 1)).astype(np.int32)
    runs = {"rlx": [], "llama": []}
    try:
        rlx.time_generation(m, prompt, args.gen, 1)  # warm-up (and one run, not kept)
        for r in range(args.reps):
            for side in ("rlx", "llama") if r % 2 == 0 else ("llama", "rlx"):
                runs[side].append(rlx.time_generation(m, prompt, args.gen, 1, warmup=False) if side == "rlx" else bench_llama_cpp(path))
    finally:
        rlx.close_model(m)
    med = lambda side, i: statistics.median(v[i] for v in runs[side])  # noqa: E731
    return med("rlx", 0), med("llama", 0), med("rlx", 1), med("llama", 1)


kinds = args.types.split(",")
paths = {k: model_path(k) for k in kinds}
if args.prepare_only:
    sys.exit(0)
rlx = Rlx(args.build)
rows = []
print(f"threads {args.threads}, prompt {args.prompt} tokens, {args.gen} decode steps, median of {args.reps} interleaved runs")
print(f"{'weights':8} {'rlx prefill':>12} {'llama.cpp':>10} {'rlx decode':>11} {'llama.cpp':>10}  (tokens/s)")
for k in kinds:
    rp, lp, rd, ld = bench_pair(rlx, paths[k])
    rows.append(dict(weights=k, rlx_prefill=rp, llama_cpp_prefill=lp, rlx_decode=rd, llama_cpp_decode=ld))
    print(f"{k:8} {rp:12.1f} {lp:10.1f} {rd:11.1f} {ld:10.1f}", flush=True)
if args.json:
    with open(args.json, "w") as f:
        json.dump(dict(threads=args.threads, prompt=args.prompt, gen=args.gen, reps=args.reps, rows=rows), f, indent=1)
