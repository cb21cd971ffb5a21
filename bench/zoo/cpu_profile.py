"""Where the CPU time of a zoo model goes, per op family, for rlx and for ONNX Runtime: each runner
runs the model under `perf record` (sampling only the timed runs: perf's control fifo is enabled
after import and two warm-up runs), and the samples of every thread of the process are grouped by
function into families (sgemm, rlx's own kernels, MLX elementwise / copies / reductions, compiled
kernels, BLAS idle spinning, allocation, ...). Shares are of CPU time (all threads), so they do
not depend on how loaded the machine is, except that idle spinning grows with the load.

usage: cpu_profile.py [--lib build/librlx.so] [--models a,b] [--runners lazy,compiled,ort1] [--runs N]
                  [--cpu-seconds S] [--min-share 1.5] [--keep DIR]
Prints one markdown table per model: family, share of CPU samples per runner, and the CPU ms per
run it stands for (samples / frequency / runs); then per runner its threads' CPU ms per run with
their top families (rlx's serial part is what its stream thread does outside rlx's kernels, which
split their work with the rlx-pool workers). Needs perf (perf_event_paranoid <= 2).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (family, regex on "dso symbol"), first match wins.
FAMILIES = [
    ("BLAS/pool idle spin (sched_yield)", r"sched_yield|\[k\] (__schedule|schedule|do_syscall_64|finish_task_switch|"
                                          r"x64_sys_call|entry_SYSCALL|syscall_exit|_raw_spin_unlock_irqrestore)"),
    ("kernel: page faults, memory", r"\[k\] .*(page|folio|fault|clear_|memcg|lru|pte|mm_|rmqueue|zap)"),
    ("kernel: other", r"\[k\] "),
    ("sgemm (OpenBLAS)", r"openblas.*(sgemm|gemm|_kernel|copy|beta)"),
    ("OpenBLAS other", r"openblas"),
    ("rlx GEMM micro-kernel", r"librlx.*gemm_rows"),
    ("rlx dot-product conv (at most 4 output positions)", r"librlx.*(dot_conv|dot_rows)"),
    ("rlx direct conv (depthwise, few channels)", r"librlx.*(direct_blocks|direct_conv|DirectConv)"),
    ("rlx GEMM conv / matmul (patches, tile buffers, packing, epilogue)", r"librlx.*(gemm_conv|implicit_conv|GemmConv|im2col|"
                                                                        r"tile_buffer|tile_offsets|copy_rows|deinterleave|"
                                                                        r"Matmul|matmul|pack_b|PackRhs|epilogue)"),
    ("rlx Winograd transforms", r"librlx.*(input_channel|output_channel|input_rows|output_rows)"),
    ("rlx pooling", r"librlx.*(pool_row|Pool2d|::pool\()"),
    ("rlx resize", r"librlx.*(resize_row|combine_rows|Resize2d|::resize\()"),
    ("rlx attention", r"librlx.*(Attention|attention|softmax_block)"),
    ("rlx LayerNorm / RMSNorm", r"librlx.*(norm_row|Norm)"),
    ("rlx softmax / SLEEF transcendentals / activations",
     r"(librlx|sleef).*([Ss]oftmax|Sleef|exp|Exp|apply_act|act_|_act\b|smooth_act|BiasAct)"),
    ("rlx thread pool", r"librlx.*(Pool::|parallel_for|chunks|work)"),
    ("MLX compiled (JIT) kernels", r"^\((?!.*(libmlx|librlx|libc|libm|python|openblas|sleef|onnxruntime|kernel))"),
    ("MLX elementwise", r"libmlx.*(binary_op|unary_op|ternary_op|Vector|Scalar|detail::|select|Select|erf|Erf|"
                        r"simd::|Sigmoid|Tanh|Exp|Log)"),
    ("MLX copies / transposes", r"libmlx.*(copy|Copy|transpose|pad|slice|concatenate|gather|scatter)"),
    ("MLX reductions / softmax / norms", r"libmlx.*(reduc|Reduce|softmax|Softmax|norm|Norm|arg)"),
    ("MLX conv (im2col, slow loops)", r"libmlx.*(conv|Conv|im2col)"),
    ("MLX graph / dispatch", r"libmlx"),
    ("rlx host (lowering, executable)", r"librlx"),
    ("libc: malloc, memcpy, memset", r"libc\.so|libstdc"),
    ("libm (scalar exp, tanh...)", r"libm\.so"),
    ("ORT: MLAS gemm / conv", r"onnxruntime.*(Sgemm|Gemm|Conv|Im2col|sgemm|Pack)"),
    ("ORT: MLAS transcendentals", r"onnxruntime.*(Exp|Logistic|Tanh|Erf|Softmax|Gelu|Activation)"),
    ("ORT: other", r"onnxruntime"),
    ("Python, ctypes", r"python|ctypes|numpy|_multiarray"),
    ("other", r""),
]


def family(dso_sym):
    for name, rx in FAMILIES:
        if re.search(rx, dso_sym):
            return name
    return "other"


CHILD = r"""
import os, sys, time
sys.path.insert(0, {here!r})
import zoo, rlxpy
import onnxruntime as ort
name, runner, n, ctl = {name!r}, {runner!r}, {runs}, {ctl!r}
path, feeds, tol, what = zoo.model_spec(name, {cache!r})
if runner.startswith("ort"):
    so = ort.SessionOptions(); so.intra_op_num_threads = int(runner[3:]); so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    fn = lambda: s.run(None, feeds)
