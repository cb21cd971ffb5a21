"""rlx_tokenizer (rlx/llm.h, tokenizer.ggml.model "llama") against Google's SentencePiece (PyPI
sentencepiece) on the same vocabulary.

The test builds a scored vocabulary (llama_ref.spm_vocab: control tokens, the 256 byte tokens
"<0xXX>", most single characters of a multilingual sample (some left out so that byte fallback is
exercised) and frequent substrings with distinct scores), writes it into a GGUF file with gguf-py's GGUFWriter
(tokenizer.ggml.tokens / scores / token_type), and the same pieces into a SentencePiece BPE
ModelProto (byte_fallback, identity normalization, dummy prefix, whitespace escaped as U+2581:
the conventions llama.cpp's SPM tokenizer follows). Every line of the sample and the whole text
must encode to the same ids through librlx (ctypes) and through sentencepiece, and the ids must
decode back to the text (rlx_tokenizer_piece concatenated, the prepended space dropped).

usage: test_tokenizer.py BUILD_DIR"""
import os
import ctypes
import random
import sys
import tempfile

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_ref import EXTRA_TEXTS, SAMPLE, add_vocab, sentencepiece_for, spm_vocab  # noqa: E402
from rlx_llm import Rlx, RlxError  # noqa: E402

rlx = Rlx(sys.argv[1])

rng = random.Random(7)
piece_list, scores, types = spm_vocab(rng)
pieces = list(zip(piece_list, types))

failures = []
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "tok.gguf")
    w = gguf.GGUFWriter(path, "llama")
    add_vocab(w, [p for p, _ in pieces], scores, [t for _, t in pieces])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    sp = sentencepiece_for([p for p, _ in pieces], scores, [t for _, t in pieces])

    tok = rlx.open_tokenizer(path)
    try:
        n_fallback = 0
        for text in SAMPLE.split("\n") + [SAMPLE] + EXTRA_TEXTS:
            raw = text.encode()
            try:
                got = rlx.encode(tok, raw)
            except RlxError as e:
                failures.append(str(e))
                continue
            ref = sp.encode(text)
            n_fallback += sum(1 for i in ref if 3 <= i < 259)
            if got != ref:
                failures.append(f"encode {text!r}:\n  rlx {got}\n  sentencepiece {ref}")
            out = b"".join(rlx.piece(tok, i) for i in got)
            if out.startswith(b" "):
                out = out[1:]
            if out != raw:
                failures.append(f"decode {text!r}: got {out!r}")
        # BOS and a buffer too small: OUT_OF_RANGE with the count needed
        raw = b"hello"
        ids = (ctypes.c_int32 * 1)()
        n = ctypes.c_size_t()
        st = rlx.lib.rlx_tokenizer_encode(tok, raw, len(raw), True, ids, 1, ctypes.byref(n))
        if not st or n.value != len(sp.encode("hello")) + 1:
            failures.append(f"a 1-token buffer: expected OUT_OF_RANGE needing {len(sp.encode('hello')) + 1}, got n {n.value}")
        if st:
            rlx.lib.rlx_status_free(st)
        print(f"{len(pieces)} pieces, {len(SAMPLE.split(chr(10))) + 1 + len(EXTRA_TEXTS)} texts, {n_fallback} byte-fallback tokens")
        if n_fallback == 0:
            failures.append("the sample never used byte fallback")
    finally:
        rlx.close_tokenizer(tok)

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
