"""rlx_llm (rlx/llm.h) against an independent numpy forward pass of the Llama-family decoder.

The test writes GGUF files with gguf-py's GGUFWriter (llama.cpp's Python package) from seeded
random weights at several sizes and weight types (F32, F16, Q8_0 through gguf.quants.quantize, a
quantized token_embd, tied and separate output, qwen2's biases and NeoX rope, partial rotary,
linear rope scaling), opens them through librlx (ctypes), runs a prompt (prefill) and then several
one-token decode steps (teacher-forced: the next input is fixed by the test, not the model's
choice) and compares every step's logits with numpy.

The numpy oracle is written here from the formulas, in float64, recomputing the whole sequence
with causal attention (no KV cache): RMSNorm x / sqrt(mean(x^2) + eps) * g (Zhang & Sennrich
2019); RoPE (Su et al. 2021) with theta_i = base^(-2i/n_rot) at position p / scale, rotating
adjacent pairs (x[2i], x[2i+1]) for llama (llama.cpp's normal mode; GGUF's llama Q/K rows are in
that layout) and halves (x[i], x[i + n_rot/2]) for qwen2 (NeoX mode), dims past n_rot unchanged;
grouped-query attention softmax(q k^T / sqrt(D)) v with query head h reading kv head
h // (H / Hkv); SwiGLU (silu(x Wg) * (x Wu)) Wd; a GGUF weight of ggml shape [K, N] is the numpy
[N, K] matrix W and a projection is x W^T. Quantized weights enter the oracle as gguf-py's own
dequantization (gguf.quants.dequantize), F16 as its float16 values.

Tolerance: rlx computes in float32; the oracle in float64. Each logit is a sum over a few hundred
products through 2-3 layers, so float32 rounding (2^-24 relative per operation, growing ~sqrt(n)
with n accumulated terms) leaves errors of order 1e-6 of the logit range; we require the max
abs error over every step's logits to be below 1e-4 of the logit range (100x margin for MLX's
blocked sums and fast rsqrt/exp), and the argmax of every row to agree wherever the oracle's
top-2 margin exceeds that bound.

usage: test_llama.py BUILD_DIR [--device gpu]   (default the CPU; scripts/gpu/llm.sh runs the GPU)"""
import os
import sys
import tempfile

import gguf
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_ref import Q8_ACT_TYPES, forward, write_model  # noqa: E402
from rlx_llm import Rlx, RlxError  # noqa: E402

rlx = Rlx(sys.argv[1])
device = 1 if sys.argv[2:4] == ["--device", "gpu"] else 0  # rlx_device
failures = []

Q = gguf.GGMLQuantizationType


CONFIGS = [
    dict(name="llama-f32", arch="llama", dim=64, heads=4, kv_heads=2, ffn=96, vocab=80, layers=2, ctx=64, eps=1e-5, base=10000.0,
         wtype=Q.F32),
    dict(name="llama-f16-partial-rope-scaled", arch="llama", dim=64, heads=4, kv_heads=4, ffn=128, vocab=100, layers=2, ctx=48, eps=1e-6,
         base=500000.0, n_rot=8, rope_scale=4.0, wtype=Q.F16, embd_type=Q.F16, tied=True),
    dict(name="qwen2-f16-bias-tied", arch="qwen2", dim=96, heads=6, kv_heads=2, ffn=160, vocab=120, layers=3, ctx=64, eps=1e-6,
         base=1000000.0, wtype=Q.F16, bias=True, tied=True),
    dict(name="mistral-q8_0", arch="mistral", dim=128, heads=4, kv_heads=1, ffn=256, vocab=96, layers=2, ctx=64, eps=1e-5, base=10000.0,
         wtype=Q.Q8_0),
    dict(name="llama-q8_0-embd-tied", arch="llama", dim=64, heads=2, kv_heads=1, ffn=128, vocab=64, layers=2, ctx=32, eps=1e-5,
         base=10000.0, wtype=Q.Q8_0, embd_type=Q.Q8_0, tied=True),
]

def check(name, path, V, seq, prompt_len, ref, **options):
    m = rlx.open_model(path, device=device, **options)
    try:
        got, nxt = rlx.step(m, seq[:prompt_len], V)
        if nxt != int(np.argmax(got[prompt_len - 1])):
            failures.append(f"{name}: greedy next {nxt} != argmax of its own logits")
        got = np.concatenate([got] + [rlx.step(m, seq[i:i + 1], V)[0] for i in range(prompt_len, len(seq))])
    finally:
        rlx.close_model(m)
    rng_l = ref.max() - ref.min()
    err = np.abs(got - ref).max(axis=1)
    bound = 1e-4 * rng_l
    srt = np.sort(ref, axis=1)
    margin = srt[:, -1] - srt[:, -2]
    am_bad = [(i, float(margin[i])) for i in range(len(seq)) if margin[i] > bound and got[i].argmax() != ref[i].argmax()]
    print(f"{name}: logit range {rng_l:.3f}, max abs err prefill {err[:prompt_len].max():.2e}, decode "
          f"{err[prompt_len:].max():.2e} (bound {bound:.2e}); argmax disagreements {am_bad}")
    if err.max() > bound:
        failures.append(f"{name}: max abs logit error {err.max():.3e} > {bound:.3e} (rows {np.nonzero(err > bound)[0].tolist()})")
    if am_bad:
        failures.append(f"{name}: argmax differs at {am_bad}")


