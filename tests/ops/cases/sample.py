"""Sample against its definition (numpy): the frequencies of many draws (one call, a batch of
identical rows) must match the filtered, renormalized softmax within 5 binomial standard errors
per token, and tokens that temperature/top-k/top-p exclude must never appear (an exact count).
Also: the same seed gives the same tokens, different seeds (and the global key, seed 0, drawn
twice) give independent draws, temperature 0 and top_k 1 are greedy (exact argmax), edge shapes
(rank 1, rank 3, a Transpose feeding the op) and bad attributes."""
import numpy as np

from opcase import DT, IS, Case, F, I, S, node

rng = np.random.default_rng(99)
B = 20000  # draws per distribution case
Z = 5.0    # tolerance band, in binomial standard errors


def expected_probs(logits, temperature=1.0, top_k=0, top_p=1.0):
    """The distribution Sample draws from: softmax(logits / T) restricted to the k largest logits,
    then to the smallest most-probable set whose mass reaches top_p, renormalized."""
    z = logits.astype(np.float64) / temperature
    if 0 < top_k < len(z):
        z = np.where(z >= np.sort(z)[-top_k], z, -np.inf)
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1:
        order = np.argsort(-p, kind="stable")
        csum = np.cumsum(p[order])
        m = int(np.searchsorted(csum, top_p)) + 1
        assert min(abs(csum - top_p)) > 0.01, "top_p too close to a cumulative boundary for a stable test"
        keep = np.zeros(len(p), bool)
        keep[order[:m]] = True
        p = np.where(keep, p, 0.0)
        p /= p.sum()
    return p


def draw_nodes(attrs, v, cast_to=None):
    """[Cast the logits,] expand the row to [B, V] and sample: -> 'tok' [B]."""
    pre = [node("Cast", ["l"], ["lc"], to=DT(cast_to))] if cast_to else []
    return pre + [node("Expand", ["lc" if cast_to else "l"], ["lb"], shape=IS([B, v])), node("Sample", ["lb"], ["tok"], **attrs)]


def dist_case(name, logits, probs, dtype=np.float32, cast_to=None, **attrs):
    v = len(logits)
    excluded = (probs == 0).astype(np.float64)
    sd = np.sqrt(B * probs * (1 - probs))
    nodes = draw_nodes(attrs, v, cast_to) + [
        node("Reshape", ["tok"], ["col"], shape=IS([B, 1])),
        node("Equal", ["col", "ids"], ["hit"]),
        node("Cast", ["hit"], ["hitf"], to=DT("float64")),
        node("Reduce", ["hitf"], ["counts"], kind=S("sum"), axes=IS([0])),
        node("Sub", ["counts", "mean"], ["dev"]),
        node("Div", ["dev", "sd"], ["z"]),
        node("Mul", ["counts", "excluded"], ["exc"]),
        node("Reduce", ["exc"], ["excs"], kind=S("sum")),
        node("Cast", ["excs"], ["excluded_hits"], to=DT("int64")),
    ]
    consts = {"ids": np.arange(v, dtype=np.int64)[None, :], "mean": B * probs, "sd": np.where(sd > 0, sd, 1.0),
              "excluded": excluded}
    return Case(name, nodes, {"l": logits.astype(dtype)[None, :]}, {"z": np.zeros(v), "excluded_hits": np.int64(0)},
                atol=Z, rtol=0, constants=consts)


def differ_case(name, logits, seed_a, seed_b):
    """Two draws of B tokens with seeds a and b: they differ at a binomial count with
    q = 1 - sum p^2 per position (independent draws), checked as a z-score."""
    v = len(logits)
    p = expected_probs(logits)
    q = 1 - np.sum(p ** 2)
    nodes = [node("Expand", ["l"], ["lb"], shape=IS([B, v])),
             node("Sample", ["lb"], ["a"], seed=I(seed_a)), node("Sample", ["lb"], ["b"], seed=I(seed_b)),
             node("NotEqual", ["a", "b"], ["ne"]), node("Cast", ["ne"], ["nef"], to=DT("float64")),
             node("Reduce", ["nef"], ["cnt"], kind=S("sum")), node("Sub", ["cnt", "mean"], ["dev"]),
             node("Div", ["dev", "sd"], ["z"])]
    consts = {"mean": np.float64(B * q), "sd": np.float64(np.sqrt(B * q * (1 - q)))}
    return Case(name, nodes, {"l": logits.astype(np.float32)[None, :]}, {"z": np.float64(0)}, atol=Z, rtol=0, constants=consts)


