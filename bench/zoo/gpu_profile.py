"""GPU profile of a zoo classic per op family, rlx against PyTorch (issue 7, item 4).

Two roles:
  gpu_profile.py run --engine rlx_lazy|rlx_compiled|torch_eager|torch_compile --model gpt2|resnet50_b8
                 [--runs N] [--lib build/librlx.so] [--precision fp32|tf32]
      warms the engine up, prints its wall time per run (median, CUDA-synchronized), then runs N
      more times between cudaProfilerStart/Stop: the range that `ncu --profile-from-start off`
      records.
  gpu_profile.py report DIR
      reads DIR/<model>.<engine>.csv (ncu --csv --page raw --metrics gpu__time_duration.sum) and
      DIR/<model>.<engine>.wall (the run role's output) and prints per model: per engine the wall
      time per run, the GPU kernel time per run and the kernel count (wall - kernel time = launch
      and host overhead), the kernel time per op family (GEMM, convolution, attention,
      normalization, softmax, elementwise, reduction/pooling, data movement, other), and the
      heaviest kernels.

scripts/gpu/profile.sh drives both (ncu works on the GPU machine; nsys does not).
"""
import argparse
import collections
import csv
import glob
import os
import re
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import classics  # noqa: E402

ENGINES = ["rlx_lazy", "rlx_compiled", "torch_eager", "torch_compile"]
# first match wins: convolutions before GEMM (cuDNN's implicit-GEMM conv kernels say "gemm")
FAMILIES = [
    ("convolution", r"conv|fprop|dgrad|wgrad|winograd|implicit|cudnn"),
    ("attention", r"sdpa|attention|flash|fmha|mha"),
    ("GEMM", r"gemm|gemv|cutlass|cublas|xmma|matmul|sgemm|s16816|s1688|splitk"),
    ("softmax", r"softmax"),
    ("normalization", r"norm"),
    ("reduction/pooling", r"reduc|pool|triton_per|triton_red|argmax|\bsum\b|mean"),
    ("data movement", r"copy|transpose|gather|scatter|concat|slice|index|cat_|pad|fill|memset"),
    ("elementwise", r"elementwise|binary|unary|ternary|vectoriz|triton_poi|fused|compiled|kernel_"),
]


def family(kernel):
    k = kernel.lower()
    for name, pat in FAMILIES:
        if re.search(pat, k):
            return name
    return "other"


def run_role(args):
    import torch
    feeds = classics.inputs(args.model)
    path = classics.write(args.model, args.cache)
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    if args.engine.startswith("rlx_"):
        import rlxpy
        r = rlxpy.Rlx(args.lib)
        ex = r.import_onnx(path, feeds).executable(args.engine[4:], "gpu", precision=args.precision)
        ex.bind(feeds, on_device=True)
        ex.readback(False)
        step = ex.run
    else:
        import gpu
        m = gpu.torch_model(args.model, classics.CLASSICS[args.model][0]())
        if args.engine == "torch_compile":
            m = torch.compile(m)
        x = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        step = (lambda: m(**x)) if args.model in ("bert", "gpt2") else (lambda: m(x["input"]))
    with torch.inference_mode():
        for _ in range(3):
            step()
        times = []
        for _ in range(20):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        print(f"wall_ms_per_run {statistics.median(times) * 1e3:.4f}", flush=True)
        torch.cuda.profiler.start()
        for _ in range(args.runs):
            step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print(f"profiled_runs {args.runs}")


def read_ncu(path):
    """[(kernel name, ns)] from an ncu --csv --page raw file (other lines are ignored)."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        return []
    head = rows[0]
    ki, ti = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    scale = 1.0
    out = []
    for row in rows[1:]:
        if len(row) <= max(ki, ti):
            continue
        val = row[ti].replace(",", "")
        try:
            v = float(val)
        except ValueError:  # the units row
            scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(val, scale)
            continue
        out.append((row[ki], v * scale))
    return out


def report_role(args):
    for model in sorted({os.path.basename(p).split(".")[0] for p in glob.glob(os.path.join(args.dir, "*.csv"))}):
        print(f"\n## {model}\n")
        data = {}
        for eng in ENGINES:
            csvp, wallp = (os.path.join(args.dir, f"{model}.{eng}.{x}") for x in ("csv", "wall"))
            if not os.path.exists(csvp) or not os.path.exists(wallp):
                continue
            wall, runs = None, 1
            with open(wallp) as f:
                for line in f:
                    if line.startswith("wall_ms_per_run"):
                        wall = float(line.split()[1])
                    elif line.startswith("profiled_runs"):
                        runs = int(line.split()[1])
            data[eng] = (wall, runs, read_ncu(csvp))
        if not data:
            continue
        engines = list(data)
        print("| | " + " | ".join(engines) + " |")
        print("|---|" + "---|" * len(engines))
        fam = {e: collections.defaultdict(float) for e in engines}
        for e in engines:
            for k, ns in data[e][2]:
                fam[e][family(k)] += ns / data[e][1] / 1e6
        print("| wall ms per run | " + " | ".join(f"{data[e][0]:.3f}" if data[e][0] else "-" for e in engines) + " |")
        print("| GPU kernel ms per run | " + " | ".join(f"{sum(fam[e].values()):.3f}" for e in engines) + " |")
        print("| kernels per run | " + " | ".join(f"{len(data[e][2]) / data[e][1]:.0f}" for e in engines) + " |")
        for name in [f for f, _ in FAMILIES] + ["other"]:
            if any(fam[e].get(name) for e in engines):
                print(f"| {name} ms | " + " | ".join(f"{fam[e].get(name, 0.0):.3f}" for e in engines) + " |")
        for e in engines:
            per = collections.defaultdict(lambda: [0.0, 0])
            for k, ns in data[e][2]:
                per[k][0] += ns / data[e][1] / 1e6
                per[k][1] += 1
            top = sorted(per.items(), key=lambda kv: -kv[1][0])[:8]
            print(f"\n{e}: heaviest kernels (ms per run, launches per run, family)")
            for k, (ms, n) in top:
                print(f"  {ms:8.3f}  {n / data[e][1]:5.0f}  {family(k):18} {k[:110]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="role", required=True)
    r = sub.add_parser("run")
    r.add_argument("--engine", choices=ENGINES, required=True)
    r.add_argument("--model", choices=list(classics.CLASSICS), required=True)
    r.add_argument("--runs", type=int, default=3)
    r.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "librlx.so"))
    r.add_argument("--precision", choices=["fp32", "tf32"], default="fp32")
    r.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                   "rlx", "zoo"))
    p = sub.add_parser("report")
    p.add_argument("dir")
    args = ap.parse_args()
    np.seterr(all="ignore")
    return run_role(args) if args.role == "run" else report_role(args)


if __name__ == "__main__":
    sys.exit(main())
