"""The Llama-family decoder written from its formulas for the GGUF tests (test_llama.py,
test_generate.py): GGUF files with seeded weights (gguf-py's GGUFWriter) and a float64 numpy
forward pass. See test_llama.py for the formulas and the layout conventions."""
import collections

import gguf
import numpy as np

Q = gguf.GGMLQuantizationType


def write_model(path, cfg, rng, vocab=None):
    """Writes a GGUF file (with vocab = (pieces, scores, types) as a "llama" tokenizer, or a
    function adding the vocabulary to the GGUFWriter); returns the weights as the oracle sees
    them (float64)."""
    arch = cfg["arch"]
    E, H, Hkv, F, V, L = cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["ffn"], cfg["vocab"], cfg["layers"]
    D = E // H
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(L)
    w.add_context_length(cfg["ctx"])
    w.add_embedding_length(E)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(Hkv)
    w.add_layer_norm_rms_eps(cfg["eps"])
    w.add_rope_freq_base(cfg["base"])
    if cfg.get("n_rot"):
        w.add_rope_dimension_count(cfg["n_rot"])
    if cfg.get("rope_scale"):
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(cfg["rope_scale"])
    seen = {}

    def put(name, a, qtype):
        a = a.astype(np.float32)
        if qtype == Q.F32:
            w.add_tensor(name, a)
            seen[name] = a.astype(np.float64)
        elif qtype == Q.F16:
            h = a.astype(np.float16)
            w.add_tensor(name, h)
            seen[name] = h.astype(np.float64)
        else:
            q = gguf.quants.quantize(a, qtype)
            w.add_tensor(name, q, raw_dtype=qtype)
            seen[name] = gguf.quants.dequantize(q, qtype).astype(np.float64).reshape(a.shape)

    mt, et = cfg["wtype"], cfg.get("embd_type", Q.F32)
    put("token_embd.weight", rng.standard_normal((V, E)), et)
    for l in range(L):
        p = f"blk.{l}."
        put(p + "attn_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
        put(p + "attn_q.weight", rng.standard_normal((H * D, E)) / np.sqrt(E), mt)
        put(p + "attn_k.weight", rng.standard_normal((Hkv * D, E)) / np.sqrt(E), mt)
        put(p + "attn_v.weight", rng.standard_normal((Hkv * D, E)) / np.sqrt(E), mt)
        if cfg.get("bias"):
            for n, rows in (("attn_q", H * D), ("attn_k", Hkv * D), ("attn_v", Hkv * D)):
                put(p + n + ".bias", 0.1 * rng.standard_normal(rows), Q.F32)
        put(p + "attn_output.weight", rng.standard_normal((E, H * D)) / np.sqrt(H * D), mt)
        put(p + "ffn_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
        put(p + "ffn_gate.weight", rng.standard_normal((F, E)) / np.sqrt(E), mt)
        put(p + "ffn_up.weight", rng.standard_normal((F, E)) / np.sqrt(E), mt)
        put(p + "ffn_down.weight", rng.standard_normal((E, F)) / np.sqrt(F), mt)
    put("output_norm.weight", 1 + 0.1 * rng.standard_normal(E), Q.F32)
    if not cfg.get("tied"):
        put("output.weight", 2 * rng.standard_normal((V, E)) / np.sqrt(E), mt)
    if callable(vocab):
        vocab(w)
    elif vocab:
        add_vocab(w, *vocab)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return seen


def rms(x, g, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * g


def rope(x, nh, D, n_rot, base, scale, neox):
    """x [S, nh*D] -> rotated, positions 0..S-1."""
    S = x.shape[0]
    x = x.reshape(S, nh, D).copy()
    i = np.arange(n_rot // 2)
    ang = (np.arange(S)[:, None] / scale) * base ** (-2.0 * i / n_rot)  # [S, n_rot/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if neox:
        a, b = x[..., : n_rot // 2].copy(), x[..., n_rot // 2: n_rot].copy()
        x[..., : n_rot // 2], x[..., n_rot // 2: n_rot] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., 0:n_rot:2].copy(), x[..., 1:n_rot:2].copy()
        x[..., 0:n_rot:2], x[..., 1:n_rot:2] = a * c - b * s, b * c + a * s
    return x.reshape(S, nh * D)


# The weight types whose projections take x rounded to Q8_0 blocks with rlx_llm's default options
# on the CPU (rlx/llm.h: float_activations false).
Q8_ACT_TYPES = (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K)


def q8_round(x):
    """x rounded to Q8_0 blocks of 32 along its last axis by gguf-py (quantize, then dequantize)."""
    x32 = x.astype(np.float32)
    return gguf.quants.dequantize(gguf.quants.quantize(x32, Q.Q8_0), Q.Q8_0).astype(np.float64).reshape(x.shape)


def forward(W, cfg, tokens, q8_act=False):
    """Logits [S, V]; q8_act: the projections whose weights have a type of Q8_ACT_TYPES take x
    rounded by q8_round first (llama.cpp's CPU matmuls and rlx_llm's default on the CPU)."""
    mt, et = cfg["wtype"], cfg.get("embd_type", Q.F32)

    def lin(x, name, qt=mt):
        return (q8_round(x) if q8_act and qt in Q8_ACT_TYPES else x) @ W[name].T

    E, H, Hkv, L = cfg["dim"], cfg["heads"], cfg["kv_heads"], cfg["layers"]
    D = E // H
    n_rot, neox = cfg.get("n_rot") or D, cfg["arch"] == "qwen2"
    S = len(tokens)
    h = W["token_embd.weight"][tokens]
    mask = np.triu(np.full((S, S), -np.inf), 1)
    for l in range(L):
        p = f"blk.{l}."
        x = rms(h, W[p + "attn_norm.weight"], cfg["eps"])
        q, k, v = (lin(x, p + n + ".weight") + W.get(p + n + ".bias", 0) for n in ("attn_q", "attn_k", "attn_v"))
        q = rope(q, H, D, n_rot, cfg["base"], cfg.get("rope_scale", 1), neox)
        k = rope(k, Hkv, D, n_rot, cfg["base"], cfg.get("rope_scale", 1), neox)
        out = np.zeros((S, H * D))
        for hh in range(H):
            g = hh // (H // Hkv)
            sc = q[:, hh * D:(hh + 1) * D] @ k[:, g * D:(g + 1) * D].T / np.sqrt(D) + mask
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            pr /= pr.sum(-1, keepdims=True)
            out[:, hh * D:(hh + 1) * D] = pr @ v[:, g * D:(g + 1) * D]
        h = h + lin(out, p + "attn_output.weight")
        x = rms(h, W[p + "ffn_norm.weight"], cfg["eps"])
        gt, up = lin(x, p + "ffn_gate.weight"), lin(x, p + "ffn_up.weight")
        h = h + lin(gt / (1 + np.exp(-gt)) * up, p + "ffn_down.weight")
    h = rms(h, W["output_norm.weight"], cfg["eps"])
    return lin(h, "output.weight") if "output.weight" in W else lin(h, "token_embd.weight", et)




SAMPLE = """The quick brown fox jumps over the lazy dog, twice: 1234 and 56.78!
Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.
Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis.
Съешь же ещё этих мягких французских булок, да выпей чаю.
Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.
我能吞下玻璃而不伤身体。  日本語のテキストも、ひらがなとカタカナ。
صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت
Emoji 🙂🚀 and symbols ∑ ≤ ∞, tabs\tand   spaces."""
"""A multilingual text sample for the tokenizer tests."""

EXTRA_TEXTS = ["", " leading and trailing ", "I'm sure they'll say WE'RE done, it's 12345678 o'clock", "lines\n\n  indented\n\tand\r\nCRLF",
               "a  b   c    d ", "x" * 40]


def spm_vocab(rng):
    """A scored "llama" vocabulary for SAMPLE: control tokens, the 256 byte tokens "<0xXX>", most
    single characters of the sample (some left out so that byte fallback is exercised) and
    frequent substrings with distinct scores in an order unrelated to frequency."""
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
    return [p for p, _ in pieces], scores, [t for _, t in pieces]


def byte_chars():
    """GPT-2's bytes_to_unicode (Radford et al. 2019, encoder.py): byte -> printable character."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    return {b: chr(b if b in keep else next(extra)) for b in range(256)}


def gpt2_vocab(n_merges=300):
    """A byte-level BPE vocabulary trained here on SAMPLE (GPT-2's recipe: words split at spaces
    with the space kept in front, bytes as GPT-2 characters, the most frequent adjacent pair merged
    n_merges times, ties broken by the pair's text): tokens = control "<|endoftext|>" (id 0), the
    256 byte characters, then each merge's result; merges as "left right" strings by rank."""
    bc = byte_chars()
    words = collections.Counter()
    for line in (SAMPLE + "\n" + "\n".join(EXTRA_TEXTS)).split("\n"):
        for i, word in enumerate(line.split(" ")):
            words[tuple(bc[b] for b in ((" " if i else "") + word).encode())] += 1
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for word, c in words.items():
            for a, b in zip(word, word[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        merged = collections.Counter()
        for word, c in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += c
        words = merged
    tokens = ["<|endoftext|>"] + [bc[b] for b in range(256)] + [a + b for a, b in merges]
    types = [3] + [1] * (len(tokens) - 1)
    return tokens, types, [f"{a} {b}" for a, b in merges]


def add_gpt2_vocab(w, tokens, types, merges, pre):
    """Adds a "gpt2" (byte-level BPE) vocabulary with pre-tokenizer `pre` to the GGUFWriter w;
    <|endoftext|> (id 0) is BOS and EOS."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(0)
    w.add_eos_token_id(0)


def add_vocab(w, pieces, scores, types):
    """Adds a "llama" (SentencePiece-style) vocabulary to the GGUFWriter w; unk/bos/eos 0/1/2."""
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)


def sentencepiece_for(pieces, scores, types):
    """Google's SentencePiece (PyPI sentencepiece) as a BPE model over the same scored pieces,
    with the conventions of llama.cpp's SPM tokenizer: byte fallback, identity normalization, a
    dummy prefix, whitespace escaped as U+2581; unk/bos/eos ids 0/1/2."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as spmodel
    m = spmodel.ModelProto()
    m.trainer_spec.model_type = spmodel.TrainerSpec.BPE
    m.trainer_spec.byte_fallback = True
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id = 0, 1, 2, -1
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.remove_extra_whitespaces = False
    m.normalizer_spec.escape_whitespaces = True
    for p, s, t in zip(pieces, scores, types):
        sp_piece = m.pieces.add()
        sp_piece.piece, sp_piece.score, sp_piece.type = p, s, t
    return spm.SentencePieceProcessor(model_proto=m.SerializeToString())
