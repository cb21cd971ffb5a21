"""Fft, Rfft, Irfft against numpy.fft (computed in complex128). Layouts: complex64 [..,N] and the
real block [..,2N] = [re_0..re_N-1, im_0..im_N-1] in float16/float32/float64. float64 cases use
tolerances near 1e-12 that a complex64 path (about 1e-7 relative) could not meet; they cover the
direct DFT (small and prime sizes), the four-step factorization (composite sizes) and Bluestein
(primes above 1024). Edge shapes: size 1, rank 1, leading batch dims, a Transpose feeding the op."""
import numpy as np

from opcase import DT, IS, Case, I, S, node, simple

rng = np.random.default_rng(7)
NORMS = ["backward", "ortho", "forward"]


def to_block(z, dtype):
    return np.concatenate([z.real, z.imag], axis=-1).astype(dtype)


def from_block(b):
    n = b.shape[-1] // 2
    return b[..., :n].astype(np.float64) + 1j * b[..., n:].astype(np.float64)


def signal(shape, dtype=np.float64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex128)


def fft_ref(z, inverse, norm):
    return (np.fft.ifft if inverse else np.fft.fft)(z, axis=-1, norm=norm)


def tol(dtype, n):
    """Absolute tolerance for unit-variance inputs of length n (outputs grow like sqrt n)."""
    eps = {np.float64: 1e-15, np.float32: 3e-7, np.float16: 2e-3}[dtype]
    return 20 * eps * max(1.0, np.sqrt(n)) * max(1.0, np.log2(max(n, 2)))


