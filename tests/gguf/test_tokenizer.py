"""rlx_tokenizer (rlx/llm.h, tokenizer.ggml.model "llama") against Google's SentencePiece (PyPI
sentencepiece) on the same vocabulary.

The test builds a scored vocabulary (control tokens, the 256 byte tokens "<0xXX>", most single
characters of a multilingual sample (some left out so that byte fallback is exercised) and
frequent substrings with distinct scores), writes it into a GGUF file with gguf-py's GGUFWriter
(tokenizer.ggml.tokens / scores / token_type), and the same pieces into a SentencePiece BPE
ModelProto (byte_fallback, identity normalization, dummy prefix, whitespace escaped as U+2581:
the conventions llama.cpp's SPM tokenizer follows). Every line of the sample and the whole text
must encode to the same ids through librlx (ctypes) and through sentencepiece, and the ids must
decode back to the text (rlx_tokenizer_piece concatenated, the prepended space dropped).

usage: test_tokenizer.py BUILD_DIR"""
import collections
import ctypes
import os
import random
import sys
import tempfile

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_ref import add_vocab, sentencepiece_for  # noqa: E402

build = sys.argv[1]
lib = ctypes.CDLL(os.path.join(build, "librlx.so"))
vp = ctypes.c_void_p
lib.rlx_status_message.restype = ctypes.c_char_p
lib.rlx_status_message.argtypes = [vp]
lib.rlx_status_free.argtypes = [vp]
lib.rlx_tokenizer_open.restype = vp
lib.rlx_tokenizer_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
lib.rlx_tokenizer_close.argtypes = [vp]
lib.rlx_tokenizer_encode.restype = vp
lib.rlx_tokenizer_encode.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t,
                                     ctypes.POINTER(ctypes.c_size_t)]
lib.rlx_tokenizer_piece.restype = ctypes.c_size_t
lib.rlx_tokenizer_piece.argtypes = [vp, ctypes.c_int32, ctypes.c_char_p, ctypes.c_size_t]

SAMPLE = """The quick brown fox jumps over the lazy dog, twice: 1234 and 56.78!
Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.
Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis.
Съешь же ещё этих мягких французских булок, да выпей чаю.
Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.
我能吞下玻璃而不伤身体。  日本語のテキストも、ひらがなとカタカナ。
صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت
Emoji 🙂🚀 and symbols ∑ ≤ ∞, tabs\tand   spaces."""

rng = random.Random(7)
W = "\u2581"
norm = W + SAMPLE.replace(" ", W)
chars = sorted(set(norm) - {"\n"})
dropped = set(rng.sample(chars, 12)) | {"🚀", "∞"}  # spelled with byte tokens
counts = collections.Counter(norm[i:i + n] for n in range(2, 6) for i in range(len(norm) - n + 1) if "\n" not in norm[i:i + n])
subs = [s for s, c in counts.most_common() if c >= 2][:400] + [s for s, c in counts.most_common() if c == 1][:200]

pieces = [("<unk>", 2), ("<s>", 3), ("</s>", 3)] + [(f"<0x{b:02X}>", 6) for b in range(256)]
pieces += [(c, 1) for c in chars if c not in dropped] + [(s, 1) for s in subs]
scores = [0.0] * (3 + 256) + [-float(i) - rng.random() * 0.5 for i in range(len(pieces) - 259)]
tail = scores[259:]
rng.shuffle(tail)  # merge order unrelated to frequency; distinct values
scores[259:] = tail

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

    tok = vp()
    st = lib.rlx_tokenizer_open(path.encode(), ctypes.byref(tok))
    if st:
        sys.exit("open: " + lib.rlx_status_message(st).decode())
    try:
        n_fallback = 0
        for text in SAMPLE.split("\n") + [SAMPLE, "", " leading and trailing "]:
            raw = text.encode()
            ids = (ctypes.c_int32 * (4 * len(raw) + 4))()
            n = ctypes.c_size_t()
            st = lib.rlx_tokenizer_encode(tok, raw, len(raw), False, ids, len(ids), ctypes.byref(n))
            if st:
                failures.append(f"encode {text!r}: {lib.rlx_status_message(st).decode()}")
                lib.rlx_status_free(st)
                continue
            got = list(ids[: n.value])
            ref = sp.encode(text)
            n_fallback += sum(1 for i in ref if 3 <= i < 259)
            if got != ref:
                failures.append(f"encode {text!r}:\n  rlx {got}\n  sentencepiece {ref}")
            buf = ctypes.create_string_buffer(64)
            out = b""
            for i in got:
                k = lib.rlx_tokenizer_piece(tok, i, buf, 64)
                out += buf.raw[:k]
            if out.startswith(b" "):
                out = out[1:]
            if out != raw:
                failures.append(f"decode {text!r}: got {out!r}")
        # BOS and a buffer too small
        raw = b"hello"
        ids = (ctypes.c_int32 * 1)()
        n = ctypes.c_size_t()
        st = lib.rlx_tokenizer_encode(tok, raw, len(raw), True, ids, 1, ctypes.byref(n))
        if not st or n.value != len(sp.encode("hello")) + 1:
            failures.append(f"a 1-token buffer: expected OUT_OF_RANGE needing {len(sp.encode('hello')) + 1}, got n {n.value}")
        if st:
            lib.rlx_status_free(st)
        print(f"{len(pieces)} pieces, {len(SAMPLE.split(chr(10))) + 3} texts, {n_fallback} byte-fallback tokens")
        if n_fallback == 0:
            failures.append("the sample never used byte fallback")
    finally:
        lib.rlx_tokenizer_close(tok)

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("ok")
