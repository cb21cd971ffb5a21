"""The GGUF reader (rlx/gguf.h) against gguf-py's GGUFReader (the PyPI package gguf, llama.cpp's own
Python implementation of the format): files written by gguf-py's GGUFWriter with every metadata
value type, arrays, unicode strings, a custom alignment and tensors of plain and quantized ggml
types are read through librlx (ctypes) and through `rlx info`, and every key, type, value, tensor
name, type, shape, offset and byte must match. Then hostile files: every truncation of a valid
file, seeded random byte corruptions, and headers with huge counts or lengths must give a clean
error (rlx info exits 1 with a DATA_LOSS/UNIMPLEMENTED message), never a crash or a hang.

usage: test_gguf.py BUILD_DIR [--hostile-only]   (the sanitizer build runs the hostile files only:
its librlx cannot be loaded into an uninstrumented Python through ctypes)"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

import gguf
import numpy as np

build = sys.argv[1]
hostile_only = "--hostile-only" in sys.argv[2:]
rlx_cli = os.path.join(build, "rlx")
lib = None if hostile_only else ctypes.CDLL(os.path.join(build, "librlx.so"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL", what)


class Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_uint32), ("n_dims", ctypes.c_int32), ("dims", ctypes.c_int64 * 4),
                ("offset", ctypes.c_uint64), ("nbytes", ctypes.c_size_t), ("data", ctypes.c_void_p)]


vp, sz, u64, i64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int64
for name, res, args in [("rlx_gguf_open", vp, [ctypes.c_char_p, ctypes.POINTER(vp)]), ("rlx_gguf_close", None, [vp]),
                        ("rlx_status_message", ctypes.c_char_p, [vp]), ("rlx_status_free", None, [vp]),
                        ("rlx_gguf_num_kv", sz, [vp]), ("rlx_gguf_kv_key", ctypes.c_char_p, [vp, sz]),
                        ("rlx_gguf_kv_type", vp, [vp, sz, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(u64)]),
                        ("rlx_gguf_kv_int", vp, [vp, sz, u64, ctypes.POINTER(i64)]),
                        ("rlx_gguf_kv_float", vp, [vp, sz, u64, ctypes.POINTER(ctypes.c_double)]),
                        ("rlx_gguf_kv_string", vp, [vp, sz, u64, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(sz)]),
                        ("rlx_gguf_num_tensors", sz, [vp]), ("rlx_gguf_tensor_info", vp, [vp, sz, ctypes.POINTER(Tensor)]),
                        ("rlx_gguf_find_tensor", vp, [vp, ctypes.c_char_p, ctypes.POINTER(sz)]),
                        ("rlx_gguf_alignment", u64, [vp])]:
    if lib:
        getattr(lib, name).restype = res
        getattr(lib, name).argtypes = args


def ok(st, what):
    if st:
        msg = lib.rlx_status_message(st).decode()
        lib.rlx_status_free(st)
        raise AssertionError(f"{what}: {msg}")


def write_model(path):
    """Every value type, arrays, unicode, alignment 64, plain and quantized tensors."""
    rng = np.random.default_rng(3)
    w = gguf.GGUFWriter(path, "llama")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 250); w.add_int8("t.i8", -100); w.add_uint16("t.u16", 65000); w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4_000_000_000); w.add_int32("t.i32", -2_000_000_000); w.add_float32("t.f32", 0.1)
    w.add_bool("t.bool", True); w.add_uint64("t.u64", 2**62 + 5); w.add_int64("t.i64", -(2**62)); w.add_float64("t.f64", 1e-300)
    w.add_string("t.str", "héllo wörld ✓ 中文"); w.add_string("t.empty", "")
    w.add_array("t.ints", [1, -2, 3]); w.add_array("t.floats", [0.5, -1.25]); w.add_array("t.strs", ["a", "", "▁the", "<0x0A>"])
    w.add_array("t.noarr", [])
    tensors = {"f32": rng.standard_normal((3, 5)).astype(np.float32), "f16": rng.standard_normal((64,)).astype(np.float16),
               "f32_4d": rng.standard_normal((2, 3, 1, 4)).astype(np.float32)}
    for k, v in tensors.items():
        w.add_tensor(k, v)
    q = gguf.quants.quantize(rng.standard_normal((2, 256)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("q_Q8_0", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    for qt in (gguf.GGMLQuantizationType.Q4_K, gguf.GGMLQuantizationType.Q6_K):  # gguf-py cannot quantize these: raw blocks
        block, nbytes = gguf.GGML_QUANT_SIZES[qt]
        q = rng.integers(0, 256, size=(3, 2 * nbytes), dtype=np.uint8)
        w.add_tensor(f"q_{qt.name}", q, raw_shape=q.shape, raw_dtype=qt)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()


def compare_with_reader(path):
    r = gguf.GGUFReader(path)
    f = vp()
    ok(lib.rlx_gguf_open(path.encode(), ctypes.byref(f)), "open")
    try:
        fields = {k: v for k, v in r.fields.items() if not k.startswith("GGUF.")}
        n = lib.rlx_gguf_num_kv(f)
        check(n == len(fields), f"kv count {n} vs {len(fields)}")
        for i in range(n):
            key = lib.rlx_gguf_kv_key(f, i).decode()
            fld = fields.get(key)
            check(fld is not None, f"key {key} unknown to gguf-py")
            if fld is None:
                continue
            t, et, cnt = ctypes.c_int(), ctypes.c_int(), u64()
            ok(lib.rlx_gguf_kv_type(f, i, ctypes.byref(t), ctypes.byref(et), ctypes.byref(cnt)), key)
            check(t.value == int(fld.types[0]), f"{key}: type {t.value} vs {fld.types}")
            want = fld.contents()
            vals = want if isinstance(want, list) else [want]
            check(cnt.value == len(vals), f"{key}: count {cnt.value} vs {len(vals)}")
            elem = int(fld.types[-1])
            for j, v in enumerate(vals):
                if elem == 8:
                    s, ln = ctypes.c_char_p(), sz()
                    ok(lib.rlx_gguf_kv_string(f, i, j, ctypes.byref(s), ctypes.byref(ln)), key)
                    check(ctypes.string_at(s, ln.value).decode() == v, f"{key}[{j}]: string differs")
                elif elem in (6, 12):
                    d = ctypes.c_double()
                    ok(lib.rlx_gguf_kv_float(f, i, j, ctypes.byref(d)), key)
                    check(d.value == float(np.float32(v) if elem == 6 else v), f"{key}[{j}]: {d.value} vs {v}")
                else:
                    x = i64()
                    ok(lib.rlx_gguf_kv_int(f, i, j, ctypes.byref(x)), key)
                    check(x.value == int(v), f"{key}[{j}]: {x.value} vs {v}")
        check(lib.rlx_gguf_alignment(f) == 64, "alignment")
        check(lib.rlx_gguf_num_tensors(f) == len(r.tensors), "tensor count")
        for i, rt in enumerate(r.tensors):
            t = Tensor()
            ok(lib.rlx_gguf_tensor_info(f, i, ctypes.byref(t)), rt.name)
            check(t.name.decode() == rt.name, f"tensor {i} name")
            check(t.type == int(rt.tensor_type), f"{rt.name}: type {t.type} vs {rt.tensor_type}")
            check(list(t.dims[:t.n_dims]) == [int(d) for d in rt.shape], f"{rt.name}: dims {list(t.dims[:t.n_dims])} vs {list(rt.shape)}")
            check(t.nbytes == rt.n_bytes, f"{rt.name}: {t.nbytes} bytes vs {rt.n_bytes}")
            got = ctypes.string_at(t.data, t.nbytes)
            check(got == rt.data.tobytes(), f"{rt.name}: data bytes differ")
            k = sz()
            ok(lib.rlx_gguf_find_tensor(f, rt.name.encode(), ctypes.byref(k)), "find")
            check(k.value == i, f"find {rt.name}")
    finally:
        lib.rlx_gguf_close(f)
    out = subprocess.run([rlx_cli, "info", path], capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, f"rlx info: {out.stderr}")
    for rt in r.tensors:
        dims = ", ".join(str(int(d)) for d in rt.shape)
        check(f"  {rt.name}: {rt.tensor_type.name} [{dims}]".lower() in out.stdout.lower(), f"rlx info lists {rt.name}")
    check('t.str: string = "héllo wörld ✓ 中文"' in out.stdout, "rlx info prints the unicode string")
    check("t.strs: array[string x 4]" in out.stdout, "rlx info prints an array")


def info_fails_cleanly(path, what):
    try:
        out = subprocess.run([rlx_cli, "info", path], capture_output=True, text=True, errors="replace", timeout=60)
    except subprocess.TimeoutExpired:
        check(False, f"{what}: rlx info hung")
        return
    check(out.returncode in (0, 1), f"{what}: exit {out.returncode} (signal?) {out.stderr[-300:]}")
    if out.returncode == 1:
        check("error:" in out.stderr, f"{what}: no error message")
    return out


def hostile(path, tmp):
    data = open(path, "rb").read()
    bad = os.path.join(tmp, "bad.gguf")
    # every truncation point in the header, metadata and tensor infos, then a few into the data
    r = gguf.GGUFReader(path)
    data_start = min(int(t.data_offset) for t in r.tensors)
    data_end = max(int(t.data_offset) + int(t.n_bytes) for t in r.tensors)  # gguf-py pads the file after this
    cuts = list(range(0, 64)) + list(range(64, data_start + 1, 5)) + [data_start, data_start + 7, data_end - 1]
    for cut in cuts:
        open(bad, "wb").write(data[:cut])
        out = info_fails_cleanly(bad, f"truncated at {cut}")
        if out is not None:
            check(out.returncode == 1 and "DATA_LOSS" in out.stderr, f"truncated at {cut}: not DATA_LOSS: {out.stderr[-200:]}")
    rnd = random.Random(11)
    for k in range(60):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(data_start)] = rnd.randrange(256)
        open(bad, "wb").write(bytes(b))
        info_fails_cleanly(bad, f"corruption {k}")
    # huge counts and lengths in a tiny file
    import struct
    for what, blob in [("huge kv count", struct.pack("<IIQQ", 0x46554747, 3, 0, 2**62)),
                       ("huge tensor count", struct.pack("<IIQQ", 0x46554747, 3, 2**62, 0)),
                       ("huge key length", struct.pack("<IIQQQ", 0x46554747, 3, 0, 1, 2**63)),
                       ("huge array", struct.pack("<IIQQQ", 0x46554747, 3, 0, 1, 1) + b"k" + struct.pack("<IIQ", 9, 4, 2**61)),
                       ("version 1", struct.pack("<IIII", 0x46554747, 1, 0, 0)),
                       ("bad magic", b"GGUX" + bytes(20))]:
        open(bad, "wb").write(blob)
        out = info_fails_cleanly(bad, what)
        check(out is not None and out.returncode == 1, f"{what}: accepted")


with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.gguf")
    write_model(path)
    if not hostile_only:
        compare_with_reader(path)
    hostile(path, tmp)
print(f"{'FAILED' if failures else 'ok'}: {len(failures)} failures")
sys.exit(1 if failures else 0)
