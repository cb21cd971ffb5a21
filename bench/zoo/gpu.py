"""Model-zoo benchmark on an NVIDIA GPU: rlx (MLX's CUDA backend, lazy and compiled) against
PyTorch eager and torch.compile on the transformer/CNN classics, with the same seeded weights.

classics.py writes the ONNX graphs (BERT-base, GPT-2 124M, ResNet-50 at batch 1 and 8) and their
weights in PyTorch state_dict layout; this script loads those very weights into transformers'
BertModel / GPT2LMHeadModel and torchvision's resnet50, runs rlx on the ONNX graphs, and checks
both against ONNX Runtime (CPU) on the same inputs, so that the two engines are shown to compute
the same model before they are timed.

Timing, per model, in one process: inputs resident on the GPU (rlx: device handles; PyTorch: CUDA
tensors), outputs left on the GPU (rlx: readback off; runs still wait for the results), every
call followed by torch.cuda.synchronize(); --repeat rounds in which each runner runs once (order
rotating), medians. First runs (rlx compiled's trace + NVRTC JIT, torch.compile's compilation)
are reported on their own.

Precision: --precision fp32 (default) runs float32 matmuls/convolutions in full fp32 in both
engines (rlx_executable_set_precision FP32; torch.backends.cuda.matmul.allow_tf32 and
torch.backends.cudnn.allow_tf32 False); --precision tf32 turns TF32 on in both. MLX fixes the
precision once per process, so compare the two with two runs of this script.

Run on the GPU machine from a checkout where rlx is built against the mlx-cuda-13 wheel (README,
"GPU"), with PyTorch's Python (torch, transformers, torchvision, onnx, onnxruntime):
    python bench/zoo/gpu.py --lib build/librlx.so [--precision fp32|tf32] [--models bert,gpt2,...]
Takes about 5-8 minutes with empty compile caches (rlx's NVRTC kernels and torch.compile's).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import classics  # noqa: E402
import rlxpy  # noqa: E402

MODELS = ["bert", "gpt2", "resnet50", "resnet50_b8"]


def torch_model(name, weights):
    """The PyTorch model of a classic with classics.py's weights loaded (eval mode, on the GPU)."""
    import torch
    if name == "bert":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, max_position_embeddings=512, type_vocab_size=2,
                         layer_norm_eps=1e-12)
        m = BertModel(cfg, add_pooling_layer=True)
    elif name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel
        cfg = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                         activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         layer_norm_epsilon=1e-5)
        m = GPT2LMHeadModel(cfg)  # lm_head is tied to transformer.wte
    else:
        import torchvision
        m = torchvision.models.resnet50(weights=None)
    state = {k: torch.from_numpy(v) for k, v in weights.items()}
    missing, unexpected = m.load_state_dict(state, strict=False)
    params = {k for k, _ in m.named_parameters()}
    really_missing = [k for k in missing if k in params and not (name == "gpt2" and k == "lm_head.weight")]
    if really_missing or unexpected:
        raise RuntimeError(f"{name}: weights do not fit the PyTorch model: missing {really_missing[:5]}, "
                           f"unexpected {list(unexpected)[:5]}")
    return m.eval().cuda()


def torch_outputs(name, out):
    """The outputs in the ONNX graph's order, as tensors."""
    if name == "bert":
        return [out.last_hidden_state, out.pooler_output]
    if name == "gpt2":
        return [out.logits]
    return [out]


