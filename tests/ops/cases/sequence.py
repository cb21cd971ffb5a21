"""Sequence/state ops against numpy reference recurrences (step by step, float64):
SelectiveScan (Mamba, Gu & Dao 2023) and GatedDeltaNet (gated delta rule, Yang et al. 2024).
Edge shapes: S = 1, S not a power of two (the parallel prefix scan's doubling steps), size-1
batch/heads, Dk != Dv, non-contiguous operands (Transpose feeding the op), and bad shapes/dtypes."""
import numpy as np

from opcase import IS, Case, node

rng = np.random.default_rng(2024)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def selective_scan_ref(x, delta, A, Bm, Cm):
    x, delta, A, Bm, Cm = (np.asarray(a, np.float64) for a in (x, delta, A, Bm, Cm))
    B, S, H = x.shape
    h = np.zeros((B, H, A.shape[1]))
    y = np.zeros((B, S, H))
    for t in range(S):
        h = np.exp(delta[:, t, :, None] * A) * h + (delta[:, t] * x[:, t])[:, :, None] * Bm[:, t, None, :]
        y[:, t] = (h * Cm[:, t, None, :]).sum(-1)
    return y


def gated_delta_ref(q, k, v, g, beta, state=None):
    """State layout [B,H,Dv,Dk]; alpha_t = exp(g_t); S_t = alpha_t S_{t-1} + beta_t (v_t - alpha_t
    S_{t-1} k_t) k_t^T; y_t = S_t q_t."""
    q, k, v, g, beta = (np.asarray(a, np.float64) for a in (q, k, v, g, beta))
    B, S, H, Dk = q.shape
    Dv = v.shape[-1]
    st = np.zeros((B, H, Dv, Dk)) if state is None else np.asarray(state, np.float64).copy()
    y = np.zeros((B, S, H, Dv))
    for t in range(S):
        st = st * np.exp(g[:, t])[:, :, None, None]
        pred = np.einsum("bhvk,bhk->bhv", st, k[:, t])
        delta = (v[:, t] - pred) * beta[:, t][:, :, None]
        st = st + np.einsum("bhv,bhk->bhvk", delta, k[:, t])
        y[:, t] = np.einsum("bhvk,bhk->bhv", st, q[:, t])
    return y, st


def ss_inputs(B, S, H, N, dtype=np.float32):
    return {"x": uni((B, S, H), dtype=dtype), "delta": uni((B, S, H), 0.01, 0.5, dtype), "A": uni((H, N), -2.0, -0.1, dtype),
            "Bm": uni((B, S, N), dtype=dtype), "Cm": uni((B, S, N), dtype=dtype)}


def gdn_inputs(B, S, H, Dk, Dv, state=False):
    k = uni((B, S, H, Dk))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # models L2-normalise q and k
    ins = {"q": uni((B, S, H, Dk)), "k": k, "v": uni((B, S, H, Dv)), "g": uni((B, S, H), -1.0, -0.01),
           "beta": uni((B, S, H), 0.1, 0.9)}
    if state:
        ins["state"] = uni((B, H, Dv, Dk), -0.5, 0.5)
    return ins


