"""Conv and ConvTranspose against numpy loop references written here (float64), cross-checked with
onnx.reference on the ONNX-defined cases (pool_ref serves cases/pool.py and cases/conv_grad.py).
Coverage: 1D/2D/3D, strides, asymmetric pads, dilation, groups (grouped, depthwise, depthwise with
a channel multiplier), bias, output_padding, crops, shapes large enough for the chunked im2col
lowering, integer and float16/float64 convolution, empty batches, inputs made non-contiguous by a
Transpose, and bad attributes."""
import itertools

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator

from nn_ref import gelu
from opcase import IS, Case, I, S, error_case as err, node, simple

rng = np.random.default_rng(7)


def uni(shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def spatial(nsp, strides, pads, dilations):
    return (list(strides or [1] * nsp), list(pads or [0] * (2 * nsp)), list(dilations or [1] * nsp))


def conv_ref(x, w, b=None, strides=None, pads=None, dilations=None, group=1):
    """y[n, o, p] = sum_{c in o's group, j} x_pad[n, c, p*s + j*d] * w[o, c, j] (+ b[o])."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nsp = x.ndim - 2
    s, p, d = spatial(nsp, strides, pads, dilations)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i + nsp]) for i in range(nsp)])
    n, c, co, k = x.shape[0], x.shape[1], w.shape[0], w.shape[2:]
    o = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    cg, og = c // group, co // group
    y = np.zeros((n, co, *o))
    for off in itertools.product(*[range(kk) for kk in k]):
        win = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (o[i] - 1) + 1, s[i]) for i in range(nsp))
        patch = xp[(slice(None), slice(None)) + win]
        for g in range(group):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
            y[:, g * og:(g + 1) * og] += np.einsum("oc,nc...->no...", wk, patch[:, g * cg:(g + 1) * cg])
    if b is not None:
        y += b.astype(np.float64).reshape((1, co) + (1,) * nsp)
    return y


def conv_transpose_ref(x, w, b=None, strides=None, pads=None, dilations=None, output_padding=None, group=1):
    """Scatter form: every x[n, c, i] adds x * w[c, o, j] at y[n, o, i*s + j*d - pad_begin]."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    nsp = x.ndim - 2
    s, p, d = spatial(nsp, strides, pads, dilations)
    op = list(output_padding or [0] * nsp)
    n, ci, og, k, ins = x.shape[0], x.shape[1], w.shape[1], w.shape[2:], x.shape[2:]
    full = [s[i] * (ins[i] - 1) + d[i] * (k[i] - 1) + 1 + op[i] for i in range(nsp)]
    y = np.zeros((n, og * group, *full))
    cg = ci // group
    for pos in itertools.product(*[range(v) for v in ins]):
        for off in itertools.product(*[range(kk) for kk in k]):
            t = tuple(pos[i] * s[i] + off[i] * d[i] for i in range(nsp))
            for g in range(group):
                xs = x[(slice(None), slice(g * cg, (g + 1) * cg)) + pos]
                y[(slice(None), slice(g * og, (g + 1) * og)) + t] += xs @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + off]
    y = y[(slice(None), slice(None)) + tuple(slice(p[i], full[i] - p[i + nsp]) for i in range(nsp))]
    if b is not None:
        y = y + b.astype(np.float64).reshape((1, -1) + (1,) * nsp)
    return y


