"""Conv2dBackwardInput, Conv2dBackwardWeight and MaxPool2dBackward against central finite
differences of the forward ops (the numpy float64 loop references of cases/conv.py):
grad_i = <f(v + h e_i) - f(v - h e_i), dy> / 2h over every element i of the differentiated operand.
Covers strides, asymmetric pads, dilation, groups (grouped and depthwise), batches, a forward
output size that floor division shortened (the output_padding of the transposed convolution),
max-pool ties (the gradient goes to the first maximum of the window, row-major) and bad shapes."""
import numpy as np

from cases.conv import conv_ref, pool_ref
from nn_ref import fd_grad
from opcase import IS, I, error_case as err, simple

rng = np.random.default_rng(3)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def conv_attrs(a):
    return {k: (I(v) if k == "group" else IS(v)) for k, v in a.items()}


def conv_grad_cases(name, xs, ws, atol=1e-4, **a):
    """Both conv gradients of one forward convolution."""
    x, w = uni(xs), uni(ws)
    fwd = conv_ref(x, w, None, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("group", 1))
    dy = uni(fwd.shape)
    gx = fd_grad(lambda v: conv_ref(v, w, None, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("group", 1)), x, dy,
                 eps=1e-3)
    gw = fd_grad(lambda v: conv_ref(x, v, None, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("group", 1)), w, dy,
                 eps=1e-3)
    yield simple(f"Conv2dBackwardInput_{name}", "Conv2dBackwardInput", {"dy": dy, "w": w}, gx.astype(np.float32),
                 atol=atol, rtol=1e-4, input_shape=IS(xs), **conv_attrs(a))
    yield simple(f"Conv2dBackwardWeight_{name}", "Conv2dBackwardWeight", {"x": x, "dy": dy}, gw.astype(np.float32),
                 atol=atol, rtol=1e-4, kernel_shape=IS(ws[2:]), **conv_attrs(a))


def maxpool_first_hit(x, dy, kernel, strides, pads):
    """Closed form with ties: each window sends its dy to its first maximum (row-major)."""
    n, c, h, w = x.shape
    ph, pw = pads[0], pads[1]
    dx = np.zeros(x.shape, np.float64)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            for b in range(n):
                for ch in range(c):
                    best, at = -np.inf, None
                    for ki in range(kernel[0]):
                        for kj in range(kernel[1]):
                            r, q = i * strides[0] - ph + ki, j * strides[1] - pw + kj
                            if 0 <= r < h and 0 <= q < w and x[b, ch, r, q] > best:
                                best, at = x[b, ch, r, q], (r, q)
                    dx[b, ch, at[0], at[1]] += dy[b, ch, i, j]
    return dx


def maxpool_case(name, x, kernel, strides, pads, ties=False):
    fwd = pool_ref(x, "max", kernel, strides, pads)
    dy = uni(fwd.shape, dtype=x.dtype)
    ref = maxpool_first_hit(x, dy, kernel, strides, pads)
    if not ties:  # distinct values: the finite differences agree with the closed form
        np.testing.assert_allclose(fd_grad(lambda v: pool_ref(v, "max", kernel, strides, pads), x, dy, eps=1e-3), ref, atol=1e-6)
    return simple(f"MaxPool2dBackward_{name}", "MaxPool2dBackward", {"x": x, "dy": dy}, ref.astype(x.dtype), atol=1e-6,
                  kernel_shape=IS(kernel), strides=IS(strides), pads=IS(pads))


def distinct(shape):
    return (rng.permutation(int(np.prod(shape))).reshape(shape) / 7.0 - 3).astype(np.float32)


def cases():
    yield from conv_grad_cases("basic", (1, 2, 5, 5), (3, 2, 3, 3))
    yield from conv_grad_cases("stride_pads", (2, 3, 7, 6), (4, 3, 3, 2), strides=[2, 2], pads=[1, 0, 1, 1])
    yield from conv_grad_cases("floor_shortened", (1, 2, 8, 7), (2, 2, 3, 3), strides=[3, 2], pads=[0, 1, 0, 0])
    yield from conv_grad_cases("dilation", (1, 2, 7, 8), (2, 2, 2, 3), dilations=[2, 2], pads=[1, 1, 1, 1])
    yield from conv_grad_cases("group2", (2, 4, 5, 6), (6, 2, 3, 3), pads=[1, 1, 1, 1], group=2)
    yield from conv_grad_cases("depthwise_stride", (1, 3, 7, 7), (3, 1, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1], group=3)
    yield from conv_grad_cases("group_dil_stride", (1, 4, 9, 8), (4, 2, 2, 2), strides=[2, 1], dilations=[2, 3], group=2)
    yield maxpool_case("basic", distinct((1, 2, 6, 6)), [2, 2], [2, 2], [0, 0, 0, 0])
    yield maxpool_case("overlap_pads", distinct((2, 2, 7, 6)), [3, 3], [2, 1], [1, 1, 1, 0])
    yield maxpool_case("stride1", distinct((1, 1, 5, 5)), [2, 3], [1, 1], [0, 1, 0, 1])
    yield maxpool_case("negative", distinct((1, 2, 5, 5)) - 10, [3, 3], [2, 2], [1, 1, 1, 1])
    yield maxpool_case("ties_constant", np.ones((1, 2, 5, 6), np.float32), [2, 3], [1, 2], [1, 0, 0, 1], ties=True)
    xt = np.round(uni((1, 3, 6, 6), 0, 2)).astype(np.float32)
    yield maxpool_case("ties_rounded", xt, [3, 3], [1, 1], [1, 1, 1, 1], ties=True)
    x64 = distinct((1, 2, 4, 4)).astype(np.float64)
    yield maxpool_case("f64", x64, [2, 2], [1, 1], [0, 0, 1, 1])
    # errors: dy not the forward output, bad input_shape / kernel_shape / group
    dy, w = uni((1, 3, 3, 3)), uni((3, 2, 3, 3))
    yield err("Conv2dBackwardInput_dy_shape", "Conv2dBackwardInput", {"dy": dy, "w": w}, input_shape=IS([1, 2, 6, 6]))
    yield err("Conv2dBackwardInput_input_rank", "Conv2dBackwardInput", {"dy": dy, "w": w}, input_shape=IS([2, 5, 5]))
    yield err("Conv2dBackwardInput_channels", "Conv2dBackwardInput", {"dy": dy, "w": w}, input_shape=IS([1, 4, 5, 5]))
    x = uni((1, 4, 5, 5))
    yield err("Conv2dBackwardWeight_group", "Conv2dBackwardWeight", {"x": x, "dy": dy}, kernel_shape=IS([3, 3]), group=I(2))
    yield err("Conv2dBackwardWeight_dy_shape", "Conv2dBackwardWeight", {"x": x, "dy": dy}, kernel_shape=IS([2, 2]))
    yield err("Conv2dBackwardWeight_kernel", "Conv2dBackwardWeight", {"x": x, "dy": dy}, kernel_shape=IS([3]))
    yield err("MaxPool2dBackward_dy_shape", "MaxPool2dBackward", {"x": x, "dy": uni((1, 4, 3, 3))}, kernel_shape=IS([2, 2]))
    yield err("MaxPool2dBackward_pads", "MaxPool2dBackward", {"x": x, "dy": uni((1, 4, 5, 5))}, kernel_shape=IS([2, 2]),
              pads=IS([2, 2, 0, 0]))
    yield err("MaxPool2dBackward_rank", "MaxPool2dBackward", {"x": uni((1, 4, 5)), "dy": uni((1, 4, 4))},
              kernel_shape=IS([2, 2]))
