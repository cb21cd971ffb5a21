"""Cast to and from the low-precision storage types (float8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ, float4
E2M1, int4/uint4/int2/uint2) against ml_dtypes (pinned; ONNX's reference Cast uses it): round
trips float -> low-precision -> float/int over random values across each format's range and the
edges (zeros, ties, subnormals, the largest finite values and just past them, infinities, NaN),
saturating and not; every code decoded once (uint8 codes -> low-precision by Cast from an exactly
representable float, then back). The graph holds the low-precision values only on the device, as
uint8 codes; inputs and outputs are float32/int32."""
import ml_dtypes as md
import numpy as np

from opcase import DT, I, Case, node

rng = np.random.default_rng(5)
FLOATS = {"float8_e4m3fn": 448.0, "float8_e4m3fnuz": 240.0, "float8_e5m2": 57344.0, "float8_e5m2fnuz": 57344.0,
          "float4_e2m1fn": 6.0}
INTS = ["int4", "uint4", "int2", "uint2"]


def values(mx):
    v = [0.0, -0.0, np.nan, np.inf, -np.inf, mx, -mx, mx * 1.03, mx * 1.07, -mx * 1.1, 1e30, 1.0, -1.5, 0.75]
    small = np.float32(np.finfo(np.float32).tiny)
    v += [small, 1e-3, -1e-4, 2.0 ** -9 * 1.5, 2.0 ** -9 * 0.5, 2.0 ** -17, 2.0 ** -16 * 1.5, 0.25, 0.3, 2.5, 3.5, 5.0]
    r = rng.uniform(-1, 1, 200) * 2.0 ** rng.uniform(-20, np.log2(mx) + 1, 200)
    return np.concatenate([np.array(v), r]).astype(np.float32)


def saturate(x, mx):
    return np.where(np.isnan(x), x, np.clip(x, -mx, mx)).astype(np.float32)


def round_trip(name, to, x, want, sat=1):
    nodes = [node("Cast", ["x"], ["q"], to=DT(to), saturate=I(sat)), node("Cast", ["q"], ["y"], to=DT("float32"))]
    return Case(name, nodes, {"x": x}, {"y": want}, atol=0, rtol=0)


def cases():
    for to, mx in FLOATS.items():
        t = getattr(md, to)
        x = values(mx)
        with np.errstate(over="ignore", invalid="ignore"):
            yield round_trip(f"Cast_lowp_{to}_saturate", to, x, saturate(x, mx).astype(t).astype(np.float32))
            if to != "float4_e2m1fn":  # E2M1 always saturates
                yield round_trip(f"Cast_lowp_{to}_no_saturate", to, x, x.astype(t).astype(np.float32), sat=0)
        codes = np.arange(256 if to.startswith("float8") else 16, dtype=np.uint8)
        exact = codes.view(t).astype(np.float32)
        yield round_trip(f"Cast_lowp_{to}_every_code", to, exact, exact, sat=0)
        xf16 = x[np.isfinite(x) & (np.abs(x) < 60000)].astype(np.float16)  # NaN -> int is undefined in C
        yield Case(f"Cast_lowp_{to}_from_f16_to_i32", [node("Cast", ["x"], ["q"], to=DT(to)), node("Cast", ["q"], ["y"], to=DT("int32"))],
                   {"x": xf16}, {"y": saturate(xf16.astype(np.float32), mx).astype(t).astype(np.float32).astype(np.int32)},
                   atol=0, rtol=0)
    xi = np.concatenate([np.array([2.5, 2.7, -2.7, 3.5, 7.5, 8, 9, 17, -9, -17, 1000, -1000, np.nan, np.inf, -np.inf], np.float32),
                         rng.uniform(-40, 40, 100).astype(np.float32)])
    for to in INTS:
        t = getattr(md, to)
        with np.errstate(invalid="ignore"):
            want = xi.astype(t).astype(np.int32)
        yield Case(f"Cast_lowp_f32_{to}_i32", [node("Cast", ["x"], ["q"], to=DT(to)), node("Cast", ["q"], ["y"], to=DT("int32"))],
                   {"x": xi}, {"y": want}, atol=0, rtol=0)
        xs = np.arange(-300, 300, 7, dtype=np.int32)
        yield Case(f"Cast_lowp_i32_{to}_f32", [node("Cast", ["x"], ["q"], to=DT(to)), node("Cast", ["q"], ["y"], to=DT("float32"))],
                   {"x": xs}, {"y": xs.astype(t).astype(np.float32)}, atol=0, rtol=0)
    # float8 -> float8 and float8 -> int4 (through the decoded value)
    x = values(448.0)
    yield Case("Cast_lowp_e4m3fn_to_e5m2", [node("Cast", ["x"], ["a"], to=DT("float8_e4m3fn")),
                                           node("Cast", ["a"], ["b"], to=DT("float8_e5m2")),
                                           node("Cast", ["b"], ["y"], to=DT("float32"))],
               {"x": x}, {"y": saturate(x, 448).astype(md.float8_e4m3fn).astype(np.float32).astype(md.float8_e5m2).astype(np.float32)},
               atol=0, rtol=0)
    # arithmetic and comparison need values: Cast first
    for op in ["Add", "Equal"]:
        yield Case(f"Cast_lowp_{op}_rejected", [node("Cast", ["x"], ["q"], to=DT("float8_e4m3fn")), node(op, ["q", "q"], ["y"])],
                   {"x": values(448.0)}, {}, expect_error="INVALID_ARGUMENT", modes=["lazy"])