def pool_out(n, k, s, pb, pe, d, ceil_mode):
    span = n + pb + pe - d * (k - 1) - 1
    o = -(-span // s) + 1 if ceil_mode else span // s + 1
    if ceil_mode and (o - 1) * s >= n + pb:  # the last window starts inside the input or the begin pad
        o -= 1
    return o


def pool_ref(x, kind, kernel, strides=None, pads=None, dilations=None, count_include_pad=0, ceil_mode=0):
    """Window o covers positions o*s - pad_begin + j*d; positions outside the input are skipped;
    mean divides by the real elements, or by the positions inside [-pad_begin, n + pad_end)
    when count_include_pad."""
    nsp = x.ndim - 2
    s, p, d = spatial(nsp, strides, pads, dilations)
    o = [pool_out(x.shape[2 + i], kernel[i], s[i], p[i], p[i + nsp], d[i], ceil_mode) for i in range(nsp)]
    acc_dtype = np.float64 if x.dtype.kind == "f" else x.dtype
    y = np.zeros(x.shape[:2] + tuple(o), acc_dtype)
    for out in itertools.product(*[range(v) for v in o]):
        vals, padded = [], 0
        for off in itertools.product(*[range(kk) for kk in kernel]):
            pos = [out[i] * s[i] - p[i] + off[i] * d[i] for i in range(nsp)]
            if all(0 <= pos[i] < x.shape[2 + i] for i in range(nsp)):
                vals.append(x[(slice(None), slice(None)) + tuple(pos)].astype(acc_dtype))
            elif all(-p[i] <= pos[i] < x.shape[2 + i] + p[i + nsp] for i in range(nsp)):
                padded += 1
        v = np.stack(vals)
        r = {"max": v.max(0), "min": v.min(0), "sum": v.sum(0), "prod": v.prod(0)}.get(kind)
        if kind == "mean":
            r = v.sum(0) / (len(vals) + (padded if count_include_pad else 0))
        y[(slice(None), slice(None)) + out] = r
    return y


def onnx_ref(op, inputs, **attrs):
    """One ONNX node through onnx.reference.ReferenceEvaluator."""
    names = list(inputs)
    g = helper.make_graph([helper.make_node(op, names, ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, None) for k in names],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    return ReferenceEvaluator(helper.make_model(g)).run(None, inputs)[0]


def conv_case(name, x, w, b=None, ref_check=True, atol=2e-5, rtol=1e-4, **a):
    ins = {"x": x, "w": w}
    if b is not None:
        ins["b"] = b
    ref = conv_ref(x, w, b, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("group", 1))
    if ref_check and x.dtype == np.float32:
        onnx_attrs = {k: v for k, v in a.items()}
        np.testing.assert_allclose(onnx_ref("Conv", ins, **onnx_attrs), ref, rtol=1e-4, atol=1e-5)
    attrs = {k: (I(v) if k == "group" else IS(v)) for k, v in a.items()}
    return simple(name, "Conv", ins, ref.astype(x.dtype), atol=atol, rtol=rtol, **attrs)


def convt_case(name, x, w, b=None, atol=2e-5, rtol=1e-4, **a):
    ins = {"x": x, "w": w}
    if b is not None:
        ins["b"] = b
    ref = conv_transpose_ref(x, w, b, a.get("strides"), a.get("pads"), a.get("dilations"), a.get("output_padding"),
                             a.get("group", 1))
    if x.dtype == np.float32 and a.get("group", 1) == 1:  # onnx.reference fails on grouped ConvTranspose
        np.testing.assert_allclose(onnx_ref("ConvTranspose", ins, **a), ref, rtol=1e-4, atol=1e-5)
    attrs = {k: (I(v) if k == "group" else IS(v)) for k, v in a.items()}
    return simple(name, "ConvTranspose", ins, ref.astype(x.dtype), atol=atol, rtol=rtol, **attrs)


def conv_cases():
    # 1D / 2D / 3D dense
    yield conv_case("Conv1d", uni((2, 3, 11)), uni((4, 3, 3)))
    yield conv_case("Conv1d_stride_pad_dil_bias", uni((1, 4, 17)), uni((6, 4, 3)), uni((6,)), strides=[2], pads=[2, 1],
                    dilations=[2])
    yield conv_case("Conv2d", uni((2, 3, 7, 8)), uni((5, 3, 3, 3)), uni((5,)))
    yield conv_case("Conv2d_stride_asym_pads", uni((1, 3, 9, 10)), uni((4, 3, 3, 2)), strides=[2, 3], pads=[1, 0, 2, 1])
    yield conv_case("Conv2d_dilation", uni((1, 2, 10, 9)), uni((3, 2, 3, 3)), dilations=[2, 3], pads=[2, 1, 2, 3])
    yield conv_case("Conv3d", uni((1, 2, 5, 6, 7)), uni((3, 2, 2, 3, 2)), uni((3,)), strides=[1, 2, 1],
                    pads=[1, 0, 1, 0, 1, 1])
    yield conv_case("Conv3d_dilation_group", uni((1, 4, 6, 6, 5)), uni((4, 2, 2, 2, 2)), dilations=[2, 1, 2], group=2)
    # grouped, depthwise, depthwise with channel multiplier 2, in 1D/2D
    yield conv_case("Conv2d_group2", uni((2, 6, 8, 7)), uni((4, 3, 3, 3)), uni((4,)), pads=[1, 1, 1, 1], group=2)
    yield conv_case("Conv2d_group3_stride", uni((1, 9, 11, 10)), uni((6, 3, 3, 3)), strides=[2, 2], pads=[1, 0, 0, 1],
                    group=3)
    yield conv_case("Conv2d_depthwise", uni((1, 8, 12, 13)), uni((8, 1, 3, 3)), uni((8,)), pads=[1, 1, 1, 1], group=8)
    yield conv_case("Conv2d_depthwise_k5_stride21", uni((2, 6, 12, 9)), uni((6, 1, 5, 5)), strides=[2, 1],
                    pads=[2, 2, 2, 2], group=6)
    yield conv_case("Conv2d_depthwise_mult2_dil", uni((1, 4, 9, 9)), uni((8, 1, 3, 3)), dilations=[2, 2], pads=[2, 2, 2, 2],
                    group=4)
    yield conv_case("Conv1d_depthwise", uni((2, 5, 20)), uni((5, 1, 4)), strides=[3], pads=[1, 2], group=5)
    yield conv_case("Conv1d_group2", uni((1, 4, 15)), uni((6, 2, 3)), group=2)
    # kernel 1x1, kernel covering the whole padded input, size-1 spatial dims
    yield conv_case("Conv2d_1x1", uni((1, 16, 5, 6)), uni((8, 16, 1, 1)), uni((8,)))
    yield conv_case("Conv2d_full_window", uni((1, 2, 3, 4)), uni((2, 2, 5, 4)), pads=[1, 0, 1, 0])
    yield conv_case("Conv2d_empty_batch", uni((0, 4, 5, 5)), uni((4, 2, 3, 3)), group=2, ref_check=False)
    yield conv_case("Conv2d_1xW", uni((1, 4, 1, 9)), uni((4, 1, 1, 3)), pads=[0, 1, 0, 1], group=4)
    # large enough for the im2col lowering to work in chunks (4 MB of patches each): several group
    # chunks with a partial last one; row chunks of one group; rows and groups together
    yield conv_case("Conv2d_depthwise_chunked", uni((1, 32, 96, 96)), uni((32, 1, 3, 3)), uni((32,)), pads=[1, 1, 1, 1],
                    group=32, ref_check=False)
    # the direct kernel's two row strategies: wide rows (interior in blocks, edges tap by tap) and
    # narrow rows with wide kernels (input rows copied into zero-padded ones, reused by the next output
    # rows; several input channels, batch > 1), strides 1 and 2
    yield conv_case("Conv2d_depthwise_wide_rows", uni((1, 4, 5, 420)), uni((4, 1, 3, 3)), uni((4,)), pads=[1, 1, 1, 1],
                    group=4, ref_check=False)
    yield conv_case("Conv2d_direct_wide_rows_stride2", uni((1, 3, 6, 500)), uni((5, 3, 3, 3)), strides=[2, 2],
                    pads=[1, 1, 0, 1], ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_depthwise_narrow_k5_stride2", uni((2, 6, 11, 19)), uni((6, 1, 5, 5)), uni((6,)), strides=[2, 2],
                    pads=[2, 2, 2, 1], group=6)
    yield conv_case("Conv2d_direct_narrow_3ch_batch", uni((2, 3, 10, 21)), uni((4, 3, 3, 3)), uni((4,)), pads=[1, 1, 1, 1],
                    atol=1e-4)
    yield conv_case("Conv2d_depthwise_narrow_dilated", uni((1, 5, 9, 13)), uni((5, 1, 3, 3)), pads=[2, 0, 2, 3],
                    dilations=[2, 2], group=5)
    yield conv_case("Conv2d_dilated_row_chunks", uni((1, 32, 80, 80)), uni((8, 32, 3, 3)), dilations=[2, 2],
                    ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_group2_row_chunks", uni((1, 64, 80, 80)), uni((4, 32, 3, 3)), pads=[1, 1, 1, 1], group=2,
                    ref_check=False, atol=1e-4)
    # the CPU's GEMM kernel (more than 4 input channels per group): blocks of output positions
    # and of output channels over the pool (several of each, ragged last ones), batch > 1 with
    # groups, patches under stride, pads and dilation, the 1x1 case that reads the input as its
    # patches, late-layer shapes with few positions and many channels, fused bias
    yield conv_case("Conv2d_gemm_tiles_bias", uni((2, 24, 23, 29)), uni((70, 24, 3, 3)), uni((70,)), pads=[1, 1, 1, 1],
                    ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_gemm_group2_stride_dil", uni((2, 16, 19, 21)), uni((12, 8, 3, 2)), uni((12,)),
                    strides=[2, 1], pads=[2, 0, 1, 1], dilations=[1, 2], group=2, ref_check=False, atol=1e-4)
    # patches written into the GEMM's panels: whole interior panels of stride 1 and 2 (vector copies), with
    # dilation, and rows narrower than a panel (panels across output rows)
    yield conv_case("Conv2d_gemm_stride2_wide", uni((1, 8, 21, 75)), uni((10, 8, 3, 3)), uni((10,)), strides=[2, 2],
                    pads=[1, 1, 1, 1], ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_gemm_stride2_dil_k5", uni((1, 6, 19, 90)), uni((7, 6, 5, 5)), strides=[2, 2], pads=[2, 3, 1, 2],
                    dilations=[1, 2], ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_gemm_narrow_rows", uni((2, 9, 13, 7)), uni((11, 9, 3, 3)), uni((11,)), pads=[1, 1, 1, 1],
                    ref_check=False, atol=1e-4)
    # without patches (the GEMM reads padded input rows, split into stride phases, at per-tap
    # offsets): contractions deeper than one K slice (256) and more output channels than one row
    # block (144), column blocks across output rows, stride and dilation along each axis, stride 3;
    # narrow rows (Conv2d_gemm_narrow_rows, _few_positions) take the patches
    yield conv_case("Conv2d_implicit_deep_wide", uni((1, 40, 12, 30)), uni((150, 40, 3, 3)), uni((150,)),
                    pads=[1, 1, 1, 1], ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_implicit_stride12_dil", uni((2, 12, 15, 37)), uni((9, 12, 3, 3)), strides=[1, 2],
                    pads=[0, 2, 1, 0], dilations=[2, 1], ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_implicit_stride3", uni((1, 8, 10, 20)), uni((6, 8, 3, 3)), strides=[3, 3], pads=[1, 1, 1, 1],
                    ref_check=False, atol=1e-4)
    # 1x1 convolutions (their patches: the input, packed as it is): a batch of 3, groups of 16
    # channels, positions in whole panels (8 x 8)
    yield conv_case("Conv2d_gemm_1x1_batch", uni((3, 40, 17, 19)), uni((36, 40, 1, 1)), uni((36,)), atol=1e-4)
    yield conv_case("Conv2d_gemm_1x1_groups", uni((2, 32, 9, 10)), uni((24, 16, 1, 1)), uni((24,)), group=2, atol=1e-4)
    yield conv_case("Conv2d_gemm_1x1_whole_vectors", uni((1, 24, 8, 8)), uni((20, 24, 1, 1)), atol=1e-4)
    yield conv_case("Conv2d_gemm_1x1_stride2", uni((1, 40, 17, 19)), uni((36, 40, 1, 1)), strides=[2, 2], atol=1e-4)
    yield conv_case("Conv2d_gemm_few_positions", uni((1, 96, 3, 3)), uni((200, 96, 3, 3)), uni((200,)),
                    pads=[1, 1, 1, 1], ref_check=False, atol=1e-4)
    # more filters per group than positions (patches built once for all positions, shared by the
    # threads): two panels of positions, batch 2, groups 2, stride 2; a 1x1 convolution
    yield conv_case("Conv2d_gemm_shared_patches", uni((2, 32, 10, 9)), uni((96, 16, 3, 3)), uni((96,)), strides=[2, 2],
                    pads=[1, 1, 1, 0], group=2, ref_check=False, atol=1e-4)
    yield conv_case("Conv2d_gemm_shared_patches_1x1", uni((2, 64, 5, 5)), uni((80, 64, 1, 1)), uni((80,)), atol=1e-4)
    # at most 4 output positions per image: dot products of each weight row with the patches (1D
    # over a few frames as Silero VAD has them: taps in the padding, strides, batch 2; 2D maps of
    # 2 x 2 and 1 x 1; groups; contractions under 16 and not a multiple of 16)
    for P, (L, st, pd) in enumerate(((3, 1, [0, 0]), (3, 2, [1, 1]), (5, 2, [2, 1]), (4, 1, [1, 1])), 1):
        yield conv_case(f"Conv1d_dot_P{P}", uni((2, 20, L)), uni((70, 20, 3)), uni((70,)), strides=[st], pads=pd, atol=1e-4)
    yield conv_case("Conv2d_dot_2x2", uni((1, 24, 2, 2)), uni((40, 24, 3, 3)), uni((40,)), pads=[1, 1, 1, 1], atol=1e-4)
    yield conv_case("Conv2d_dot_group2_1x1map", uni((1, 16, 3, 3)), uni((10, 8, 3, 3)), group=2, atol=1e-4)
    yield conv_case("Conv1d_dot_short_k", uni((1, 5, 3)), uni((33, 5, 2)), uni((33,)), atol=1e-4)
    xs, ws, bs = uni((1, 20, 4), -3, 3), uni((36, 20, 3)), uni((36,))
    yield simple("Conv1d_dot_act_Relu", "Conv", {"x": xs, "w": ws, "b": bs},
                 np.maximum(conv_ref(xs, ws, bs, pads=[1, 0]), 0).astype(np.float32), atol=1e-4, rtol=1e-4, pads=IS([1, 0]),
                 activation=S("Relu"))
    # columns ([N,C,L,1], kernel width 1: 1D convolutions as jax2tf writes them) run as rows, on
    # both kernels; not with pads along W
    yield conv_case("Conv2d_column_gemm", uni((2, 6, 17, 1)), uni((5, 6, 3, 1)), uni((5,)), strides=[2, 1],
                    pads=[1, 0, 2, 0], dilations=[2, 1], atol=1e-4)
    yield conv_case("Conv2d_column_direct", uni((1, 3, 19, 1)), uni((3, 1, 4, 1)), pads=[2, 0, 1, 0], group=3)
    yield conv_case("Conv2d_column_w_pads", uni((1, 6, 9, 1)), uni((4, 6, 3, 1)), pads=[1, 1, 1, 1], atol=1e-4)
    # the activation attribute (the optimizer's epilogue sets it): applied by both CPU kernels
    # (Relu, HardSwish, Silu, Gelu) or after them (Softplus), after the bias; the empty-batch
    # path; integers refused
    xa, wa, ba = uni((1, 12, 9, 10), -3, 3), uni((10, 12, 3, 3)), uni((10,))
    for act, f in (("Relu", lambda v: np.maximum(v, 0)), ("HardSwish", lambda v: v * np.clip(v / 6 + 0.5, 0, 1)),
                   ("Silu", lambda v: v / (1 + np.exp(-v))), ("Gelu", gelu), ("Softplus", lambda v: np.logaddexp(v, 0))):
        ref = f(conv_ref(xa, wa, ba, pads=[1, 1, 1, 1]))
        yield simple(f"Conv2d_gemm_act_{act}", "Conv", {"x": xa, "w": wa, "b": ba}, ref.astype(np.float32), atol=1e-4,
                     rtol=1e-4, pads=IS([1, 1, 1, 1]), activation=S(act))
    # the implicit GEMM's copy-out (rows wide enough), which applies the bias and a piecewise-linear
    # activation in one pass (others after it), over 12 and over 2 input channels
    for cin in (12, 2):
        xi, wi = uni((1, cin, 6, 40), -3, 3), uni((10, cin, 3, 3))
        for act, f in (("Relu", lambda v: np.maximum(v, 0)), ("HardSwish", lambda v: v * np.clip(v / 6 + 0.5, 0, 1)),
                       ("Silu", lambda v: v / (1 + np.exp(-v)))):
            ref = f(conv_ref(xi, wi, ba, pads=[1, 1, 1, 1]))
            yield simple(f"Conv2d_implicit_c{cin}_act_{act}", "Conv", {"x": xi, "w": wi, "b": ba}, ref.astype(np.float32),
                         atol=1e-4, rtol=1e-4, pads=IS([1, 1, 1, 1]), activation=S(act))
    xd, wd = uni((2, 3, 7, 9), -3, 3), uni((3, 1, 3, 3))
    yield simple("Conv2d_direct_act_HardSwish", "Conv", {"x": xd, "w": wd},
                 (lambda v: v * np.clip(v / 6 + 0.5, 0, 1))(conv_ref(xd, wd, group=3)).astype(np.float32), atol=1e-4,
                 group=I(3), activation=S("HardSwish"))
    yield simple("Conv2d_direct_act_Silu", "Conv", {"x": xd, "w": wd},
                 (lambda v: v / (1 + np.exp(-v)))(conv_ref(xd, wd, group=3)).astype(np.float32), atol=1e-4,
                 group=I(3), activation=S("Silu"))
    yield simple("Conv2d_act_empty_batch", "Conv", {"x": uni((0, 4, 5, 5)), "w": uni((4, 4, 3, 3)), "b": uni((4,), 1, 2)},
                 np.zeros((0, 4, 3, 3), np.float32), activation=S("Relu"))
    yield err("Conv_act_integer", "Conv", {"x": np.ones((1, 2, 4, 4), np.int32), "w": np.ones((2, 2, 3, 3), np.int32)},
              activation=S("Relu"))
    # the CPU's direct kernel (at most 4 input channels per group): rows wide enough for its
    # 8-wide interior blocks plus ragged edges, both strides, dilation, pads wider than the
    # kernel, batch > 1, a channel multiplier, dense convolutions over 1 and 3 input channels,
    # 1D, float16
    yield conv_case("Conv2d_direct_dw_wide_k5", uni((2, 3, 9, 37)), uni((3, 1, 5, 5)), uni((3,)), pads=[2, 2, 2, 2],
                    group=3, ref_check=False)
    yield conv_case("Conv2d_direct_dw_stride2_odd", uni((1, 4, 11, 45)), uni((4, 1, 3, 3)), strides=[2, 2],
                    pads=[1, 0, 0, 1], group=4)
    yield conv_case("Conv2d_direct_dw_stride12_dil", uni((1, 2, 13, 40)), uni((4, 1, 3, 3)), uni((4,)), strides=[1, 2],
                    dilations=[2, 3], pads=[2, 3, 1, 4], group=2)
    yield conv_case("Conv2d_direct_dw_big_pads", uni((1, 2, 3, 19)), uni((2, 1, 2, 3)), pads=[3, 5, 4, 6], group=2)
    # outputs fewer than the begin pad (no interior; ONNX's pytorch-converted Conv1d_pad2size1)
    yield conv_case("Conv1d_direct_len1_k5", uni((1, 4, 1)), uni((4, 4, 5)), uni((4,)), pads=[2, 2])
    yield conv_case("Conv2d_direct_dw_k7", uni((1, 5, 14, 27)), uni((5, 1, 7, 7)), uni((5,)), pads=[3, 3, 3, 3], group=5)
    yield conv_case("Conv2d_direct_c1", uni((2, 1, 12, 33)), uni((6, 1, 3, 3)), uni((6,)), pads=[1, 1, 1, 1])
    # few input channels, 8 or more output channels per group: the GEMM without patches
    yield conv_case("Conv2d_few_channels_many_outputs", uni((2, 2, 14, 40)), uni((16, 2, 3, 3)), uni((16,)),
                    pads=[1, 1, 1, 1], ref_check=False, atol=1e-4)
    # maps shorter than twice the kernel: a span per output row, kernel rows in the padding skipped
    yield conv_case("Conv2d_direct_dw_short_map_k5", uni((1, 6, 3, 21)), uni((6, 1, 5, 5)), uni((6,)), pads=[2, 2, 2, 2], group=6)
    yield conv_case("Conv2d_direct_dw_short_map_dil", uni((2, 4, 4, 18)), uni((4, 1, 5, 3)), pads=[4, 1, 3, 1],
                    dilations=[2, 1], group=4)
    yield conv_case("Conv2d_direct_c3_stride2", uni((1, 3, 15, 41)), uni((8, 3, 3, 3)), uni((8,)), strides=[2, 2],
                    pads=[1, 1, 1, 1])
    yield conv_case("Conv2d_direct_group2_cg4", uni((1, 8, 7, 21)), uni((6, 4, 3, 2)), pads=[0, 1, 1, 0], group=2)
    yield conv_case("Conv1d_direct_dw_stride2", uni((3, 4, 50)), uni((4, 1, 5)), uni((4,)), strides=[2], pads=[2, 1],
                    group=4)
    yield conv_case("Conv2d_direct_dw_f16", uni((1, 4, 6, 21), dtype=np.float16), uni((4, 1, 3, 3), dtype=np.float16),
                    pads=[1, 1, 1, 1], group=4, atol=5e-3, rtol=5e-3)
    # strides and dilations far beyond the input (a padded row wider than a tile's buffer may hold:
    # the patches instead; fuzz_graph's conv-stride-2-31-tile-buffer, conv-row-stride-int64-max and
    # conv-patches-stride-int64-max):
    # a stride of 2^31 keeps each row's first column, one of 2^62 the first row; a dilation of
    # 2^30 over a begin pad of 2^30 puts the first tap in the pad and the second on the input, i.e.
    # the kernel's second column alone
    yield conv_case("Conv2d_direct_dw_stride_2_31", uni((1, 2, 3, 5)), uni((2, 1, 1, 2)), uni((2,)), strides=[1, 2**31],
                    group=2, ref_check=False)
    yield conv_case("Conv2d_direct_dw_row_stride_2_62", uni((1, 2, 5, 4)), uni((2, 1, 1, 2)), uni((2,)),
                    strides=[2**62, 1], group=2, ref_check=False)
    yield conv_case("Conv2d_gemm_stride_2_62", uni((1, 8, 3, 5)), uni((4, 8, 2, 2)), uni((4,)), strides=[1, 2**62],
                    pads=[0, 3, 0, 0], ref_check=False, atol=1e-4)
    xd, wd = uni((1, 2, 3, 5)), uni((2, 1, 1, 2))
    yield simple("Conv2d_direct_dw_dilation_2_30", "Conv", {"x": xd, "w": wd},
                 conv_ref(xd, wd[..., 1:], group=2).astype(np.float32), atol=2e-5, rtol=1e-4,
                 dilations=IS([1, 2**30]), pads=IS([0, 2**30, 0, 0]), group=I(2))
    # 1x1 convolutions as one matmul on the channels-first data: batch > 1, 1D, with bias
    yield conv_case("Conv2d_1x1_batch", uni((3, 12, 4, 7)), uni((5, 12, 1, 1)), uni((5,)))
    yield conv_case("Conv1d_1x1", uni((2, 6, 9)), uni((7, 6, 1)))
    # dtypes
    x16, w16 = uni((1, 4, 6, 6), dtype=np.float16), uni((4, 2, 3, 3), dtype=np.float16)
    yield conv_case("Conv2d_f16_group2", x16, w16, pads=[1, 1, 1, 1], group=2, atol=5e-3, rtol=5e-3)
    yield conv_case("Conv2d_f16", x16, uni((3, 4, 3, 3), dtype=np.float16), atol=5e-3, rtol=5e-3)
    x64 = uni((1, 6, 7, 7), dtype=np.float64)
    yield conv_case("Conv2d_f64_depthwise", x64, uni((6, 1, 3, 3), dtype=np.float64), group=6, atol=1e-12, rtol=1e-12)
    yield conv_case("Conv2d_f64_dense", x64, uni((3, 6, 3, 3), dtype=np.float64), pads=[1, 1, 1, 1], atol=1e-12,
                    rtol=1e-12)
    # integer convolution: exact where float32 accumulation is not (sums beyond 2^24)
    xi = rng.integers(-3000, 3000, size=(1, 4, 6, 6)).astype(np.int32)
    wi = rng.integers(-3000, 3000, size=(3, 4, 3, 3)).astype(np.int32)
    bi = rng.integers(-10, 10, size=(3,)).astype(np.int32)
    c = simple("Conv2d_i32_exact", "Conv", {"x": xi, "w": wi, "b": bi},
               (conv_ref(xi, wi, bi, pads=[1, 0, 0, 1]).round()).astype(np.int32), pads=IS([1, 0, 0, 1]))
    c.cpu_only = "integer convolution is exact beyond 2^24 only on the CPU (float64 accumulation)"
    yield c
    xi8, wi8 = rng.integers(-128, 128, size=(2, 4, 5, 5)).astype(np.int64), rng.integers(-128, 128, size=(4, 2, 2, 2)).astype(np.int64)
    yield simple("Conv2d_i64_group", "Conv", {"x": xi8, "w": wi8}, conv_ref(xi8, wi8, group=2).round().astype(np.int64),
                 group=I(2))
    # a max pool whose windows tile the conv's result (strides = windows, no pads) read only by it:
    # the CPU kernels pool the conv's rows as they form them (rlx_mx_conv_max_pool). The implicit
    # GEMM's tiles (rows wide enough; odd rows and columns left out of every window, a Silu applied
    # before the max, 3 x 3 and 2 x 1 windows, a strided conv), the GEMM with patches (narrow rows),
    # the direct kernel (depthwise), dot products (few positions); a conv also read elsewhere.
    relu, silu = (lambda v: np.maximum(v, 0)), (lambda v: v / (1 + np.exp(-v)))
    for name, xs, ws, act, win, a in (("implicit_odd", (1, 12, 7, 41), (10, 12, 3, 3), "Relu", (2, 2), {}),
                                      ("implicit_silu", (2, 12, 8, 40), (10, 12, 3, 3), "Silu", (2, 2), {}),
                                      ("implicit_3x3", (1, 2, 11, 50), (16, 2, 3, 3), "Relu", (3, 3), {}),
                                      ("implicit_2x1", (1, 12, 9, 40), (10, 12, 3, 3), "Relu", (2, 1), {}),
                                      ("implicit_strided", (1, 8, 21, 127), (12, 8, 3, 3), "Relu", (2, 2), {"strides": [2, 2]}),
                                      ("patches", (2, 6, 9, 7), (8, 6, 3, 3), "Relu", (2, 2), {}),
                                      ("direct", (1, 3, 9, 10), (3, 1, 3, 3), "Silu", (2, 2), {"group": 3}),
                                      ("dot", (1, 6, 4, 4), (8, 6, 3, 3), "Relu", (2, 2), {"strides": [2, 2]})):
        xp, wp, bp = uni(xs, -3, 3), uni(ws), uni((ws[0],))
        f = relu if act == "Relu" else silu
        ref = pool_ref(f(conv_ref(xp, wp, bp, a.get("strides"), [1, 1, 1, 1], group=a.get("group", 1))), "max", list(win),
                       list(win))
        cattrs = {"pads": IS([1, 1, 1, 1]), "activation": S(act)}
        cattrs.update({k: (I(v) if k == "group" else IS(v)) for k, v in a.items()})
        yield Case(f"Conv2d_max_pool_{name}",
                   [node("Conv", ["x", "w", "b"], ["c"], **cattrs),
                    node("Pool", ["c"], ["y"], kind=S("max"), kernel_shape=IS(list(win)), strides=IS(list(win)))],
                   {"x": xp, "w": wp, "b": bp}, {"y": ref.astype(np.float32)}, atol=1e-4, rtol=1e-4)
    xp, wp, bp = uni((1, 12, 6, 40), -3, 3), uni((10, 12, 3, 3)), uni((10,))
    conv_y = relu(conv_ref(xp, wp, bp, None, [1, 1, 1, 1]))
    yield Case("Conv2d_max_pool_conv_also_read",
               [node("Conv", ["x", "w", "b"], ["c"], pads=IS([1, 1, 1, 1]), activation=S("Relu")),
                node("Pool", ["c"], ["y"], kind=S("max"), kernel_shape=IS([2, 2]), strides=IS([2, 2]))],
               {"x": xp, "w": wp, "b": bp},
               {"y": pool_ref(conv_y, "max", [2, 2], [2, 2]).astype(np.float32), "c": conv_y.astype(np.float32)}, atol=1e-4,
               rtol=1e-4)
    # 3x3 stride-1 convolutions over >= 32 channels with constant (or param) filters: the CPU's
    # Winograd F(2x2, 3x3) kernel (kernel_winograd.cpp, filters transformed once per executable).
    # Odd output sizes (partial 2x2 tiles), tile counts that are not multiples of 16, asymmetric
    # pads, a batch of 2, a non-piecewise-linear activation, no bias, a following max pool, a
    # 3 x 3 output (not Winograd: the GEMM), the fewest channels (32), filters of more than 512 KB
    # with a batch of 2, more tiles than output channels (the products in one call over all rows)
    # with a partial block of rows (44 = 5 x 8 + 4), and a param filter set again between runs.
    for name, xs, co, pads, act, bias in (("odd", (1, 64, 9, 11), 72, [1, 1, 1, 1], "Relu", True),
                                          ("asym_pads_batch", (2, 64, 12, 13), 64, [0, 2, 1, 0], None, True),
                                          ("silu_nobias", (1, 72, 14, 14), 80, [1, 1, 1, 1], "Silu", False),
                                          ("wide", (1, 64, 6, 70), 64, [1, 1, 1, 1], "HardSwish", True),
                                          ("small_out", (1, 64, 5, 5), 64, [0, 0, 0, 0], "Relu", True),
                                          ("c32", (1, 32, 10, 17), 32, [1, 1, 1, 1], "Relu", True),
                                          ("c96_batch", (2, 96, 11, 9), 96, [1, 1, 1, 1], "Relu", True),
                                          ("many_tiles", (1, 40, 20, 24), 44, [1, 1, 1, 1], "Relu", True)):
        xw, ww, bw = uni(xs, -3, 3), uni((co, xs[1], 3, 3)), uni((co,))
        ref = conv_ref(xw, ww, bw if bias else None, pads=pads)
        ref = {"Relu": relu, "Silu": silu, "HardSwish": lambda v: v * np.clip(v / 6 + 0.5, 0, 1), None: lambda v: v}[act](ref)
        attrs = {"pads": IS(pads)}
        if act:
            attrs["activation"] = S(act)
        yield Case(f"Conv2d_winograd_{name}", [node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["y"], **attrs)], {"x": xw},
                   {"y": ref.astype(np.float32)}, constants={"w": ww, **({"b": bw} if bias else {})}, atol=5e-4, rtol=1e-4)
    # a Winograd convolution's 2 x 2 max pool, formed by its output transform (each window one
    # tile): odd output sizes (the last row and column in no window), more than 16 tiles a row, a
    # batch of 2, activations that are monotone (maxed before the bias and activation) and not
    # (Silu, HardSwish: after), no activation, no bias; a 3 x 3 window pools the written result
    hswish = lambda v: v * np.clip(v / 6 + 0.5, 0, 1)
    for name, xs, co, act, bias, win in (("relu", (1, 64, 8, 12), 64, "Relu", True, 2),
                                         ("relu_odd", (1, 32, 9, 11), 40, "Relu", True, 2),
                                         ("silu_batch", (2, 32, 10, 37), 32, "Silu", True, 2),
                                         ("hardswish", (1, 40, 7, 35), 48, "HardSwish", True, 2),
                                         ("none_nobias", (1, 32, 6, 8), 32, None, False, 2),
                                         ("window3", (1, 32, 9, 12), 32, "Relu", True, 3)):
        xq, wq, bq = uni(xs, -3, 3), uni((co, xs[1], 3, 3)), uni((co,))
        f = {"Relu": relu, "Silu": silu, "HardSwish": hswish, None: lambda v: v}[act]
        ref = pool_ref(f(conv_ref(xq, wq, bq if bias else None, None, [1, 1, 1, 1])), "max", [win, win], [win, win])
        attrs = {"pads": IS([1, 1, 1, 1]), **({"activation": S(act)} if act else {})}
        yield Case(f"Conv2d_winograd_max_pool_{name}",
                   [node("Conv", ["x", "w", "b"] if bias else ["x", "w"], ["c"], **attrs),
                    node("Pool", ["c"], ["y"], kind=S("max"), kernel_shape=IS([win, win]), strides=IS([win, win]))],
                   {"x": xq}, {"y": ref.astype(np.float32)}, constants={"w": wq, **({"b": bq} if bias else {})}, atol=5e-4,
                   rtol=1e-4)
    xw, ww = uni((1, 64, 8, 12), -3, 3), uni((64, 64, 3, 3))
    w2 = uni((64, 64, 3, 3))
    yield Case("Conv2d_winograd_param_reset", [node("Conv", ["x", "w"], ["y"], pads=IS([1, 1, 1, 1]))], {"x": xw},
               {"y": conv_ref(xw, ww, None, pads=[1, 1, 1, 1]).astype(np.float32)}, params={"w": ww},
               reset=({"w": w2}, {"y": conv_ref(xw, w2, None, pads=[1, 1, 1, 1]).astype(np.float32)}), atol=5e-4, rtol=1e-4)
    # a residual block's shortcut: Add(conv, r) read only by an activation (or by nothing else);
    # on the CPU one convolution adds r and applies the activation in its task
    # (rlx_mx_conv_epilogue). Winograd, the implicit GEMM, the GEMM with patches, a pointwise
    # conv, dot products, the direct (depthwise) kernel; r as the Add's left operand, r strided
    # (a Transpose), r broadcast (no fusion), the conv also read elsewhere (no fusion), the sum
    # also read elsewhere (the Add fused, the Relu not), an Add with no activation after it.
    sig = lambda v: 1 / (1 + np.exp(-v))
    for name, xs, ws, a, act, const in (("winograd", (1, 64, 9, 11), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}, "Relu", True),
                                        ("implicit", (1, 12, 8, 40), (10, 12, 3, 3), {"pads": [1, 1, 1, 1]}, "Relu", False),
                                        ("patches", (2, 6, 9, 7), (8, 6, 3, 3), {"pads": [1, 1, 1, 1]}, "Sigmoid", False),
                                        ("pointwise", (1, 16, 6, 7), (24, 16, 1, 1), {}, "Relu", True),
                                        ("dot", (1, 6, 4, 4), (8, 6, 3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, "Relu", False),
                                        ("direct", (1, 3, 9, 10), (3, 1, 3, 3), {"group": 3, "pads": [1, 1, 1, 1]}, "Silu", False),
                                        ("no_act", (1, 16, 6, 7), (16, 16, 3, 3), {"pads": [1, 1, 1, 1]}, None, False)):
        xr, wr, br = uni(xs, -3, 3), uni(ws), uni((ws[0],))
        cy = conv_ref(xr, wr, br, a.get("strides"), a.get("pads"), group=a.get("group", 1))
        rr = uni(cy.shape, -2, 2)
        f = {"Relu": relu, "Silu": silu, "Sigmoid": sig, None: lambda v: v}[act]
        cattrs = {k: (I(v) if k == "group" else IS(v)) for k, v in a.items()}
        nodes = [node("Conv", ["x", "w", "b"], ["c"], **cattrs), node("Add", ["r", "c"] if name == "dot" else ["c", "r"], ["s"])]
        if act:
            nodes.append(node(act, ["s"], ["y"]))
        consts = {"w": wr, "b": br} if const else {}
        feeds = {"x": xr, "r": rr, **({} if const else {"w": wr, "b": br})}
        yield Case(f"Conv2d_residual_{name}", nodes if act else nodes[:1] + [node("Add", ["c", "r"], ["y"])], feeds,
                   {"y": f(cy + rr).astype(np.float32)}, constants=consts, atol=5e-4 if const else 1e-4, rtol=1e-4)
    xr, wr, br = uni((1, 8, 6, 7), -3, 3), uni((8, 8, 3, 3)), uni((8,))
    cy = conv_ref(xr, wr, br, None, [1, 1, 1, 1])
    rt = uni((1, 6, 7, 8), -2, 2)
    yield Case("Conv2d_residual_strided",
               [node("Conv", ["x", "w", "b"], ["c"], pads=IS([1, 1, 1, 1])), node("Transpose", ["r"], ["t"], perm=IS([0, 3, 1, 2])),
                node("Add", ["c", "t"], ["s"]), node("Relu", ["s"], ["y"])], {"x": xr, "w": wr, "b": br, "r": rt},
               {"y": relu(cy + rt.transpose(0, 3, 1, 2)).astype(np.float32)}, atol=1e-4, rtol=1e-4)
    rb = uni((8, 1, 1), -2, 2)
    yield Case("Conv2d_residual_broadcast",
               [node("Conv", ["x", "w", "b"], ["c"], pads=IS([1, 1, 1, 1])), node("Add", ["c", "r"], ["s"]), node("Relu", ["s"], ["y"])],
               {"x": xr, "w": wr, "b": br, "r": rb}, {"y": relu(cy + rb).astype(np.float32)}, atol=1e-4, rtol=1e-4)
    rr = uni(cy.shape, -2, 2)
    yield Case("Conv2d_residual_conv_also_read",
               [node("Conv", ["x", "w", "b"], ["c"], pads=IS([1, 1, 1, 1])), node("Add", ["c", "r"], ["s"]), node("Relu", ["s"], ["y"])],
               {"x": xr, "w": wr, "b": br, "r": rr}, {"y": relu(cy + rr).astype(np.float32), "c": cy.astype(np.float32)}, atol=1e-4,
               rtol=1e-4)
    yield Case("Conv2d_residual_sum_also_read",
               [node("Conv", ["x", "w", "b"], ["c"], pads=IS([1, 1, 1, 1])), node("Add", ["c", "r"], ["s"]), node("Relu", ["s"], ["y"])],
               {"x": xr, "w": wr, "b": br, "r": rr}, {"y": relu(cy + rr).astype(np.float32), "s": (cy + rr).astype(np.float32)},
               atol=1e-4, rtol=1e-4)
    # non-contiguous input: a Transpose feeding the conv
    xt, w = uni((1, 9, 8, 4)), uni((4, 1, 3, 3))
    ref = conv_ref(xt.transpose(0, 3, 1, 2), w, pads=[1, 1, 1, 1], group=4)
    yield Case("Conv2d_depthwise_of_transpose",
               [node("Transpose", ["x"], ["t"], perm=IS([0, 3, 1, 2])),
                node("Conv", ["t", "w"], ["y"], pads=IS([1, 1, 1, 1]), group=I(4))],
               {"x": xt, "w": w}, {"y": ref.astype(np.float32)}, atol=2e-5, rtol=1e-4)
    # errors
    yield err("Conv_bad_group", "Conv", {"x": uni((1, 6, 5, 5)), "w": uni((4, 3, 3, 3))}, group=I(4))
    yield err("Conv_weight_channels", "Conv", {"x": uni((1, 6, 5, 5)), "w": uni((4, 2, 3, 3))}, group=I(2))
    yield err("Conv_kernel_too_big", "Conv", {"x": uni((1, 2, 3, 3)), "w": uni((2, 2, 4, 4))})
    yield err("Conv_pads_length", "Conv", {"x": uni((1, 2, 5, 5)), "w": uni((2, 2, 3, 3))}, pads=IS([1, 1]))
    yield err("Conv_zero_stride", "Conv", {"x": uni((1, 2, 5, 5)), "w": uni((2, 2, 3, 3))}, strides=IS([0, 1]))
    yield err("Conv_bias_shape", "Conv", {"x": uni((1, 2, 5, 5)), "w": uni((2, 2, 3, 3)), "b": uni((3,))})
    yield err("Conv_4d_spatial", "Conv", {"x": uni((1, 1, 2, 2, 2, 2)), "w": uni((1, 1, 1, 1, 1, 1))}, "UNIMPLEMENTED")


def conv_transpose_cases():
    yield convt_case("ConvT1d", uni((2, 3, 6)), uni((3, 2, 3)), uni((2,)))
    yield convt_case("ConvT1d_stride_pads_op", uni((1, 2, 7)), uni((2, 3, 4)), strides=[3], pads=[1, 2], output_padding=[2])
    yield convt_case("ConvT2d", uni((1, 3, 4, 5)), uni((3, 2, 3, 3)), uni((2,)))
    yield convt_case("ConvT2d_stride_pad", uni((2, 2, 4, 3)), uni((2, 3, 3, 3)), strides=[2, 2], pads=[1, 1, 1, 1])
    yield convt_case("ConvT2d_asym_op", uni((1, 2, 3, 4)), uni((2, 2, 3, 2)), strides=[2, 3], pads=[0, 1, 1, 0],
                     output_padding=[1, 2])
    yield convt_case("ConvT2d_dilation", uni((1, 2, 4, 4)), uni((2, 3, 3, 2)), dilations=[2, 3], pads=[1, 2, 0, 1])
    yield convt_case("ConvT2d_dil_stride", uni((1, 2, 3, 4)), uni((2, 2, 2, 3)), strides=[2, 2], dilations=[2, 2],
                     output_padding=[1, 1])
    # groups, with strides (input dilation) and dilation: the cases MLX's conv_general mishandles
    yield convt_case("ConvT2d_group2_stride2", uni((1, 4, 3, 4)), uni((4, 3, 3, 3)), uni((6,)), strides=[2, 2],
                     pads=[1, 1, 1, 1], output_padding=[1, 1], group=2)
    yield convt_case("ConvT2d_depthwise_stride", uni((2, 3, 4, 4)), uni((3, 1, 4, 4)), strides=[2, 2], pads=[1, 1, 1, 1],
                     group=3)
    yield convt_case("ConvT1d_group2_dil_stride", uni((1, 4, 5)), uni((4, 2, 3)), strides=[2], dilations=[2], group=2)
    yield convt_case("ConvT3d", uni((1, 2, 3, 3, 2)), uni((2, 2, 2, 2, 2)), uni((2,)), strides=[2, 1, 2], pads=[0, 1, 0, 1, 0, 0])
    yield convt_case("ConvT3d_group", uni((1, 4, 2, 3, 2)), uni((4, 1, 2, 3, 2)), strides=[1, 2, 2], group=2)
    # pads larger than the full-correlation padding crop the dilated input
    yield convt_case("ConvT2d_big_pads", uni((1, 1, 5, 5)), uni((1, 1, 2, 2)), strides=[2, 2], pads=[2, 3, 3, 2])
    # depthwise (one input and one output channel per group) in 1D/2D with crops and output_padding
    yield convt_case("ConvT2d_depthwise_big_pads_op", uni((1, 2, 5, 4)), uni((2, 1, 2, 3)), uni((2,)), strides=[2, 3],
                     pads=[2, 3, 3, 1], output_padding=[1, 2], group=2)
    yield convt_case("ConvT1d_depthwise_dil", uni((2, 3, 6)), uni((3, 1, 3)), strides=[2], dilations=[2], pads=[0, 5],
                     group=3)
    # stride = kernel (non-overlapping windows: one matmul on the CPU): batch > 1, bias, odd
    # sizes, 1D with pads and output_padding, 3D, float16
    yield convt_case("ConvT2d_s2k2_batch", uni((2, 6, 5, 7)), uni((6, 4, 2, 2)), uni((4,)), strides=[2, 2])
    yield convt_case("ConvT2d_s3x2k3x2_pads", uni((1, 3, 4, 5)), uni((3, 5, 3, 2)), strides=[3, 2], pads=[1, 0, 2, 1],
                     output_padding=[2, 1])
    yield convt_case("ConvT1d_s3k3_op", uni((2, 4, 6)), uni((4, 3, 3)), uni((3,)), strides=[3], pads=[1, 0],
                     output_padding=[2])
    yield convt_case("ConvT3d_s2k2", uni((1, 3, 2, 3, 2)), uni((3, 2, 2, 2, 2)), strides=[2, 2, 2])
    yield convt_case("ConvT2d_s2k2_f16", uni((1, 4, 3, 5), dtype=np.float16), uni((4, 3, 2, 2), dtype=np.float16),
                     strides=[2, 2], atol=5e-3, rtol=5e-3)
    x16 = uni((1, 2, 3, 3), dtype=np.float16)
    yield convt_case("ConvT2d_f16_group", x16, uni((2, 2, 3, 3), dtype=np.float16), strides=[2, 2], group=2, atol=5e-3,
                     rtol=5e-3)
    yield err("ConvT_output_padding", "ConvTranspose", {"x": uni((1, 2, 3, 3)), "w": uni((2, 2, 3, 3))},
              strides=IS([2, 2]), output_padding=IS([2, 0]))
    yield err("ConvT_int_input", "ConvTranspose", {"x": np.ones((1, 2, 3, 3), np.int32), "w": np.ones((2, 2, 3, 3), np.int32)})
    yield err("Conv_bool_input", "Conv", {"x": np.ones((1, 2, 3, 3), bool), "w": np.ones((2, 2, 3, 3), bool)})
    yield err("ConvT_weight_channels", "ConvTranspose", {"x": uni((1, 2, 3, 3)), "w": uni((3, 2, 3, 3))})
    yield err("ConvT_pads_exceed", "ConvTranspose", {"x": uni((1, 1, 2, 2)), "w": uni((1, 1, 2, 2))}, pads=IS([2, 2, 2, 2]))


def cases():
    yield from conv_cases()
    yield from conv_transpose_cases()