else:
    r = rlxpy.Rlx({lib!r})
    m = r.import_onnx(path, feeds)
    ex = m.executable(runner, "cpu"); ex.bind(feeds); fn = ex.run
c0 = time.process_time()
for _ in range(2): fn()
n = max(n, int({cpu_s} / max((time.process_time() - c0) / 2, 1e-6)))  # at least cpu_s of CPU time sampled
with open(ctl, "w") as f: f.write("enable\n")
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(n): fn()
dt, dc = (time.perf_counter() - t0) / n, (time.process_time() - c0) / n
with open(ctl, "w") as f: f.write("disable\n")
print(f"WALL {{dt*1e3:.3f}} CPU {{dc*1e3:.3f}} PID {{os.getpid()}}")
if runner.startswith("ort"):  # ONNX Runtime's own per-node times, summed per op type
    import json
    so.enable_profiling = True
    so.profile_file_prefix = ctl + ".ort"
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    for _ in range(n + 2): s.run(None, feeds)
    ops = {{}}
    prof = s.end_profiling()
    with open(prof) as f:
        events = json.load(f)
    os.unlink(prof)
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            op = e["args"].get("op_name", "?")
            ops[op] = ops.get(op, 0) + e["dur"] / 1e3 / (n + 2)
    print("OPS " + json.dumps(ops))
