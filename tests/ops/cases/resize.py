"""Resize against onnx.reference.ReferenceEvaluator on a one-node ONNX Resize-19 model: nearest
(every nearest_mode), linear and cubic (cubic_coeff_a, exclude_outside, antialias), every
coordinate_transformation_mode the reference implements, scales or sizes, tf_crop_and_resize
with roi and extrapolation; 1-D to 3-D resizes, integer and float16 inputs, a non-contiguous
input; rlx's CPU kernel on larger planes; plus error cases."""
import numpy as np
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from opcase import FS, IS, Case, F, I, S, node

rng = np.random.default_rng(5)


def reference(x, sizes=None, scales=None, roi=None, **attrs):
    """Output of ONNX Resize-19 on x (float64 math inside the reference, cast to x's dtype)."""
    names = ["x", "roi" if roi is not None else "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    while names[-1] == "":
        names.pop()
    inits = []
    if roi is not None:
        inits.append(helper.make_tensor("roi", TensorProto.FLOAT, [len(roi)], roi))
    if scales is not None:
        inits.append(helper.make_tensor("scales", TensorProto.FLOAT, [len(scales)], scales))
    if sizes is not None:
        inits.append(helper.make_tensor("sizes", TensorProto.INT64, [len(sizes)], sizes))
    nd = helper.make_node("Resize", names, ["y"], **attrs)
    vi = helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
    g = helper.make_graph([nd], "resize", [vi], [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(m).run(None, {"x": x})[0]


def resize_case(name, x, sizes=None, scales=None, roi=None, atol=1e-5, rtol=1e-5, **attrs):
    want = reference(x, sizes=sizes, scales=scales, roi=roi, **attrs)
    a = {k: (S(v) if isinstance(v, str) else F(v) if isinstance(v, float) else I(v)) for k, v in attrs.items()}
    a["sizes"] = IS(want.shape)
    if scales is not None:  # float32 scales as ONNX stores them
        a["scales"] = FS(np.asarray(scales, np.float32).astype(np.float64))
    if roi is not None:
        a["roi"] = FS(np.asarray(roi, np.float32).astype(np.float64))
    return Case(name, [node("Resize", ["x"], ["y"], **a)], {"x": x}, {"y": want}, atol=atol, rtol=rtol)


CTMS = ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric"]


def cases():
    x = rng.uniform(-2, 2, size=(1, 2, 4, 5)).astype(np.float32)
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        for ctm in CTMS:
            yield resize_case(f"Resize_nearest_{nm}_{ctm}_up", x, sizes=[1, 2, 7, 8], mode="nearest", nearest_mode=nm,
                              coordinate_transformation_mode=ctm)
        yield resize_case(f"Resize_nearest_{nm}_down_scales", x, scales=[1, 1, 0.6, 0.5], mode="nearest", nearest_mode=nm)
    for mode in ["linear", "cubic"]:
        for ctm in CTMS:
            yield resize_case(f"Resize_{mode}_{ctm}_up", x, sizes=[1, 2, 7, 9], mode=mode, coordinate_transformation_mode=ctm)
            yield resize_case(f"Resize_{mode}_{ctm}_down_scales", x, scales=[1, 1, 0.6, 0.7], mode=mode,
                              coordinate_transformation_mode=ctm)
        for aa in [0, 1]:
            yield resize_case(f"Resize_{mode}_antialias{aa}_down", x, sizes=[1, 2, 3, 2], mode=mode, antialias=aa)
            yield resize_case(f"Resize_{mode}_antialias{aa}_scales", x, scales=[1, 1, 0.45, 0.8], mode=mode, antialias=aa)
        yield resize_case(f"Resize_{mode}_crop_and_resize", x, sizes=[1, 2, 3, 6], roi=[0, 0, 0.2, -0.1, 1, 1, 0.9, 1.2], mode=mode,
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=9.5)
    yield resize_case("Resize_cubic_a_exclude_outside", x, sizes=[1, 2, 6, 3], mode="cubic", cubic_coeff_a=-0.5, exclude_outside=1)
    yield resize_case("Resize_nearest_crop_and_resize", x, sizes=[1, 2, 5, 4], roi=[0, 0, -0.3, 0.1, 1, 1, 0.8, 1.3], mode="nearest",
                      coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-1.0)
    # source coordinates near -1e30 (a hostile roi): extrapolated, never converted to an integer out of range (fuzz_graph)
    for mode in ["nearest", "linear", "cubic"]:
        yield resize_case(f"Resize_{mode}_crop_far_roi", x, sizes=[1, 2, 3, 4], roi=[0, 0, -1e30, 0, 1, 1, -1e29, 1], mode=mode,
                          coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=7.0)
    # rlx's CPU kernel (the last two axes): many planes and rows long enough to be split over threads, repeated
    # rows (upsampling) copied, one axis resized, and taps over several rows and columns
    xk = rng.uniform(-2, 2, size=(2, 3, 20, 37)).astype(np.float32)
    for f in [2, 4, 8]:
        yield resize_case(f"Resize_kernel_nearest_x{f}", xk, sizes=[2, 3, 20 * f, 37 * f], mode="nearest", nearest_mode="floor",
                          coordinate_transformation_mode="asymmetric")
    yield resize_case("Resize_kernel_nearest_scales_down", xk, scales=[1, 1, 0.5, 0.35], mode="nearest")
    yield resize_case("Resize_kernel_linear_x2", xk, scales=[1, 1, 2, 2], mode="linear")
    yield resize_case("Resize_kernel_linear_width_only", xk, sizes=[2, 3, 20, 61], mode="linear",
                      coordinate_transformation_mode="align_corners")
    yield resize_case("Resize_kernel_nearest_height_only", xk, sizes=[2, 3, 47, 37], mode="nearest")
    yield resize_case("Resize_kernel_cubic_antialias_down", xk, sizes=[2, 3, 7, 12], mode="cubic", antialias=1)
    yield resize_case("Resize_kernel_linear_rank2", xk[0, 0], sizes=[33, 50], mode="linear")
    yield resize_case("Resize_kernel_linear_f16", xk.astype(np.float16), sizes=[2, 3, 31, 45], atol=4e-3, rtol=4e-3, mode="linear")
    x1 = rng.uniform(-2, 2, size=(6,)).astype(np.float32)
    yield resize_case("Resize_linear_1d", x1, sizes=[11], mode="linear")
    x3 = rng.uniform(-2, 2, size=(2, 3, 4)).astype(np.float32)
    yield resize_case("Resize_linear_3d_all_axes", x3, sizes=[3, 5, 2], mode="linear", coordinate_transformation_mode="align_corners")
    xu = rng.integers(0, 255, size=(1, 1, 3, 4)).astype(np.uint8)
    yield resize_case("Resize_nearest_uint8", xu, scales=[1, 1, 2, 1.5], mode="nearest")
    xi = rng.integers(-100, 100, size=(2, 5)).astype(np.int32)
    yield resize_case("Resize_nearest_int32_down", xi, sizes=[2, 3], mode="nearest", nearest_mode="floor")
    xh = x.astype(np.float16)
    yield resize_case("Resize_linear_f16", xh, sizes=[1, 2, 6, 7], atol=2e-3, rtol=2e-3, mode="linear")
    xt = rng.uniform(-2, 2, size=(5, 4)).astype(np.float32)
    want = reference(np.ascontiguousarray(xt.T), sizes=[6, 8], mode="linear")
    yield Case("Resize_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])),
                                       node("Resize", ["t"], ["y"], sizes=IS([6, 8]), mode=S("linear"))], {"x": xt}, {"y": want},
               atol=1e-5)
    err = dict(modes=["lazy"])
    yield Case("Resize_linear_int", [node("Resize", ["x"], ["y"], sizes=IS([2, 6]), mode=S("linear"))], {"x": xi}, {},
               expect_error="INVALID_ARGUMENT", **err)
    yield Case("Resize_bad_mode", [node("Resize", ["x"], ["y"], sizes=IS([2, 6]), mode=S("area"))], {"x": xt}, {},
               expect_error="INVALID_ARGUMENT", **err)
    yield Case("Resize_bad_ctm", [node("Resize", ["x"], ["y"], sizes=IS([2, 6]), coordinate_transformation_mode=S("corner"))],
               {"x": xt}, {}, expect_error="INVALID_ARGUMENT", **err)
    yield Case("Resize_sizes_rank", [node("Resize", ["x"], ["y"], sizes=IS([2]))], {"x": xt}, {}, expect_error="INVALID_ARGUMENT", **err)
    yield Case("Resize_scales_length", [node("Resize", ["x"], ["y"], sizes=IS([5, 4]), scales=FS([1.0]))], {"x": xt}, {},
               expect_error="INVALID_ARGUMENT", **err)
    yield Case("Resize_antialias_nearest", [node("Resize", ["x"], ["y"], sizes=IS([2, 2]), antialias=I(1))], {"x": xt}, {},
               expect_error="INVALID_ARGUMENT", **err)