def cases():
    for B, S, H, N in [(2, 5, 3, 4), (1, 1, 1, 1), (1, 8, 2, 3), (2, 13, 4, 16)]:
        ins = ss_inputs(B, S, H, N)
        yield Case(f"SelectiveScan_{B}x{S}x{H}x{N}", [node("SelectiveScan", list(ins), ["y"])], ins,
                   {"y": selective_scan_ref(**ins).astype(np.float32)}, atol=1e-5, rtol=1e-4)
    ins = ss_inputs(1, 6, 2, 3, np.float16)
    yield Case("SelectiveScan_f16", [node("SelectiveScan", list(ins), ["y"])], ins,
               {"y": selective_scan_ref(**ins).astype(np.float16)}, atol=5e-3, rtol=5e-3)
    # x given as [B,H,S] and transposed in the graph (non-contiguous operand)
    ins = ss_inputs(2, 7, 3, 2)
    feed = dict(ins, x=ins["x"].transpose(0, 2, 1).copy())
    yield Case("SelectiveScan_transposed_x", [node("Transpose", ["x"], ["xt"], perm=IS([0, 2, 1])),
                                              node("SelectiveScan", ["xt", "delta", "A", "Bm", "Cm"], ["y"])],
               feed, {"y": selective_scan_ref(**ins).astype(np.float32)}, atol=1e-5, rtol=1e-4)
    bad = dict(ss_inputs(2, 5, 3, 4), A=uni((3, 5)))
    yield Case("SelectiveScan_error_state_size", [node("SelectiveScan", list(bad), ["y"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = dict(ss_inputs(2, 5, 3, 4), delta=uni((2, 4, 3)))
    yield Case("SelectiveScan_error_seq_len", [node("SelectiveScan", list(bad), ["y"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = {k: v.astype(np.int32) for k, v in ss_inputs(1, 2, 1, 1).items()}
    yield Case("SelectiveScan_error_int", [node("SelectiveScan", list(bad), ["y"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = dict(ss_inputs(1, 2, 1, 1), Cm=uni((1, 2, 1), dtype=np.float64))
    yield Case("SelectiveScan_error_dtype_mix", [node("SelectiveScan", list(bad), ["y"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])

    for B, S, H, Dk, Dv, with_state in [(2, 4, 3, 8, 8, False), (1, 6, 2, 8, 5, True), (1, 1, 1, 4, 4, True),
                                        (2, 9, 2, 32, 16, True)]:
        ins = gdn_inputs(B, S, H, Dk, Dv, with_state)
        y, st = gated_delta_ref(**ins)
        yield Case(f"GatedDeltaNet_{B}x{S}x{H}x{Dk}x{Dv}{'_state' if with_state else ''}",
                   [node("GatedDeltaNet", list(ins), ["y", "s"])], ins,
                   {"y": y.astype(np.float32), "s": st.astype(np.float32)}, atol=1e-5, rtol=1e-4)
    # MLX's kernel keeps the state in float32: float64 gets float32 precision (documented)
    for dt, tol in [(np.float16, 5e-3), (np.float64, 1e-6)]:
        ins = {k: v.astype(dt) for k, v in gdn_inputs(1, 4, 2, 8, 4, True).items()}
        y, st = gated_delta_ref(**ins)
        yield Case(f"GatedDeltaNet_{np.dtype(dt).name}", [node("GatedDeltaNet", list(ins), ["y", "s"])], ins,
                   {"y": y.astype(dt), "s": st.astype(dt)}, atol=tol, rtol=tol)
    # q given as [B,H,S,Dk] and transposed in the graph
    ins = gdn_inputs(1, 5, 2, 4, 4, True)
    y, st = gated_delta_ref(**ins)
    feed = dict(ins, q=ins["q"].transpose(0, 2, 1, 3).copy())
    yield Case("GatedDeltaNet_transposed_q", [node("Transpose", ["q"], ["qt"], perm=IS([0, 2, 1, 3])),
                                              node("GatedDeltaNet", ["qt", "k", "v", "g", "beta", "state"], ["y", "s"])],
               feed, {"y": y.astype(np.float32), "s": st.astype(np.float32)}, atol=1e-5, rtol=1e-4)
    bad = dict(gdn_inputs(1, 3, 2, 4, 4, True), state=uni((1, 2, 4, 5)))
    yield Case("GatedDeltaNet_error_state_shape", [node("GatedDeltaNet", list(bad), ["y", "s"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = dict(gdn_inputs(1, 3, 2, 4, 4), g=uni((1, 3, 2, 4)))
    yield Case("GatedDeltaNet_error_gate_rank", [node("GatedDeltaNet", list(bad), ["y", "s"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = dict(gdn_inputs(1, 3, 2, 4, 4), k=uni((1, 3, 2, 5)))
    yield Case("GatedDeltaNet_error_key_dim", [node("GatedDeltaNet", list(bad), ["y", "s"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
    bad = dict(gdn_inputs(1, 3, 2, 4, 4), beta=uni((1, 3, 2), dtype=np.float16))
    yield Case("GatedDeltaNet_error_dtype_mix", [node("GatedDeltaNet", list(bad), ["y", "s"])], bad, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
