"""Llada2GroupLimitedGate (the group-limited MoE router of LLaDA2 / Ling 2.0 and DeepSeek-V3,
DeepSeek-V3 technical report 2.1.2) against a numpy reference written from the formulas: sigmoid
or softmax scores, bias added for the choice only, groups scored by their two largest biased
scores, the best topk_group groups, the best top_k experts among theirs (decreasing), weights
renormalized or not and scaled; float32, float16 and float64 logits. Errors: shapes and attribute
ranges."""
import numpy as np

from opcase import Case, F, I, S, error_case as err, node

rng = np.random.default_rng(41)


def gate_ref(logits, bias, top_k, n_group, topk_group, score_func="sigmoid", norm=True, scale=1.0):
    x = logits.astype(np.float64)
    if score_func == "sigmoid":
        s = 1 / (1 + np.exp(-x))
    else:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        s = e / e.sum(axis=1, keepdims=True)
    c = s + (0 if bias is None else bias.astype(np.float64))
    T, E = x.shape
    per = E // n_group
    g = np.sort(c.reshape(T, n_group, per), axis=2)[:, :, -min(2, per):].sum(axis=2)
    groups = np.argsort(-g, axis=1, kind="stable")[:, :topk_group]
    keep = np.zeros((T, n_group), bool)
    np.put_along_axis(keep, groups, True, axis=1)
    masked = np.where(np.repeat(keep, per, axis=1), c, -np.inf)
    idx = np.argsort(-masked, axis=1, kind="stable")[:, :top_k]
    w = np.take_along_axis(s, idx, axis=1)
    if norm:
        w = w / (w.sum(axis=1, keepdims=True) + 1e-20)
    return w * scale, idx.astype(np.int32)


def gate_case(name, T, E, top_k, n_group, topk_group, score_func="sigmoid", norm=True, scale=1.0, bias=True, dtype=np.float32,
              rtol=1e-5):
    logits = rng.normal(0, 2, size=(T, E)).astype(dtype)
    b = rng.normal(0, 0.3, size=E).astype(np.float32) if bias else None
    w, idx = gate_ref(logits, b, top_k, n_group, topk_group, score_func, norm, scale)
    ins = {"logits": logits} | ({"bias": b} if bias else {})
    attrs = dict(top_k=I(top_k), n_group=I(n_group), topk_group=I(topk_group), score_func=S(score_func), norm_topk_prob=I(norm),
                 routed_scaling_factor=F(scale))
    return Case(name, [node("Llada2GroupLimitedGate", list(ins), ["w", "idx"], **attrs)], ins,
                {"w": w.astype(dtype), "idx": idx}, atol=rtol, rtol=rtol)


def cases():
    yield gate_case("Gate_llada2_like", 7, 64, 8, 8, 4, scale=2.5)  # 64 experts, 8 groups, 4 kept, 8 chosen
    yield gate_case("Gate_deepseek_v3_like", 5, 256, 8, 8, 4, scale=2.5)
    yield gate_case("Gate_softmax_no_norm", 6, 32, 4, 4, 2, score_func="softmax", norm=False)
    yield gate_case("Gate_no_bias_one_group", 4, 16, 3, 1, 1, bias=False)
    yield gate_case("Gate_groups_of_one", 3, 8, 2, 8, 3)
    yield gate_case("Gate_all_experts_of_kept_groups", 3, 24, 6, 6, 2)
    yield gate_case("Gate_f16", 4, 32, 4, 4, 2, dtype=np.float16, rtol=2e-3)
    yield gate_case("Gate_f64", 4, 32, 4, 4, 2, dtype=np.float64, rtol=1e-7)  # MLX's float64 sigmoid: ~1e-8 relative
    x = rng.normal(size=(2, 16)).astype(np.float32)
    yield err("Gate_groups_divide", "Llada2GroupLimitedGate", {"x": x}, top_k=I(2), n_group=I(3))
    yield err("Gate_topk_group", "Llada2GroupLimitedGate", {"x": x}, top_k=I(2), n_group=I(4), topk_group=I(5))
    yield err("Gate_top_k", "Llada2GroupLimitedGate", {"x": x}, top_k=I(9), n_group=I(4), topk_group=I(2))
    yield err("Gate_bias_shape", "Llada2GroupLimitedGate", {"x": x, "b": np.zeros(8, np.float32)}, top_k=I(2))
    yield err("Gate_rank", "Llada2GroupLimitedGate", {"x": x[0]}, top_k=I(2))
    yield err("Gate_score_func", "Llada2GroupLimitedGate", {"x": x}, top_k=I(2), score_func=S("relu"))