def err(got, ref):
    """max |got - ref| / max(1, max |ref|) over all outputs (inf on a shape mismatch)."""
    e = 0.0
    for g, r in zip(got, ref):
        if g.shape != r.shape:
            return float("inf")
        e = max(e, float(np.abs(g.astype(np.float64) - r).max()) / max(1.0, float(np.abs(r).max())))
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "..", "build", "librlx.so"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precision", choices=["fp32", "tf32"], default="fp32")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-torch-compile", action="store_true")
    ap.add_argument("--cache", default=os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                                                    "rlx", "zoo"))
    args = ap.parse_args()

    import onnxruntime as ort
    import torch
    tf32 = args.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    r = rlxpy.Rlx(args.lib)
    if not r.lib.rlx_gpu_available():
        sys.exit("rlx has no GPU here: build it against the mlx-cuda-13 wheel (README, GPU)")
    print(f"# rlx zoo on {r.describe('gpu')}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: MLX "
          f"{r.lib.rlx_mlx_version().decode()}, PyTorch {torch.__version__}, precision {args.precision}; medians of "
          f"{args.repeat} interleaved rounds, inputs and outputs on the GPU", flush=True)
    rows = []
    for name in args.models.split(","):
        t_model = time.perf_counter()
        path = classics.write(name, args.cache)
        feeds = classics.inputs(name)
        weights = classics.CLASSICS[name][0]()
        so = ort.SessionOptions()
        ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        row = {"model": name}

        # rlx
        t0 = time.perf_counter()
        model = r.import_onnx(path, feeds, with_values=True)
        row["import_ms"] = (time.perf_counter() - t0) * 1e3
        runners, exes = {}, []
        for mode in ("lazy", "compiled"):
            ex = model.executable(mode, "gpu", precision=args.precision)
            exes.append(ex)
            ex.bind(feeds, on_device=True)
            t0 = time.perf_counter()
            out = ex.run(fetch=True)
            row[f"rlx_{mode}_first_ms"] = (time.perf_counter() - t0) * 1e3
            row[f"rlx_{mode}_err"] = err(out, ref)
            ex.readback(False)
            runners[f"rlx_{mode}"] = ex.run

        # PyTorch
        tm = torch_model(name, weights)
        x = {k: torch.from_numpy(v).cuda() for k, v in feeds.items()}
        call = (lambda m: lambda: m(**x)) if name in ("bert", "gpt2") else (lambda m: lambda: m(x["input"]))
        with torch.inference_mode():
            out = torch_outputs(name, call(tm)())
            row["torch_eager_err"] = err([o.float().cpu().numpy() for o in out], ref)
            runners["torch_eager"] = call(tm)
            if not args.no_torch_compile:
                ctm = torch.compile(tm)
                t0 = time.perf_counter()
                out = torch_outputs(name, call(ctm)())
                torch.cuda.synchronize()
                row["torch_compile_first_ms"] = (time.perf_counter() - t0) * 1e3
                row["torch_compile_err"] = err([o.float().cpu().numpy() for o in out], ref)
                runners["torch_compile"] = call(ctm)

            names = list(runners)
            for n in names:  # warm-up
                runners[n]()
            torch.cuda.synchronize()
            times = {n: [] for n in names}
            for rnd in range(args.repeat):
                for j in range(len(names)):
                    n = names[(rnd + j) % len(names)]
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    runners[n]()
                    torch.cuda.synchronize()
                    times[n].append(time.perf_counter() - t0)
        for n in names:
            row[f"{n}_ms"] = statistics.median(times[n]) * 1e3
        for ex in exes:
            ex.free()
        model.free()
        del tm, runners
        torch.cuda.empty_cache()
        row["total_s"] = time.perf_counter() - t_model
        rows.append(row)
        print(f"{name}: done in {row['total_s']:.0f} s", file=sys.stderr, flush=True)

    def ms(v):
        return "-" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")

    def ratio(a, b):
        return "-" if a is None or b is None else f"{a / b:.2f}"

    print("| model | rlx lazy ms | rlx compiled ms (first run) | PyTorch eager ms | torch.compile ms (first run) "
          "| lazy / eager | compiled / eager | compiled / torch.compile | rlx import ms "
          "| err vs ORT: rlx lazy / compiled / eager / torch.compile |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for w in rows:
        g = w.get
        errs = " / ".join(f"{g(k):.1e}" if g(k) is not None else "-"
                          for k in ("rlx_lazy_err", "rlx_compiled_err", "torch_eager_err", "torch_compile_err"))
        print(f"| {w['model']} | {ms(g('rlx_lazy_ms'))} | {ms(g('rlx_compiled_ms'))} ({ms(g('rlx_compiled_first_ms'))}) "
              f"| {ms(g('torch_eager_ms'))} | {ms(g('torch_compile_ms'))} ({ms(g('torch_compile_first_ms'))}) "
              f"| {ratio(g('rlx_lazy_ms'), g('torch_eager_ms'))} | {ratio(g('rlx_compiled_ms'), g('torch_eager_ms'))} "
              f"| {ratio(g('rlx_compiled_ms'), g('torch_compile_ms'))} | {ms(g('import_ms'))} | {errs} |")
    tol = 1e-2 if tf32 else 1e-4
    bad = [w["model"] for w in rows if any(w.get(k, 0) > tol for k in ("rlx_lazy_err", "rlx_compiled_err", "torch_eager_err"))]
    if bad:
        print(f"\nFAILED: {' '.join(bad)}: an engine's output is off ONNX Runtime's by more than {tol:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
