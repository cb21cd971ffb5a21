"""FakeQuantize and FakeQuantizeBackward against numpy (float64): per-batch scales (per tensor and
per channel along an axis, floored at 1e-12) and fixed scales, 8/4/2 bits, round half to even,
saturation at +-qmax; the four straight-through estimators, each closed form checked against
central finite differences of its surrogate function (identity, the clip to +-qmax s, tanh,
hardtanh). scale_mode ema: the running scale decay r + (1 - decay) s_batch (s_batch where r <= 0),
per tensor and per channel, fed back through a chain of calls. Errors: bad bits/ste/axis/scale/
decay."""
import numpy as np

from nn_ref import fd_elementwise
from opcase import IS, Case, F, I, S, error_case as err, node, simple

rng = np.random.default_rng(17)


def uni(shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def qmax(bits):
    return 2 ** (bits - 1) - 1


def per_batch_scale(x, bits, axis):
    """max|x| / qmax over everything (axis None) or over all axes but `axis`, floored at 1e-12."""
    a = np.abs(x.astype(np.float64))
    m = a.max() if axis is None else a.max(axis=tuple(i for i in range(x.ndim) if i != axis % x.ndim), keepdims=True)
    return np.maximum(m / qmax(bits), 1e-12)


def broadcast_scale(s, x, axis):
    s = np.asarray(s, np.float64)
    if axis is None or s.size == 1:
        return s.reshape(())
    shape = [1] * x.ndim
    shape[axis % x.ndim] = s.size
    return s.reshape(shape)


def fake_quant_ref(x, bits, s):
    return np.clip(np.round(x.astype(np.float64) / s), -qmax(bits), qmax(bits)) * s


def fq_case(name, x, bits, axis=None, scale=None, atol=1e-6, rtol=1e-6):
    s = per_batch_scale(x, bits, axis) if scale is None else broadcast_scale(scale, x, axis)
    ins = {"x": x} | ({} if scale is None else {"scale": scale})
    attrs = {"bits": I(bits), "scale_mode": S("per_batch" if scale is None else "fixed")}
    if axis is not None:
        attrs |= {"per_channel": I(1), "axis": I(axis)}
    return simple(name, "FakeQuantize", ins, fake_quant_ref(x, bits, s).astype(x.dtype), atol=atol, rtol=rtol, **attrs)


def ste_ref(ste, x, dy, bound):
    """The estimator's closed form, asserted against finite differences of its surrogate."""
    x64 = x.astype(np.float64)
    surrogate = {"identity": lambda v: v, "clipped_identity": lambda v: np.clip(v, -bound, bound), "tanh": np.tanh,
                 "hard_tanh": lambda v: np.clip(v, -1, 1)}[ste]
    grad = {"identity": np.ones_like(x64), "clipped_identity": (np.abs(x64) <= bound).astype(np.float64),
            "tanh": 1 - np.tanh(x64) ** 2, "hard_tanh": (np.abs(x64) <= 1).astype(np.float64)}[ste]
    away = np.abs(np.abs(x64) - np.broadcast_to(bound, x64.shape)) > 1e-3  # not on a kink
    away &= np.abs(np.abs(x64) - 1) > 1e-3
    np.testing.assert_allclose(fd_elementwise(surrogate, x64)[away], grad[away], atol=1e-6, err_msg=ste)
    return dy.astype(np.float64) * grad


def fqb_case(name, x, dy, ste, bits=8, axis=None, scale=None):
    if scale is None:  # per-batch: the bound qmax*s is max|x| itself
        a = np.abs(x.astype(np.float64))
        bound = a.max() if axis is None else per_batch_scale(x, bits, axis) * qmax(bits)
    else:
        bound = broadcast_scale(scale, x, axis) * qmax(bits)
    ins = {"x": x, "dy": dy} | ({} if scale is None else {"scale": scale})
    attrs = {"bits": I(bits), "ste": S(ste), "scale_mode": S("per_batch" if scale is None else "fixed")}
    if axis is not None:
        attrs |= {"per_channel": I(1), "axis": I(axis)}
    return simple(name, "FakeQuantizeBackward", ins, ste_ref(ste, x, dy, bound).astype(x.dtype), **attrs)


def ema_ref(x, r, bits, axis, decay):
    """The running scale: decay r + (1 - decay) s_batch where r > 0, else s_batch."""
    sb = per_batch_scale(x, bits, axis)
    rb = broadcast_scale(r, x, axis)
    return np.where(rb > 0, decay * rb + (1 - decay) * sb, sb)


def ema_case(name, xs, r, bits=8, axis=None, decay=0.9):
    """A chain of FakeQuantize calls over xs, each fed the previous call's running scale."""
    nodes, ins, outs = [], {}, {}
    prev = "r"
    ins["r"] = r
    attrs = {"bits": I(bits), "scale_mode": S("ema"), "decay": F(decay)}
    if axis is not None:
        attrs |= {"per_channel": I(1), "axis": I(axis)}
    cur = np.asarray(r, np.float64)
    for i, x in enumerate(xs):
        ins[f"x{i}"] = x
        nodes.append(node("FakeQuantize", [f"x{i}", prev], [f"y{i}", f"s{i}"], **attrs))
        s = ema_ref(x, cur, bits, axis, decay)
        outs[f"y{i}"] = fake_quant_ref(x, bits, s).astype(x.dtype)
        cur = s.reshape(np.shape(r))
        outs[f"s{i}"] = cur.astype(np.asarray(r).dtype)
        prev = f"s{i}"
    return Case(name, nodes, ins, outs, atol=1e-6, rtol=1e-5)


def cases():
    x = uni((3, 4, 5))
    yield ema_case("FakeQuantize_ema_first_call", [x], np.float32(0))
    yield ema_case("FakeQuantize_ema_running", [x, uni((3, 4, 5), -4, 4), uni((3, 4, 5), -0.5, 0.5)], np.float32(0.02), decay=0.8)
    yield ema_case("FakeQuantize_ema_channel", [x, uni((3, 4, 5), -3, 3)], np.array([0.1, 0, 0.2, 0.05], np.float32), bits=4, axis=1)
    yield ema_case("FakeQuantize_ema_decay0_1d_state", [x, uni((3, 4, 5))], np.array([0.3], np.float32), decay=0.0)
    # ema backward: the scale input is the one the forward used (its second output)
    yield Case("FakeQuantizeBackward_clipped_ema",
               [node("FakeQuantizeBackward", ["x", "dy", "s"], ["dx"], bits=I(4), ste=S("clipped_identity"), scale_mode=S("ema"))],
               {"x": x, "dy": x * 2, "s": np.float32(0.2)}, {"dx": np.where(np.abs(x) <= 0.2 * 7, x * 2, 0).astype(np.float32)})
    for bits in [8, 4, 2]:
        yield fq_case(f"FakeQuantize_tensor_{bits}bit", x, bits)
        for axis in [0, 1, -1]:
            yield fq_case(f"FakeQuantize_channel{axis}_{bits}bit", x, bits, axis=axis)
        yield fq_case(f"FakeQuantize_fixed_{bits}bit", x, bits, scale=np.float32(0.05))
    yield fq_case("FakeQuantize_fixed_channel", x, 4, axis=1, scale=np.array([0.1, 0.2, 0.05, 0.3], np.float32))
    yield fq_case("FakeQuantize_fixed_one_value_1d", x, 8, scale=np.array([0.02], np.float32))
    yield fq_case("FakeQuantize_scalar", np.float32(-1.3), 8)
    yield fq_case("FakeQuantize_zeros", np.zeros((2, 3), np.float32), 8)  # the 1e-12 floor: zeros stay zeros
    # ties round to even: x / s = k + 1/2 exactly (s = 0.25 fixed)
    xt = np.array([0.125, 0.375, -0.125, -0.375, 0.625, 40.0, -40.0], np.float32)
    yield fq_case("FakeQuantize_ties_saturate", xt, 8, scale=np.float32(0.25))
    yield fq_case("FakeQuantize_f16", uni((4, 6), dtype=np.float16), 4, axis=0, atol=2e-3, rtol=2e-3)
    yield fq_case("FakeQuantize_f64", uni((4, 6), dtype=np.float64), 8, atol=1e-12, rtol=1e-12)
    xc = uni((4, 3))
    yield Case("FakeQuantize_of_transpose",
               [node("Transpose", ["x"], ["t"], perm=IS([1, 0])),
                node("FakeQuantize", ["t"], ["y"], bits=I(4), per_channel=I(1), axis=I(0))],
               {"x": xc}, {"y": fake_quant_ref(xc.T, 4, per_batch_scale(xc.T, 4, 0)).astype(np.float32)}, atol=1e-6)
    # backward: the four estimators
    dy = uni((3, 4, 5))
    for ste in ["identity", "clipped_identity", "tanh", "hard_tanh"]:
        yield fqb_case(f"FakeQuantizeBackward_{ste}", x, dy, ste)
        yield fqb_case(f"FakeQuantizeBackward_{ste}_fixed", x, dy, ste, bits=4, scale=np.float32(0.2))
    yield fqb_case("FakeQuantizeBackward_clipped_fixed_channel", x, dy, "clipped_identity", bits=2, axis=2,
                   scale=np.array([0.5, 1.0, 1.5, 0.25, 2.0], np.float32))
    yield fqb_case("FakeQuantizeBackward_clipped_channel", x, dy, "clipped_identity", bits=8, axis=0)
    # errors
    x2 = uni((2, 3))
    yield err("FakeQuantize_ema_no_state", "FakeQuantize", {"x": x2}, scale_mode=S("ema"))
    yield err("FakeQuantize_ema_decay", "FakeQuantize", {"x": x2, "r": np.float32(0)}, scale_mode=S("ema"), decay=F(1.5))
    yield err("FakeQuantize_ema_channel_state", "FakeQuantize", {"x": x2, "r": np.float32(0)}, scale_mode=S("ema"),
              per_channel=I(1), axis=I(1))
    yield err("FakeQuantize_bits3", "FakeQuantize", {"x": x2}, bits=I(3))
    yield err("FakeQuantize_bad_ste", "FakeQuantize", {"x": x2}, ste=S("sigmoid"))
    yield err("FakeQuantize_bad_mode", "FakeQuantize", {"x": x2}, scale_mode=S("minmax"))
    yield err("FakeQuantize_fixed_no_scale", "FakeQuantize", {"x": x2}, scale_mode=S("fixed"))
    yield err("FakeQuantize_per_batch_with_scale", "FakeQuantize", {"x": x2, "s": np.float32(1)})
    yield err("FakeQuantize_axis", "FakeQuantize", {"x": x2}, "OUT_OF_RANGE", per_channel=I(1), axis=I(2))
    yield err("FakeQuantize_scale_shape", "FakeQuantize", {"x": x2, "s": np.ones(4, np.float32)}, scale_mode=S("fixed"),
              per_channel=I(1), axis=I(1))
    yield err("FakeQuantize_int", "FakeQuantize", {"x": np.ones((2, 3), np.int32)})
    yield err("FakeQuantizeBackward_shape", "FakeQuantizeBackward", {"x": x2, "dy": uni((3, 2))})