def cases():
    # real-block float32 and float64: every norm, both directions
    for dt in (np.float32, np.float64):
        for n in (1, 2, 5, 8, 12):
            for norm in NORMS:
                for inv in (0, 1):
                    z = signal((3, n))
                    x = to_block(z, dt)
                    want = to_block(fft_ref(from_block(x), inv, norm), dt)
                    yield simple(f"Fft_{dt.__name__}_n{n}_{norm}_inv{inv}", "Fft", {"x": x}, want, atol=tol(dt, n), rtol=0,
                                 inverse=I(inv), norm=S(norm))
    # float64 precision on the sizes that take each algorithm: direct (64, 97 prime), four-step
    # (100, 1024, 4096 = two levels), Bluestein (1031 prime; 2062 = 2 x 1031 through four-step)
    for n in (64, 97, 100, 1024, 1031, 2062, 4096):
        z = signal((2, n))
        x = to_block(z, np.float64)
        yield simple(f"Fft_float64_precision_n{n}", "Fft", {"x": x}, to_block(np.fft.fft(z), np.float64),
                     atol=tol(np.float64, n), rtol=0)
        yield simple(f"Fft_float64_precision_inverse_n{n}", "Fft", {"x": x},
                     to_block(np.fft.ifft(z, norm="ortho"), np.float64), atol=tol(np.float64, n), rtol=0,
                     inverse=I(1), norm=S("ortho"))
    # rank 1 and rank 3 blocks
    z = signal((16,))
    yield simple("Fft_f32_rank1", "Fft", {"x": to_block(z, np.float32)}, to_block(np.fft.fft(z), np.float32),
                 atol=tol(np.float32, 16), rtol=0)
    z = signal((2, 3, 10))
    yield simple("Fft_f64_rank3", "Fft", {"x": to_block(z, np.float64)}, to_block(np.fft.fft(z), np.float64),
                 atol=tol(np.float64, 10), rtol=0)
    # a float32 block of rank 8, the IR's limit (its pairs are stacked on the leading dims as one)
    z = signal((1, 2, 1, 1, 2, 1, 1, 6))
    yield simple("Fft_f32_rank8", "Fft", {"x": to_block(z, np.float32)}, to_block(np.fft.fft(z), np.float32),
                 atol=tol(np.float32, 6), rtol=0)
    # float16 blocks compute in float32
    z = signal((2, 8)) * 0.5
    x16 = to_block(z, np.float16)
    yield simple("Fft_f16", "Fft", {"x": x16}, to_block(np.fft.fft(from_block(x16)), np.float16), atol=1e-2, rtol=5e-3)
    # bfloat16 blocks (made in the graph: .npy has no bfloat16) compute in float32
    z = signal((2, 8)) * 0.5
    xb = to_block(z, np.float32)
    bf = xb.view(np.uint32) & np.uint32(0xFFFF0000)  # the bfloat16 values, exactly, in float32
    xr = bf.view(np.float32)
    ref = to_block(np.fft.fft(from_block(xr)), np.float32)
    yield Case("Fft_bf16", [node("Cast", ["x"], ["b"], to=DT("bfloat16")), node("Fft", ["b"], ["f"]),
                            node("Cast", ["f"], ["y"], to=DT("float32"))], {"x": xr}, {"y": ref}, atol=5e-2, rtol=1e-2)
    # complex64 in and out
    for norm in NORMS:
        for inv in (0, 1):
            z = signal((4, 9)).astype(np.complex64)
            yield simple(f"Fft_c64_{norm}_inv{inv}", "Fft", {"x": z}, fft_ref(z.astype(np.complex128), inv, norm).astype(np.complex64),
                         atol=tol(np.float32, 9), rtol=0, inverse=I(inv), norm=S(norm))
    z = signal((1,)).astype(np.complex64)
    yield simple("Fft_c64_size1", "Fft", {"x": z}, z, atol=1e-7, rtol=0)
    # non-contiguous input: a transposed block
    for dt in (np.float32, np.float64):
        z = signal((5, 4))
        xt = to_block(z, dt).T.copy()  # [2N=8, 5]; transposed back to [5, 8] in the graph
        yield Case(f"Fft_{dt.__name__}_of_transpose", [node("Transpose", ["x"], ["t"], perm=IS([1, 0])), node("Fft", ["t"], ["y"])],
                   {"x": xt}, {"y": to_block(np.fft.fft(z), dt)}, atol=tol(dt, 4), rtol=0)
    # empty batches
    for dt in (np.float32, np.float64):
        yield simple(f"Fft_{dt.__name__}_empty_batch", "Fft", {"x": np.zeros((0, 8), dt)}, np.zeros((0, 8), dt))
        yield simple(f"Rfft_{dt.__name__}_empty_batch", "Rfft", {"x": np.zeros((0, 6), dt)}, np.zeros((0, 8), dt))
        yield simple(f"Irfft_{dt.__name__}_empty_batch", "Irfft", {"x": np.zeros((0, 6), dt)}, np.zeros((0, 5), dt), n=I(5))
    # Rfft: real signals of odd and even length
    for dt in (np.float32, np.float64):
        for n in (1, 6, 7, 16, 1031):
            x = rng.standard_normal((3, n)).astype(dt)
            for norm in ("backward", "ortho"):
                want = to_block(np.fft.rfft(x.astype(np.float64), norm=norm), dt)
                yield simple(f"Rfft_{dt.__name__}_n{n}_{norm}", "Rfft", {"x": x}, want, atol=tol(dt, n), rtol=0, norm=S(norm))
    x16 = rng.standard_normal((2, 10)).astype(np.float16)
    yield simple("Rfft_f16", "Rfft", {"x": x16}, to_block(np.fft.rfft(x16.astype(np.float64)), np.float16), atol=2e-2, rtol=5e-3)
    # Irfft: the half spectrum, cut or zero-padded to n/2+1 bins as numpy does
    for dt in (np.float32, np.float64):
        for m, n in ((5, 8), (5, 9), (4, 8), (8, 6), (1, 1), (3, 2)):
            z = signal((2, m))
            x = to_block(z, dt)
            for norm in ("backward", "forward"):
                want = np.fft.irfft(from_block(x), n=n, norm=norm).astype(dt)
                yield simple(f"Irfft_{dt.__name__}_m{m}_n{n}_{norm}", "Irfft", {"x": x}, want, atol=tol(dt, n), rtol=0,
                             n=I(n), norm=S(norm))
    z = signal((3, 6)).astype(np.complex64)
    yield simple("Irfft_c64", "Irfft", {"x": z}, np.fft.irfft(z.astype(np.complex128), n=10).astype(np.float32),
                 atol=tol(np.float32, 10), rtol=0, n=I(10))
    # a round trip through Rfft and Irfft in float64 returns the signal
    x = rng.standard_normal((2, 33))
    yield Case("Rfft_Irfft_roundtrip_f64", [node("Rfft", ["x"], ["f"], norm=S("ortho")), node("Irfft", ["f"], ["y"], n=I(33), norm=S("ortho"))],
               {"x": x}, {"y": x}, atol=1e-13, rtol=0)
    # errors
    bad = [
        ("Fft_odd_block", "Fft", rng.standard_normal((2, 5)).astype(np.float32), {}, "INVALID_ARGUMENT"),
        ("Fft_rank0", "Fft", np.float32(1.0), {}, "INVALID_ARGUMENT"),
        ("Fft_int", "Fft", np.zeros((4,), np.int32), {}, "INVALID_ARGUMENT"),
        ("Fft_bad_norm", "Fft", np.zeros((4,), np.float32), {"norm": S("unitary")}, "INVALID_ARGUMENT"),
        ("Fft_bad_inverse", "Fft", np.zeros((4,), np.float32), {"inverse": I(2)}, "INVALID_ARGUMENT"),
        ("Rfft_complex", "Rfft", np.zeros((4,), np.complex64), {}, "INVALID_ARGUMENT"),
        ("Rfft_empty", "Rfft", np.zeros((2, 0), np.float32), {}, "INVALID_ARGUMENT"),
        ("Irfft_n0", "Irfft", np.zeros((4,), np.float32), {"n": I(0)}, "INVALID_ARGUMENT"),
    ]
    for name, op, x, attrs, code in bad:
        if op == "Irfft" and "n" not in attrs:
            attrs["n"] = I(4)
        yield Case(name, [node(op, ["x"], ["y"], **attrs)], {"x": x}, {}, expect_error=code, modes=["lazy"])
    yield Case("Irfft_missing_n", [node("Irfft", ["x"], ["y"])], {"x": np.zeros((4,), np.float32)}, {},
               expect_error="INVALID_ARGUMENT", modes=["lazy"])
