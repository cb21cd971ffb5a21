"""Gradients of softmax cross-entropy, LayerNorm, RmsNorm and GroupNorm (input, gamma and beta)
against two numpy float64 oracles: closed forms written here and central finite differences of the
forward references (tests/ops/nn_ref.py), checked against each other before a case is written."""
import numpy as np

import nn_ref as R
from opcase import IS, Case, F, I, node

rng = np.random.default_rng(5)


def rnd(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# ---- closed forms (float64) ----

def _std(x, axes, rms, eps):
    xc = x if rms else x - x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt((xc ** 2).mean(axis=axes, keepdims=True) + eps)
    return xc * rstd, rstd


def norm_input_grad(x, g, dy, axis, rms, eps):
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    shp = [1] * x.ndim
    shp[axis] = -1
    xh, rstd = _std(x, axis, rms, eps)
    gg = dy * np.reshape(g, shp)
    inner = gg - xh * (gg * xh).mean(axis=axis, keepdims=True)
    if not rms:
        inner -= gg.mean(axis=axis, keepdims=True)
    return rstd * inner


def group_input_grad(x, g, dy, groups, eps):
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    n, c = x.shape[:2]
    gg = (dy * np.reshape(g, (1, c) + (1,) * (x.ndim - 2))).reshape(n, groups, -1)
    xh, rstd = _std(x.reshape(n, groups, -1), 2, False, eps)
    inner = gg - gg.mean(axis=2, keepdims=True) - xh * (gg * xh).mean(axis=2, keepdims=True)
    return (rstd * inner).reshape(x.shape)


def sum_except(a, axis):
    return a.sum(axis=tuple(i for i in range(a.ndim) if i != axis))


def one_hot(labels, c):
    return (np.asarray(labels)[..., None] == np.arange(c)).astype(np.float64)


def ce_loss(l, labels):
    m = l.max(axis=-1, keepdims=True)
    lse = (m + np.log(np.exp(l - m).sum(axis=-1, keepdims=True)))[..., 0]
    return lse - (l * one_hot(labels, l.shape[-1])).sum(axis=-1)


# ---- cases ----

def grad_case(name, op, inputs, want, atol=2e-5, rtol=1e-4, **attrs):
    return Case(name, [node(op, list(inputs), ["g"], **attrs)], inputs, {"g": want.astype(np.float32)}, atol=atol,
                rtol=rtol)


def ln_rms_cases(rms):
    short, fwd, eps = ("rms", R.rms_norm, 1e-6) if rms else ("ln", R.layer_norm, 1e-5)
    pre = "RmsNorm" if rms else "LayerNorm"
    for shape, axis in (((6,), 0), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((2, 1, 3), 1), ((2, 3, 2, 3), -2)):
        x, dy = rnd(*shape), rnd(*shape)
        n = shape[axis]
        g, b = rnd(n, lo=0.5, hi=1.5), rnd(n)
        ax = axis % len(shape)
        tag = f"{short}_{'x'.join(map(str, shape))}_ax{axis}"
        dx = norm_input_grad(x, g, dy, ax, rms, eps)
        R.check_close(tag + "_dx", dx, R.fd_grad(lambda z: fwd(z, g, b, axis=axis, eps=eps), x, dy), atol=2e-6)
        dg = sum_except(dy * _std(x.astype(np.float64), ax, rms, eps)[0], ax)
        R.check_close(tag + "_dg", dg, R.fd_grad(lambda z: fwd(x, z, b, axis=axis, eps=eps), g, dy), atol=2e-6)
        db = sum_except(dy.astype(np.float64), ax)
        R.check_close(tag + "_db", db, R.fd_grad(lambda z: fwd(x, g, z, axis=axis, eps=eps), b, dy), atol=2e-6)
        yield grad_case(tag + "_dx", f"{pre}BackwardInput", {"x": x, "gamma": g, "dy": dy}, dx, axis=I(axis))
        yield grad_case(tag + "_dgamma", f"{pre}BackwardGamma", {"x": x, "dy": dy}, dg, axis=I(axis))
        yield grad_case(tag + "_dbeta", f"{pre}BackwardBeta", {"dy": dy}, db, axis=I(axis))
    # epsilon honoured (small-variance rows, where epsilon matters)
    x, dy, g = rnd(3, 4, lo=-0.05, hi=0.05), rnd(3, 4), rnd(4)
    dx = norm_input_grad(x, g, dy, 1, rms, 0.01)
    R.check_close(f"{short}_eps", dx, R.fd_grad(lambda z: fwd(z, g, axis=1, eps=0.01), x, dy), atol=2e-6)
    yield grad_case(f"{short}_eps_dx", f"{pre}BackwardInput", {"x": x, "gamma": g, "dy": dy}, dx, epsilon=F(0.01))
    # non-contiguous x (a Transpose feeding the op)
    xt, dy, g = rnd(4, 3), rnd(3, 4), rnd(4)
    dx = norm_input_grad(xt.T, g, dy, 1, rms, eps)
    yield Case(f"{short}_noncontiguous_dx", [node("Transpose", ["xt"], ["x"], perm=IS([1, 0])),
                                             node(f"{pre}BackwardInput", ["x", "g", "dy"], ["dx"])],
               {"xt": xt, "g": g, "dy": dy}, {"dx": dx.astype(np.float32)}, atol=2e-5, rtol=1e-4)
    # float16
    xh, dyh, gh = rnd(2, 8, dtype=np.float16), rnd(2, 8, dtype=np.float16), rnd(8, dtype=np.float16)
    dx = norm_input_grad(xh, gh.astype(np.float64), dyh, 1, rms, eps)
    yield Case(f"{short}_f16_dx", [node(f"{pre}BackwardInput", ["x", "g", "dy"], ["dx"])],
               {"x": xh, "g": gh, "dy": dyh}, {"dx": dx.astype(np.float16)}, atol=2e-2, rtol=2e-2)
    # errors
    x = rnd(2, 3)
    for nm, op, ins, attrs, code in (
            ("axis", "BackwardInput", {"x": x, "g": rnd(3), "dy": x}, {"axis": I(2)}, "OUT_OF_RANGE"),
            ("gamma", "BackwardInput", {"x": x, "g": rnd(2), "dy": x}, {}, "INVALID_ARGUMENT"),
            ("dy", "BackwardGamma", {"x": x, "dy": rnd(3, 2)}, {}, "INVALID_ARGUMENT"),
            ("dtype", "BackwardInput", {"x": x, "g": rnd(3), "dy": x.astype(np.float16)}, {}, "INVALID_ARGUMENT"),
            ("beta_axis", "BackwardBeta", {"dy": x}, {"axis": I(-3)}, "OUT_OF_RANGE")):
        yield Case(f"{short}_err_{nm}", [node(pre + op, list(ins), ["g"], **attrs)], ins, {}, expect_error=code,
                   modes=["lazy"])


def group_cases():
    eps = 1e-5
    for shape, groups in (((2, 6, 3, 2), 3), ((2, 4), 2), ((1, 4, 5), 4), ((2, 4, 3), 1)):
        x, dy = rnd(*shape), rnd(*shape)
        c = shape[1]
        g, b = rnd(c, lo=0.5, hi=1.5), rnd(c)
        tag = f"gn_{'x'.join(map(str, shape))}_g{groups}"
        dx = group_input_grad(x, g, dy, groups, eps)
        R.check_close(tag + "_dx", dx, R.fd_grad(lambda z: R.group_norm(z, g, b, groups, eps), x, dy), atol=2e-6)
        n = shape[0]
        xh = _std(x.astype(np.float64).reshape(n, groups, -1), 2, False, eps)[0].reshape(shape)
        dg = sum_except(dy * xh, 1)
        R.check_close(tag + "_dg", dg, R.fd_grad(lambda z: R.group_norm(x, z, b, groups, eps), g, dy), atol=2e-6)
        db = sum_except(dy.astype(np.float64), 1)
        R.check_close(tag + "_db", db, R.fd_grad(lambda z: R.group_norm(x, g, z, groups, eps), b, dy), atol=2e-6)
        yield grad_case(tag + "_dx", "GroupNormBackwardInput", {"x": x, "gamma": g, "dy": dy}, dx, num_groups=I(groups))
        yield grad_case(tag + "_dgamma", "GroupNormBackwardGamma", {"x": x, "dy": dy}, dg, num_groups=I(groups))
        yield grad_case(tag + "_dbeta", "GroupNormBackwardBeta", {"dy": dy}, db, num_groups=I(groups))
    x = rnd(2, 6, 3)
    for nm, op, ins, attrs in (("groups", "GroupNormBackwardInput", {"x": x, "g": rnd(6), "dy": x}, {"num_groups": I(4)}),
                               ("gamma", "GroupNormBackwardInput", {"x": x, "g": rnd(3), "dy": x}, {"num_groups": I(3)}),
                               ("dy", "GroupNormBackwardGamma", {"x": x, "dy": x[:1]}, {"num_groups": I(3)}),
                               ("rank", "GroupNormBackwardBeta", {"dy": rnd(6)}, {"num_groups": I(3)})):
        yield Case(f"gn_err_{nm}", [node(op, list(ins), ["g"], **attrs)], ins, {}, expect_error="INVALID_ARGUMENT",
                   modes=["lazy"])


def cross_entropy_cases():
    for shape, ldt in (((4, 5), np.int64), ((2, 3, 4), np.int32), ((1, 1), np.int64), ((3, 6), np.uint8)):
        logits = rnd(*shape, lo=-4, hi=4)
        c = shape[-1]
        labels = rng.integers(0, c, size=shape[:-1]).astype(ldt)
        tag = f"sce_{'x'.join(map(str, shape))}_{np.dtype(ldt).name}"
        loss = ce_loss(logits.astype(np.float64), labels)
        yield Case(tag, [node("SoftmaxCrossEntropyWithLogits", ["l", "y"], ["loss"])], {"l": logits, "y": labels},
                   {"loss": loss.astype(np.float32)}, atol=2e-6, rtol=2e-5)
        dloss = rnd(*shape[:-1])
        closed = (R.softmax(logits.astype(np.float64)) - one_hot(labels, c)) * dloss[..., None]
        R.check_close(tag + "_grad", closed, R.fd_grad(lambda z: ce_loss(z, labels), logits, dloss))
        yield Case(tag + "_grad", [node("SoftmaxCrossEntropyBackward", ["l", "y", "d"], ["g"])],
                   {"l": logits, "y": labels, "d": dloss}, {"g": closed.astype(np.float32)}, atol=2e-6, rtol=2e-5)
    # a label outside [0, C) selects no class: loss = logsumexp(logits), gradient = softmax * dloss
    logits, labels = rnd(3, 4), np.array([1, 4, -1], np.int64)
    yield Case("sce_label_out_of_range", [node("SoftmaxCrossEntropyWithLogits", ["l", "y"], ["loss"])],
               {"l": logits, "y": labels}, {"loss": ce_loss(logits.astype(np.float64), labels).astype(np.float32)},
               atol=2e-6, rtol=2e-5)
    # large logits (stability)
    logits = rnd(2, 5) + np.float32(500)
    labels = np.array([0, 3], np.int64)
    yield Case("sce_large", [node("SoftmaxCrossEntropyWithLogits", ["l", "y"], ["loss"])], {"l": logits, "y": labels},
               {"loss": ce_loss(logits.astype(np.float64), labels).astype(np.float32)}, atol=1e-4, rtol=1e-4)
    for nm, op, ins in (("labels_float", "SoftmaxCrossEntropyWithLogits", {"l": rnd(2, 3), "y": rnd(2)}),
                        ("labels_shape", "SoftmaxCrossEntropyWithLogits", {"l": rnd(2, 3), "y": np.zeros(3, np.int64)}),
                        ("dloss_shape", "SoftmaxCrossEntropyBackward",
                         {"l": rnd(2, 3), "y": np.zeros(2, np.int64), "d": rnd(3)})):
        yield Case(f"sce_err_{nm}", [node(op, list(ins), ["g"])], ins, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])


def cases():
    yield from cross_entropy_cases()
    yield from ln_rms_cases(False)
    yield from ln_rms_cases(True)
    yield from group_cases()
