"""librlx's rlx/llm.h through ctypes, for the GGUF tests: models (open, step, close) and tokenizers
(open, encode, piece, close). Failed calls raise RlxError with rlx's message."""
import ctypes
import os
import statistics
import time

import numpy as np

vp = ctypes.c_void_p
i32p = ctypes.POINTER(ctypes.c_int32)
f32p = ctypes.POINTER(ctypes.c_float)
TOKEN_FN = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_int32, ctypes.c_void_p)  # rlx_llm_generate's on_token


class RlxError(RuntimeError):
    pass


class Options(ctypes.Structure):  # rlx_llm_options
    _fields_ = [("device", ctypes.c_int), ("mode", ctypes.c_int), ("capacity", ctypes.c_int64), ("temperature", ctypes.c_double),
                ("top_k", ctypes.c_int64), ("top_p", ctypes.c_double), ("seed", ctypes.c_uint64), ("float_activations", ctypes.c_bool)]


class Rlx:
    def __init__(self, build):
        lib = self.lib = ctypes.CDLL(os.path.join(build, "librlx.so"))
        lib.rlx_status_message.restype = ctypes.c_char_p
        lib.rlx_status_message.argtypes = [vp]
        lib.rlx_status_free.argtypes = [vp]
        lib.rlx_status_code_of.argtypes = [vp]
        lib.rlx_status_code_name.restype = ctypes.c_char_p
        lib.rlx_status_code_name.argtypes = [ctypes.c_int]
        lib.rlx_llm_open.restype = vp
        lib.rlx_llm_open.argtypes = [ctypes.c_char_p, vp, ctypes.POINTER(vp)]
        lib.rlx_llm_close.argtypes = [vp]
        lib.rlx_llm_reset.argtypes = [vp]
        lib.rlx_llm_step.restype = vp
        lib.rlx_llm_step.argtypes = [vp, i32p, ctypes.c_int64, f32p, i32p]
        lib.rlx_llm_position.restype = ctypes.c_int64
        lib.rlx_llm_position.argtypes = [vp]
        lib.rlx_llm_capacity.restype = ctypes.c_int64
        lib.rlx_llm_capacity.argtypes = [vp]
        lib.rlx_llm_generate.restype = vp
        lib.rlx_llm_generate.argtypes = [vp, ctypes.c_int32, ctypes.c_int64, TOKEN_FN, vp, ctypes.POINTER(ctypes.c_int64)]
        lib.rlx_tokenizer_open.restype = vp
        lib.rlx_tokenizer_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
        lib.rlx_tokenizer_close.argtypes = [vp]
        lib.rlx_tokenizer_encode.restype = vp
        lib.rlx_tokenizer_encode.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, i32p, ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_size_t)]
        lib.rlx_tokenizer_piece.restype = ctypes.c_size_t
        lib.rlx_tokenizer_piece.argtypes = [vp, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t]

    def check(self, st, what):
        """Raises RlxError("what: CODE: message") for a failed status (and frees it)."""
        if st:
            msg = self.lib.rlx_status_code_name(self.lib.rlx_status_code_of(st)).decode() + ": " + self.lib.rlx_status_message(st).decode()
            self.lib.rlx_status_free(st)
            raise RlxError(f"{what}: {msg}")

    def open_model(self, path, **options):
        m = vp()
        self.check(self.lib.rlx_llm_open(path.encode(), ctypes.byref(Options(**options)), ctypes.byref(m)), "open " + path)
        return m

    def close_model(self, m):
        self.lib.rlx_llm_close(m)

    def reset(self, m):
        self.lib.rlx_llm_reset(m)

    def step(self, m, ids, vocab):
        """Runs ids at the next positions; returns (logits [len(ids), vocab], the sampled next)."""
        ids = np.ascontiguousarray(ids, np.int32)
        logits = np.zeros((len(ids), vocab), np.float32)
        nxt = ctypes.c_int32()
        self.check(self.lib.rlx_llm_step(m, ids.ctypes.data_as(i32p), len(ids), logits.ctypes.data_as(f32p), ctypes.byref(nxt)),
                   f"step of {len(ids)} tokens")
        return logits, nxt.value

    def next_token(self, m, ids):
        """Runs ids at the next positions and returns only the sampled next id (no logits read back)."""
        ids = np.ascontiguousarray(ids, np.int32)
        nxt = ctypes.c_int32()
        self.check(self.lib.rlx_llm_step(m, ids.ctypes.data_as(i32p), len(ids), None, ctypes.byref(nxt)), f"step of {len(ids)} tokens")
        return nxt.value

    def position(self, m):
        return self.lib.rlx_llm_position(m)

    def capacity(self, m):
        return self.lib.rlx_llm_capacity(m)

    def generate(self, m, token, n, stop=None):
        """rlx_llm_generate: up to n pipelined steps from token; the ids chosen (until stop(id) is true,
        that id included)."""
        ids = []

        def on_token(i, user):
            ids.append(i)
            return not (stop and stop(i))

        fn = TOKEN_FN(on_token)
        self.check(self.lib.rlx_llm_generate(m, token, n, fn, None, None), f"generate {n} tokens")
        return ids

    def time_generation(self, m, prompt, gen, reps, warmup=True):
        """(prefill tokens/s, decode tokens/s): reps runs of the prompt as one step then gen greedy
        one-token steps (rlx_llm_generate), from a reset model, after one untimed run when warmup (compiled mode traces
        there); the medians."""
        pp, tg = [], []
        for r in range(reps + 1 if warmup else reps):
            self.reset(m)
            t0 = time.perf_counter()
            t = self.next_token(m, prompt)
            t1 = time.perf_counter()
            self.generate(m, t, gen)
            t2 = time.perf_counter()
            if r or not warmup:
                pp.append(len(prompt) / (t1 - t0))
                tg.append(gen / (t2 - t1))
        return statistics.median(pp), statistics.median(tg)

    def open_tokenizer(self, path):
        t = vp()
        self.check(self.lib.rlx_tokenizer_open(path.encode(), ctypes.byref(t)), "tokenizer " + path)
        return t

    def close_tokenizer(self, t):
        self.lib.rlx_tokenizer_close(t)

    def encode(self, t, raw, add_bos=False, cap=None):
        """The ids of the bytes raw (cap: the room given; OUT_OF_RANGE raises)."""
        cap = 4 * len(raw) + 4 if cap is None else cap
        ids = (ctypes.c_int32 * max(cap, 1))()
        n = ctypes.c_size_t()
        self.check(self.lib.rlx_tokenizer_encode(t, raw, len(raw), add_bos, ids, cap, ctypes.byref(n)), f"encode {raw[:40]!r}")
        return list(ids[: n.value])

    def piece(self, t, i):
        buf = ctypes.create_string_buffer(256)
        k = self.lib.rlx_tokenizer_piece(t, i, buf, 256)
        return buf.raw[:k]
