"""The GPU kernels of an LLM decode step: rlx (rlx/llm.h, compiled, --device gpu) decodes with
rlx_llm_generate (bench/llm_gpu.py's path: the token and position fed back on the device) a
Llama-shaped model (bench/llm_gpu.py's shapes, F16 weights from seeded values) while PyTorch's
profiler records, through CUPTI, every CUDA kernel and copy of the process (MLX's included); prints
per step the wall time, the number of kernels, the GPU's busy time (their summed durations) and
the kernels that take the most of it. The profiler slows the host side: wall times here are not
the benchmark's (bench/llm_gpu.py), the kernels' own durations are.

usage (GPU machine, CUDA build, PyTorch importable):
    .venv/bin/python bench/llm_gpu_kernels.py [--model 110m|1b] [--steps 16] [--top 18]"""
import argparse
import os
import sys
import time

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ap = argparse.ArgumentParser()
ap.add_argument("--model", choices=("110m", "1b"), default="110m")
ap.add_argument("--steps", type=int, default=16)
ap.add_argument("--top", type=int, default=18)
ap.add_argument("--dir", default=os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlx", "llm_gpu"))
ap.add_argument("--build", default=os.path.join(root, "build"))
args = ap.parse_args()

import gguf  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, os.path.join(root, "tests", "gguf"))
from llama_ref import write_model  # noqa: E402
from rlx_llm import Rlx  # noqa: E402

BASE = dict(arch="llama", vocab=32000, ctx=2048, eps=1e-5, base=10000.0, tied=True)
SIZES = {"110m": dict(BASE, dim=768, heads=12, kv_heads=4, ffn=2048, layers=12),
         "1b": dict(BASE, dim=2048, heads=32, kv_heads=4, ffn=5632, layers=22)}
os.makedirs(args.dir, exist_ok=True)
path = os.path.join(args.dir, f"llama{args.model}-f16.gguf")  # bench/llm_gpu.py's file, same seed
if not os.path.exists(path):
    f16 = gguf.GGMLQuantizationType.F16
    write_model(path + ".tmp", dict(SIZES[args.model], wtype=f16, embd_type=f16), np.random.default_rng(110))
    os.replace(path + ".tmp", path)

torch.zeros(1, device="cuda")  # CUDA initialized before the profiler starts
rlx = Rlx(args.build)
m = rlx.open_model(path, device=1, capacity=128 + args.steps + 9)
prompt = (1 + np.arange(128) % (SIZES[args.model]["vocab"] - 1)).astype(np.int32)
rlx.reset(m)
t = rlx.next_token(m, prompt)
t = rlx.generate(m, t, 8)[-1]  # compiled mode traces on the first steps
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    t0 = time.perf_counter()
    rlx.generate(m, t, args.steps)
    wall = (time.perf_counter() - t0) / args.steps
rlx.close_model(m)
ev = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
busy = sum(e.device_time for e in ev) / 1e3 / args.steps
print(f"{args.model} F16: {wall * 1e3:.2f} ms per step (profiled), {len(ev) / args.steps:.0f} kernels per step, "
      f"GPU busy {busy:.2f} ms per step")
agg = {}
for e in ev:
    a = agg.setdefault(e.name[:90], [0, 0.0])
    a[0] += 1
    a[1] += e.device_time
for name, (n, us) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:args.top]:
    print(f"  {n / args.steps:6.1f} per step  {us / args.steps / 1e3:7.3f} ms per step  {name}")