def check_generate(name, path, V, W, cfg, seq, prompt_len, q8, **options):
    """rlx_llm_generate after the prompt: its greedy ids against the oracle's argmax where the top-2
    margin exceeds the bound; a generation stopped by its callback after one id (the step committed
    behind it is dropped), then a teacher-forced step at the position after that id, whose logits
    must be the oracle's (the dropped step wrote that cache row first); the position; the errors."""
    m = rlx.open_model(path, device=device, **options)
    try:
        rlx.step(m, seq[:prompt_len], V)
        first = int(seq[prompt_len])
        ids = rlx.generate(m, first, 4)
        stopped = rlx.generate(m, ids[-1], 5, stop=lambda i: True)
        x = (stopped[0] + 1) % V
        pos = rlx.position(m)
        got = rlx.step(m, [x], V)[0][0]
        for n, tok, want in ((0, 1, "n 0 < 1"), (1, V, f"token 0 is {V} (vocabulary [0, {V}))"),
                             (rlx.capacity(m), 1, "exceed the cache capacity")):
            try:
                rlx.generate(m, tok, n)
                failures.append(f"{name}: generate({tok}, {n}) did not fail")
            except RlxError as e:
                if want not in str(e):
                    failures.append(f"{name}: generate({tok}, {n}): {e} lacks {want!r}")
    finally:
        rlx.close_model(m)
    inputs = np.array(list(seq[:prompt_len]) + [first] + ids + [x], np.int32)
    ref = forward(W, cfg, inputs, q8_act=q8)
    bound = 1e-4 * (ref.max() - ref.min())
    srt = np.sort(ref, axis=1)
    margin = srt[:, -1] - srt[:, -2]
    chosen = ids + stopped  # the ids chosen after inputs prompt_len .. prompt_len + 4
    bad = [(j, chosen[j], int(ref[prompt_len + j].argmax())) for j in range(len(chosen))
           if margin[prompt_len + j] > bound and chosen[j] != ref[prompt_len + j].argmax()]
    err = float(np.abs(got - ref[-1]).max())
    print(f"{name}: generate {chosen} (oracle disagrees at {bad}); position after the stop {pos}; teacher-forced step after it, "
          f"max abs err {err:.2e} (bound {bound:.2e})")
    if bad:
        failures.append(f"{name}: generated ids differ from the oracle's argmax at {bad}")
    if pos != prompt_len + 5:  # the prompt, then 4 + 1 steps
        failures.append(f"{name}: position {pos} after generate, expected {prompt_len + 5}")
    if err > bound:
        failures.append(f"{name}: logits after a stopped generate off by {err:.3e} > {bound:.3e}")


# Quantized weights of Q8_ACT_TYPES on the CPU: by default rlx rounds x to Q8_0 blocks before those
# projections (rlx/llm.h), so the oracle does too (gguf-py's round trip of its float64 x taken to
# float32); with float_activations the exact oracle. Both under the same bound: rlx's float32 x may
# round a value lying within float32 rounding of a tie to the other code, but over these few
# thousand values per step the chance of one is about 1e-3.
with tempfile.TemporaryDirectory() as tmp:
    for ci, cfg in enumerate(CONFIGS):
        rng = np.random.default_rng(1000 + ci)
        path = os.path.join(tmp, cfg["name"] + ".gguf")
        W = write_model(path, cfg, rng)
        V = cfg["vocab"]
        prompt_len, n_decode = 7, 6
        seq = rng.integers(0, V, prompt_len + n_decode).astype(np.int32)
        q8 = device == 0 and (cfg["wtype"] in Q8_ACT_TYPES or cfg.get("embd_type") in Q8_ACT_TYPES)
        check(cfg["name"] + (" (x rounded to Q8_0)" if q8 else ""), path, V, seq, prompt_len, forward(W, cfg, seq, q8_act=q8))
        check_generate(cfg["name"], path, V, W, cfg, seq, prompt_len, q8)
        if q8:
            check(cfg["name"] + " (float_activations)", path, V, seq, prompt_len, forward(W, cfg, seq), float_activations=True)


def open_fails(path, want, what):
    """rlx_llm_open of a hostile file: a status whose "CODE: message" holds `want`."""
    try:
        rlx.close_model(rlx.open_model(path, device=device))
    except RlxError as e:
        msg = str(e).split(": ", 1)[1]  # less the "open PATH" prefix
        print(f"{what}: {msg}")
        if want not in msg:
            failures.append(f"{what}: {msg!r} lacks {want!r}")
        return
    failures.append(f"{what}: opened")


def header(path, E, H, key_length, extra=()):
    """A llama header (one layer) with key_length stored as uint64, and the tensors `extra`."""
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1); w.add_embedding_length(E); w.add_feed_forward_length(4); w.add_head_count(H)
    w.add_uint64("llama.attention.key_length", key_length)
    for name, a, qt in extra:
        w.add_tensor(name, a, raw_dtype=qt) if qt else w.add_tensor(name, a)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


# Hostile headers (fuzz_gguf's territory): key_length sizes the rotary tables and the cache, so it is
# checked against layer 0's query projection first (2^62 overflowed head_count * key_length; 2^20
# asked for gigabytes of tables from a 1 KB file).
with tempfile.TemporaryDirectory() as tmp:
    rng = np.random.default_rng(7)
    q = [("blk.0.attn_q.weight", rng.standard_normal((16, 8)).astype(np.float32), None)]
    for kl in (2**62, 2**20):
        path = os.path.join(tmp, f"kl{kl}.gguf")
        header(path, 8, 2, kl, q + [("token_embd.weight", rng.standard_normal((4, 8)).astype(np.float32), None)])
        open_fails(path, "blk.0.attn_q.weight: ggml shape [8, 16]", f"key_length {kl}")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