"""


def profile(args, name, runner, tmp):
    data, ctl = os.path.join(tmp, f"{name}_{runner}.data"), os.path.join(tmp, f"{name}_{runner}.ctl")
    if os.path.exists(ctl):
        os.unlink(ctl)
    os.mkfifo(ctl)
    code = CHILD.format(here=HERE, name=name, runner=runner, runs=args.runs, cpu_s=args.cpu_seconds, ctl=ctl, cache=args.cache,
                        lib=os.path.abspath(args.lib))
    cmd = ["perf", "record", "-q", "-D", "-1", "--control", f"fifo:{ctl}", "-F", str(args.freq), "-o", data, "--",
           sys.executable, "-c", code]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"WALL (\S+) CPU (\S+)", p.stdout)
    if p.returncode or not m:
        raise RuntimeError(f"{name} {runner}: {p.stderr[-500:]}")
    # perf's "pid" sort key is the thread: "tid:comm"
    rep = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "pid,dso,sym", "-F", "sample,pid,dso,sym"],
                         capture_output=True, text=True).stdout
    fam, total, threads = {}, 0, {}
    pid = int(re.search(r"PID (\d+)", p.stdout).group(1))
    for line in rep.splitlines():
        mm = re.match(r"\s*(\d+)\s+(\d+):(\S+)\s+(\S+)\s+(.*)$", line)
        if not mm or line.lstrip().startswith("#"):
            continue
        n = int(mm.group(1))
        total += n
        f = family(f"({mm.group(4)}) {mm.group(5)}")
        fam[f] = fam.get(f, 0) + n
        tid = int(mm.group(2))
        th = threads.setdefault(tid, {"role": "main" if tid == pid else mm.group(3), "n": 0, "fam": {}})
        th["n"] += n
        th["fam"][f] = th["fam"].get(f, 0) + n
    ops = re.search(r"^OPS (.*)$", p.stdout, re.M)
    return {"wall_ms": float(m.group(1)), "cpu_ms": float(m.group(2)), "samples": total, "fam": fam,
            "threads": sorted(threads.values(), key=lambda t: -t["n"]), "ops": json.loads(ops.group(1)) if ops else None}


def thread_line(res, t):
    """One thread's CPU ms per run and its three largest families (ms): rlx's pool workers are named
    rlx-pool; of the unnamed threads, the main one runs Python, rlx's lowering and MLX's graph
    building, the others are MLX's stream thread (every MLX CPU op) or ONNX Runtime's workers."""
    ms = res["cpu_ms"] / max(res["samples"], 1)
    top = sorted(t["fam"].items(), key=lambda kv: -kv[1])[:3]
    return f"{t['role']} {t['n'] * ms:.3g} (" + ", ".join(f"{f} {n * ms:.2g}" for f, n in top) + ")"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "librlx.so"))
    ap.add_argument("--models", default="ocr_rec,ocr_cls,silero_vad,yolov8n,magika,bert,resnet50")
    ap.add_argument("--runners", default="lazy,compiled,ort1")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--cpu-seconds", type=float, default=2.0, help="more runs until about this much CPU time")
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument("--min-share", type=float, default=1.5, help="families below this %% in every runner are summed")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "rlx", "zoo"))
    ap.add_argument("--keep", help="keep the perf data here")
    args = ap.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="rlx-prof-")
    os.makedirs(tmp, exist_ok=True)
    try:
        report(args, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def report(args, tmp):
    runners = args.runners.split(",")
    print(f"# rlx zoo CPU profile, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {args.runs} runs per "
          f"runner, load average {os.getloadavg()[0]:.1f}")
    for name in args.models.split(","):
        res = {r: profile(args, name, r, tmp) for r in runners}
        fams = sorted({f for r in res.values() for f in r["fam"]},
                      key=lambda f: -max(r["fam"].get(f, 0) / max(r["samples"], 1) for r in res.values()))
        print(f"\n## {name}\n")
        print("| family | " + " | ".join(f"{r} % (CPU ms/run)" for r in runners) + " |")
        print("|---|" + "---|" * len(runners))
        rest = {r: 0 for r in runners}
        for f in fams:
            shares = {r: 100 * res[r]["fam"].get(f, 0) / max(res[r]["samples"], 1) for r in runners}
            if max(shares.values()) < args.min_share:
                for r in runners:
                    rest[r] += res[r]["fam"].get(f, 0)
                continue
            cells = [f"{shares[r]:.1f} ({res[r]['cpu_ms'] * shares[r] / 100:.3g})" for r in runners]
            print(f"| {f} | " + " | ".join(cells) + " |")
        cells = [f"{100 * rest[r] / max(res[r]['samples'], 1):.1f}" for r in runners]
        print("| (families under {:.1f}%) | ".format(args.min_share) + " | ".join(cells) + " |")
        print("| **CPU ms / run (wall ms)** | " + " | ".join(f"**{res[r]['cpu_ms']:.3g}** ({res[r]['wall_ms']:.3g})"
                                                          for r in runners) + " |", flush=True)
        for r in runners:
            print(f"\n{r} per thread (CPU ms/run: its top families): " + "; ".join(thread_line(res[r], t) for t in res[r]["threads"]
                                                                           if t["n"] >= res[r]["samples"] / 100), flush=True)
        for r in runners:
            ops = res[r]["ops"]
            if ops:
                tot = sum(ops.values())
                top = sorted(ops.items(), key=lambda kv: -kv[1])[:8]
                print(f"\n{r} per op type (share of its profiler's node time): "
                      + ", ".join(f"{k} {100 * v / tot:.0f}%" for k, v in top), flush=True)


if __name__ == "__main__":
    sys.exit(main())
