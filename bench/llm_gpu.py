"""LLM inference on the GPU: rlx (rlx/llm.h, compiled mode, --device gpu) against PyTorch
(transformers' LlamaForCausalLM, float16, eager, its KV cache), prefill and decode tokens/s, and
rlx's decode as a fraction of the memory-bandwidth roofline.

Models (Llama-shaped, seeded random weights written with gguf-py into --dir, default
${XDG_CACHE_HOME:-~/.cache}/rlx/llm_gpu): "110m" (12 layers, dim 768, 12 heads / 4 KV heads, SwiGLU
2048, 32000 tokens, tied embeddings: bench/llm_bench.py's) and "1b" (TinyLlama-1.1B's shape: 22
layers, dim 2048, 32 heads / 4 KV heads, SwiGLU 5632, 32000 tokens, tied here). PyTorch gets a model
of the same configuration with its own seeded weights (speed does not depend on the values).
Both run a prompt of --prompt tokens as one batch, then --gen greedy one-token steps (the sampled
id goes back in; rlx reads no logits back and steps with rlx_llm_generate: the id stays on the
device and each step is committed before the one before is read back); the first of --reps + 1
runs warms up (rlx's compiled mode traces there), the median of the rest is reported; times end
after the GPU is done (rlx's last id read back on the host; torch.cuda.synchronize).

Roofline: a decode step must read every weight matrix once (the tied embedding as the output
projection; the embedding lookup reads one row): bytes = the GGUF file's matrix bytes. Achieved
bandwidth = bytes x decode tokens/s; the fraction is of --peak-gbps (default 3350 GB/s, the H100
SXM's HBM3 figure from NVIDIA's data sheet).

usage (GPU machine, CUDA build): .venv/bin/python bench/llm_gpu.py [--models 110m,1b] [--types f16,q8_0]
       [--prompt 128] [--gen 128] [--reps 3] [--peak-gbps 3350] [--no-torch] [--device gpu|cpu]
       [--json FILE]"""
import argparse
import json
import os
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--models", default="110m,1b")
ap.add_argument("--types", default="f16,q8_0")
ap.add_argument("--prompt", type=int, default=128)
ap.add_argument("--gen", type=int, default=128)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--peak-gbps", type=float, default=3350.0)
ap.add_argument("--no-torch", action="store_true")
ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu", help="rlx's device (cpu: to try the script without a GPU)")
ap.add_argument("--dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlx", "llm_gpu"))
ap.add_argument("--build", default=os.path.join(root, "build"))
ap.add_argument("--json")
args = ap.parse_args()

import gguf  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(root, "tests", "gguf"))
from llama_ref import write_model  # noqa: E402
from rlx_llm import Rlx  # noqa: E402

Q = gguf.GGMLQuantizationType
BASE = dict(arch="llama", vocab=32000, ctx=2048, eps=1e-5, base=10000.0, tied=True)
SIZES = {"110m": dict(BASE, dim=768, heads=12, kv_heads=4, ffn=2048, layers=12),
         "1b": dict(BASE, dim=2048, heads=32, kv_heads=4, ffn=5632, layers=22)}


def model_path(size, kind):
    os.makedirs(args.dir, exist_ok=True)
    path = os.path.join(args.dir, f"llama{size}-{kind}.gguf")
    if not os.path.exists(path):
        t0 = time.time()
        wtype = {"f16": Q.F16, "q8_0": Q.Q8_0}[kind]
        write_model(path + ".tmp", dict(SIZES[size], wtype=wtype, embd_type=wtype), np.random.default_rng(110))
        os.replace(path + ".tmp", path)
        print(f"wrote {path} ({os.path.getsize(path) / 2**20:.0f} MiB) in {time.time() - t0:.0f} s", flush=True)
    return path


def matrix_bytes(path):
    """Bytes of the 2-D tensors (the weight matrices a decode step reads)."""
    r = gguf.GGUFReader(path)
    return sum(int(t.n_bytes) for t in r.tensors if len(t.shape) == 2)


def bench_rlx(rlx, path, vocab):
    m = rlx.open_model(path, device=1 if args.device == "gpu" else 0, capacity=args.prompt + args.gen + 1)
    prompt = (1 + np.arange(args.prompt) % (vocab - 1)).astype(np.int32)
    try:
        return rlx.time_generation(m, prompt, args.gen, args.reps)
    finally:
        rlx.close_model(m)


def bench_torch(cfg):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    c = LlamaConfig(vocab_size=cfg["vocab"], hidden_size=cfg["dim"], intermediate_size=cfg["ffn"], num_hidden_layers=cfg["layers"],
                    num_attention_heads=cfg["heads"], num_key_value_heads=cfg["kv_heads"], rms_norm_eps=cfg["eps"],
                    rope_theta=cfg["base"], max_position_embeddings=cfg["ctx"], tie_word_embeddings=True)
    model = LlamaForCausalLM(c).to(device="cuda", dtype=torch.float16).eval()
    prompt = (1 + torch.arange(args.prompt, device="cuda") % (cfg["vocab"] - 1)).unsqueeze(0)
    pp, tg = [], []
    with torch.inference_mode():
        for r in range(args.reps + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(input_ids=prompt, use_cache=True)
            nxt = out.logits[:, -1:].argmax(-1)
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            past = out.past_key_values
            for _ in range(args.gen):
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            if r:
                pp.append(args.prompt / (t1 - t0))
                tg.append(args.gen / (t2 - t1))
    del model
    torch.cuda.empty_cache()
    return statistics.median(pp), statistics.median(tg)


rlx = Rlx(args.build)
rows = []
print(f"prompt {args.prompt} tokens, {args.gen} decode steps, median of {args.reps}; roofline {args.peak_gbps:.0f} GB/s")
print(f"{'model':6} {'weights':8} {'rlx prefill':>12} {'torch':>9} {'rlx decode':>11} {'torch':>9} {'rlx/torch':>9} {'MB/token':>9} "
      f"{'rlx GB/s':>9} {'roofline':>8}  (tokens/s)")
for size in args.models.split(","):
    torch_fp16 = None if args.no_torch else bench_torch(SIZES[size])
    for kind in args.types.split(","):
        path = model_path(size, kind)
        nbytes = matrix_bytes(path)
        rp, rd = bench_rlx(rlx, path, SIZES[size]["vocab"])
        tp, td = torch_fp16 if torch_fp16 and kind == "f16" else (float("nan"), float("nan"))
        gbps = nbytes * rd / 1e9
        rows.append(dict(model=size, weights=kind, rlx_prefill=rp, torch_prefill=tp, rlx_decode=rd, torch_decode=td,
                         bytes_per_token=nbytes, rlx_gbps=gbps, roofline=gbps / args.peak_gbps))
        print(f"{size:6} {kind:8} {rp:12.1f} {tp:9.1f} {rd:11.1f} {td:9.1f} {rd / td:9.2f} {nbytes / 1e6:9.0f} {gbps:9.0f} "
              f"{gbps / args.peak_gbps:8.1%}", flush=True)
if args.json:
    with open(args.json, "w") as f:
        json.dump(dict(prompt=args.prompt, gen=args.gen, reps=args.reps, peak_gbps=args.peak_gbps, rows=rows), f, indent=1)