def cases():
    logits = np.array([2.0, 1.0, 0.5, 0.0, -0.5, -1.5])
    yield dist_case("Sample_plain", logits, expected_probs(logits), seed=I(11))
    for t in (0.5, 2.0):
        yield dist_case(f"Sample_temperature_{t}", logits, expected_probs(logits, temperature=t), temperature=F(t), seed=I(12))
    yield dist_case("Sample_top_k3", logits, expected_probs(logits, top_k=3), top_k=I(3), seed=I(13))
    yield dist_case("Sample_top_k_above_V", logits, expected_probs(logits), top_k=I(50), seed=I(14))
    yield dist_case("Sample_top_p0.7", logits, expected_probs(logits, top_p=0.7), top_p=F(0.7), seed=I(15))
    yield dist_case("Sample_top_p0.95", logits, expected_probs(logits, top_p=0.95), top_p=F(0.95), seed=I(16))
    yield dist_case("Sample_all_filters", logits, expected_probs(logits, temperature=0.7, top_k=4, top_p=0.8),
                    temperature=F(0.7), top_k=I(4), top_p=F(0.8), seed=I(17))
    yield dist_case("Sample_global_key", logits, expected_probs(logits, top_k=5), top_k=I(5))
    flat = np.array([0.3, 0.3, 0.3, 0.3, -2.0])
    yield dist_case("Sample_ties_top_k2", flat, expected_probs(flat, top_k=2), top_k=I(2), seed=I(18))
    yield dist_case("Sample_f16", logits, expected_probs(logits.astype(np.float16)), dtype=np.float16, seed=I(19))
    bf = (logits.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)  # exact bfloat16 values
    yield dist_case("Sample_bf16", bf, expected_probs(bf, top_k=4), cast_to="bfloat16", top_k=I(4), seed=I(21))
    yield dist_case("Sample_f64", logits, expected_probs(logits, top_p=0.7), dtype=np.float64, top_p=F(0.7), seed=I(20))
    # the same seed gives the same tokens; different seeds and the global key draw independently
    v = len(logits)
    same = [node("Expand", ["l"], ["lb"], shape=IS([B, v])), node("Sample", ["lb"], ["a"], seed=I(42)),
            node("Sample", ["lb"], ["b"], seed=I(42)), node("Equal", ["a", "b"], ["eq"])]
    yield Case("Sample_same_seed_same_tokens", same, {"l": logits.astype(np.float32)[None, :]}, {"eq": np.ones(B, bool)})
    yield differ_case("Sample_different_seeds_differ", logits, 42, 43)
    yield differ_case("Sample_global_key_advances", logits, 0, 0)
    # greedy: temperature 0, top_k 1 and a tiny top_p return the argmax exactly
    x = rng.standard_normal((2, 3, 11)).astype(np.float32)
    am = np.argmax(x, axis=-1).astype(np.int64)
    yield Case("Sample_temperature0_rank3", [node("Sample", ["x"], ["y"], temperature=F(0))], {"x": x}, {"y": am})
    yield Case("Sample_top_k1_rank3", [node("Sample", ["x"], ["y"], top_k=I(1), seed=I(3))], {"x": x}, {"y": am})
    yield Case("Sample_top_p_tiny", [node("Sample", ["x"], ["y"], top_p=F(1e-6), seed=I(4))], {"x": x}, {"y": am})
    x1 = rng.standard_normal((9,)).astype(np.float32)
    yield Case("Sample_rank1_scalar_out", [node("Sample", ["x"], ["y"], top_k=I(1))], {"x": x1}, {"y": np.int64(np.argmax(x1))})
    yield Case("Sample_V1", [node("Sample", ["x"], ["y"], seed=I(5))], {"x": np.zeros((4, 1), np.float32)}, {"y": np.zeros(4, np.int64)})
    yield Case("Sample_empty_batch", [node("Sample", ["x"], ["y"], seed=I(6))], {"x": np.zeros((0, 3), np.float32)},
               {"y": np.zeros(0, np.int64)})
    xt = rng.standard_normal((7, 5)).astype(np.float32)  # [V, rows], transposed in the graph
    yield Case("Sample_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Sample", ["t"], ["y"], top_k=I(1))],
               {"x": xt}, {"y": np.argmax(xt.T, axis=-1).astype(np.int64)})
    # errors
    z = np.zeros((2, 4), np.float32)
    for name, x, attrs in [("negative_temperature", z, {"temperature": F(-1)}), ("top_p0", z, {"top_p": F(0)}),
                           ("top_p_above1", z, {"top_p": F(1.5)}), ("negative_top_k", z, {"top_k": I(-1)}),
                           ("int_logits", z.astype(np.int32), {}), ("rank0", np.float32(1), {}),
                           ("empty_vocab", np.zeros((2, 0), np.float32), {})]:
        yield Case(f"Sample_{name}", [node("Sample", ["x"], ["y"], **attrs)], {"x": x}, {}, expect_error="INVALID_ARGUMENT",
                   modes=["lazy"])
