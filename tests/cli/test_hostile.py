"""Bad inputs and hostile models through `rlx run` / `rlx info`: each must end with a clear status
(exit status 1, "rlx: error: CODE: message naming what was wrong"), never a crash, in every mode;
buffers over the allocation limit (RLX_MAX_ALLOCATION) are refused at run time and at import.
The oracle that the input is wrong is ONNX Runtime, which rejects the same input (or the ONNX spec,
where it says an index out of range is an error).

usage: test_hostile.py RLX_CLI"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

RLX = sys.argv[1]
MODES = ["eager", "lazy", "compiled"]
failures = 0


def check(cond, what, detail=""):
    global failures
    print(("ok   " if cond else "FAIL ") + what + ("" if cond else f": {detail}"))
    failures += 0 if cond else 1


def save(path, nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), path)
    return path


def rlx(*args, env=None):
    return subprocess.run([RLX, *args], capture_output=True, text=True, timeout=300, env=env and {**os.environ, **env})


def fails(r, code, *needles):
    """Exit status 1 (an error status, not a signal) and the message names every needle."""
    msg = r.stderr
    return r.returncode == 1 and f"{code}:" in msg and all(n in msg for n in needles), f"rc {r.returncode}: {msg.strip()[-400:]}"


def ort_rejects(path, feeds):
    try:
        ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    except Exception:  # noqa: BLE001 (ONNX Runtime raises its own exception types)
        return True
    return False


def npy(d, name, a):
    p = os.path.join(d, name + ".npy")
    np.save(p, a)
    return p


def input_checks(d):
    """Inputs checked against the model before import work begins."""
    m = save(os.path.join(d, "rec.onnx"), [h.make_node("Relu", ["x"], ["y"])],
             [h.make_tensor_value_info("x", T.FLOAT, ["batch", 3, 48, "width"])], [h.make_tensor_value_info("y", T.FLOAT, None)])
    short = npy(d, "short", np.zeros((1, 3, 32, 20), np.float32))
    check(ort_rejects(m, {"x": np.load(short)}), "oracle: ONNX Runtime rejects height 32 for a model fixed at 48")
    good, rank3 = npy(d, "good", np.zeros((1, 3, 48, 20), np.float32)), npy(d, "rank3", np.zeros((3, 48, 20), np.float32))
    ints = npy(d, "ints", np.zeros((1, 3, 48, 20), np.int64))
    for mode in MODES:
        ok, why = fails(rlx("run", m, "--input", f"x={short}", "--mode", mode), "INVALID_ARGUMENT", "input 'x' dim 2", "48", "32")
        check(ok, f"an input contradicting a fixed dim names the input, the dim, expected and got ({mode})", why)
        ok, why = fails(rlx("run", m, "--input", f"X={good}", "--mode", mode), "NOT_FOUND", "'X'", "inputs: x")
        check(ok, f"a misspelled input name is NOT_FOUND listing the model's inputs ({mode})", why)
        ok, why = fails(rlx("run", m, "--input", f"x={rank3}", "--mode", mode), "INVALID_ARGUMENT", "input 'x'", "rank 4", "rank 3")
        check(ok, f"a rank mismatch names the input and both ranks ({mode})", why)
        ok, why = fails(rlx("run", m, "--input", f"x={ints}", "--mode", mode), "INVALID_ARGUMENT", "input 'x'", "float32", "int64")
        check(ok, f"a dtype mismatch names the input and both dtypes ({mode})", why)


def index_checks(d):
    """Indices out of range: OUT_OF_RANGE naming the node, input, index and bound, in every mode."""
    m = save(os.path.join(d, "emb.onnx"), [h.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
             [h.make_tensor_value_info("table", T.FLOAT, [10, 4]), h.make_tensor_value_info("ids", T.INT64, [3])],
             [h.make_tensor_value_info("y", T.FLOAT, None)])
    table = npy(d, "table", np.zeros((10, 4), np.float32))
    ids = npy(d, "ids", np.array([1, 10, 2], np.int64))
    check(ort_rejects(m, {"table": np.load(table), "ids": np.load(ids)}), "oracle: ONNX Runtime rejects token id 10 of 10")
    for mode in MODES:
        r = rlx("run", m, "--input", f"table={table}", "--input", f"ids={ids}", "--mode", mode)
        ok, why = fails(r, "OUT_OF_RANGE", "Gather 'embed'", "input 1 holds index 10", "[-10, 10)")
        check(ok, f"an embedding lookup with a bad token id fails cleanly ({mode})", why)
    # constant data and indices: folded at import; used to crash inside MLX
    f = save(os.path.join(d, "fold.onnx"), [h.make_node("Gather", ["d", "i"], ["g"]), h.make_node("Add", ["g", "x"], ["y"])],
             [h.make_tensor_value_info("x", T.FLOAT, [1, 2])], [h.make_tensor_value_info("y", T.FLOAT, None)],
             [nh.from_array(np.zeros((3, 2), np.float32), "d"), nh.from_array(np.array([5], np.int64), "i")], 13)
    r = rlx("run", f, "--input", f"x={npy(d, 'x12', np.zeros((1, 2), np.float32))}")
    ok, why = fails(r, "OUT_OF_RANGE", "index 5", "[-3, 3)")
    check(ok, "a Gather of constants with an index out of range fails at import", why)
    # integer division by zero and INT_MIN / -1: defined (numpy's results), no SIGFPE
    dm = save(os.path.join(d, "div.onnx"), [h.make_node("Div", ["a", "b"], ["q"]), h.make_node("Mod", ["a", "b"], ["r"])],
              [h.make_tensor_value_info("a", T.INT32, [3]), h.make_tensor_value_info("b", T.INT32, [3])],
              [h.make_tensor_value_info("q", T.INT32, None), h.make_tensor_value_info("r", T.INT32, None)])
    a = npy(d, "a", np.array([np.iinfo(np.int32).min, 7, 5], np.int32))
    b = npy(d, "b", np.array([-1, 0, 2], np.int32))
    for mode in MODES:
        out = os.path.join(d, "div_" + mode)
        r = rlx("run", dm, "--input", f"a={a}", "--input", f"b={b}", "--mode", mode, "--output-dir", out)
        ok = r.returncode == 0
        if ok:
            q, rem = np.load(os.path.join(out, "q.npy")), np.load(os.path.join(out, "r.npy"))
            ok = q.tolist() == [np.iinfo(np.int32).min, 0, 2] and rem.tolist() == [0, 0, 1]
        check(ok, f"integer Div/Mod of INT_MIN by -1 and by 0 give numpy's results ({mode})", r.stderr.strip()[-300:])


def varint(n):
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def field(num, payload):
    """A length-delimited protobuf field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def hostile_files(d):
    """Malformed models: a status, not a crash (ONNX Runtime refuses each of them too)."""
    # messages nested 3000 deep: Graph.node -> Node.attribute -> Attribute.g -> Graph ...
    g = b""
    for _ in range(1000):
        g = field(1, field(5, field(6, g)))
    deep = os.path.join(d, "deep.onnx")
    with open(deep, "wb") as f:
        f.write(field(7, g))
    for cmd in (["info", deep], ["run", deep]):
        ok, why = fails(rlx(*cmd), "INVALID_ARGUMENT", "nests messages more than 100 deep")
        check(ok, f"`rlx {cmd[0]}` of a model nesting messages 3000 deep is refused before parsing", why)
    # a node without op_type
    n = onnx.NodeProto()
    n.input.append("x")
    n.output.append("y")
    n.name = "typeless"
    m = save(os.path.join(d, "typeless.onnx"), [n], [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, [2])])
    r = rlx("run", m, "--input", f"x={npy(d, 'x2', np.zeros(2, np.float32))}")
    ok, why = fails(r, "INVALID_ARGUMENT", "ONNX node 'typeless' has no op_type")
    check(ok, "a node without op_type is refused", why)
    check(rlx("info", m).returncode in (0, 1), "`rlx info` of a node without op_type ends normally")
    x2 = npy(d, "x2f", np.zeros(2, np.float32))

    def refused(name, nodes, inits, code, *needles, inputs=None):
        path = save(os.path.join(d, name + ".onnx"), nodes, inputs or [h.make_tensor_value_info("x", T.FLOAT, [2])],
                    [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
        ok, why = fails(rlx("run", path, "--input", f"x={x2}"), code, *needles)
        check(ok, f"{name} is refused with {code}", why)

    # Range whose element count is huge or not finite: refused before allocating
    for label, limit in (("huge", 1e15), ("infinite", float("inf"))):
        refused(f"range_{label}", [h.make_node("Range", ["s", "l", "d"], ["r"]), h.make_node("Add", ["x", "x"], ["y"])],
                [nh.from_array(np.array(0, np.float32), "s"), nh.from_array(np.array(limit, np.float32), "l"),
                 nh.from_array(np.array(1, np.float32), "d")], "RESOURCE_EXHAUSTED", "Range")
    # a declared shape whose value would take terabytes before any data exists
    refused("constant_of_shape_huge", [h.make_node("ConstantOfShape", ["shp"], ["c"]), h.make_node("Add", ["x", "x"], ["y"])],
            [nh.from_array(np.array([1 << 20, 1 << 20], np.int64), "shp")], "RESOURCE_EXHAUSTED", "bytes")
    # TfIdfVectorizer with a negative or huge ngram index
    xi = [h.make_tensor_value_info("x", T.INT64, [4])]
    for label, index in (("negative", -3), ("huge", 1 << 40)):
        path = save(os.path.join(d, f"tfidf_{label}.onnx"),
                    [h.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0,
                                 ngram_counts=[0], ngram_indexes=[index], pool_int64s=[5])],
                    xi, [h.make_tensor_value_info("y", T.FLOAT, None)], opset=9)
        r = rlx("run", path, "--input", f"x={npy(d, 'xi', np.zeros(4, np.int64))}")
        ok, why = fails(r, "OUT_OF_RANGE", "ngram_indexes")
        check(ok, f"TfIdfVectorizer with a {label} ngram index is refused", why)
    # Conv / ConvTranspose / MaxPool padding from auto_pad or output_shape with a zero stride (the
    # importer divided by it: fuzz_onnx) or with sizes whose padding overflows int64: refused
    x4 = [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 4, 4])]
    w = nh.from_array(np.ones((1, 1, 2, 2), np.float32), "w")
    big = (1 << 62) + 1
    for label, node, code, needle in (
            ("conv_same_stride0", h.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[0, 1]), "INVALID_ARGUMENT", "stride 0"),
            ("maxpool_same_stride0", h.make_node("MaxPool", ["x"], ["y"], auto_pad="SAME_LOWER", kernel_shape=[2, 2], strides=[1, 0]),
             "INVALID_ARGUMENT", "stride 0"),
            ("maxpool_same_dilation_overflow", h.make_node("MaxPool", ["x"], ["y"], auto_pad="SAME_UPPER", kernel_shape=[3, 3],
                                                            dilations=[big, 1]), "INVALID_ARGUMENT", "overflows"),
            ("convtranspose_same_stride_overflow", h.make_node("ConvTranspose", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[big, 1]),
             "INVALID_ARGUMENT", "overflows"),
            ("convtranspose_output_shape_overflow", h.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[1, 1, 8, 8],
                                                                 strides=[big, 1]), "INVALID_ARGUMENT", "overflows")):
        path = save(os.path.join(d, label + ".onnx"), [node], x4, [h.make_tensor_value_info("y", T.FLOAT, None)],
                    [w] if "conv" in label else [])
        ok, why = fails(rlx("run", path, "--input", f"x={npy(d, 'x4', np.zeros((1, 1, 4, 4), np.float32))}"), code, needle)
        check(ok, f"{label} is refused with {code}", why)
    # MaxPool's Indices are built from one node per window element: a huge window is refused
    mp = save(os.path.join(d, "maxpool_indices_huge.onnx"), [h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[100, 100])],
              [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 100, 100])],
              [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)])
    ok, why = fails(rlx("run", mp, "--input", f"x={npy(d, 'x100', np.zeros((1, 1, 100, 100), np.float32))}"), "UNIMPLEMENTED",
                    "MaxPool Indices over a window of more than 4096 elements")
    check(ok, "MaxPool Indices over a 100x100 window are refused", why)
    # GridSample over an empty spatial dim
    gs = save(os.path.join(d, "grid_empty.onnx"), [h.make_node("GridSample", ["x", "g"], ["y"])],
              [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 0, 4]), h.make_tensor_value_info("g", T.FLOAT, [1, 2, 2, 2])],
              [h.make_tensor_value_info("y", T.FLOAT, None)], opset=16)
    r = rlx("run", gs, "--input", f"x={npy(d, 'xe', np.zeros((1, 1, 0, 4), np.float32))}", "--input",
            f"g={npy(d, 'g', np.zeros((1, 2, 2, 2), np.float32))}")
    ok, why = fails(r, "INVALID_ARGUMENT", "empty spatial dim")
    check(ok, "GridSample over an empty spatial dim is refused", why)


def allocation_checks(d):
    """A buffer over the allocation limit (RLX_MAX_ALLOCATION, 1 MiB here) fails with
    RESOURCE_EXHAUSTED naming the node, its bytes and the limit: at run time in every mode, and
    while the importer folds constants; the same models run under the default limit."""
    limit = {"RLX_MAX_ALLOCATION": "1M"}
    shape = nh.from_array(np.array([2048, 2048], np.int64), "shape")
    m = save(os.path.join(d, "expand.onnx"), [h.make_node("Expand", ["x", "shape"], ["e"], name="wide"),
                                              h.make_node("ReduceSum", ["e"], ["y"], keepdims=0)],
             [h.make_tensor_value_info("x", T.FLOAT, [1])], [h.make_tensor_value_info("y", T.FLOAT, None)], [shape])
    x = npy(d, "x1", np.array([0.5], np.float32))
    want = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, {"x": np.load(x)})[0]
    for mode in MODES:
        out = os.path.join(d, "expand_" + mode)
        r = rlx("run", m, "--input", f"x={x}", "--mode", mode, "--output-dir", out)
        check(r.returncode == 0 and np.load(os.path.join(out, "y.npy")) == want,
              f"a 16 MiB intermediate runs under the default limit and matches ONNX Runtime ({mode})", r.stderr.strip()[-300:])
        ok, why = fails(rlx("run", m, "--input", f"x={x}", "--mode", mode, env=limit), "RESOURCE_EXHAUSTED", "Expand 'wide'",
                        "float32[2048,2048] would take 16777216 bytes", "allocation limit of 1048576 bytes")
        check(ok, f"the same intermediate over RLX_MAX_ALLOCATION=1M is refused ({mode})", why)
    f = save(os.path.join(d, "expand_fold.onnx"), [h.make_node("Expand", ["c", "shape"], ["e"], name="wide"),
                                                   h.make_node("ReduceSum", ["e"], ["s"], keepdims=0), h.make_node("Add", ["s", "x"], ["y"])],
             [h.make_tensor_value_info("x", T.FLOAT, [1])], [h.make_tensor_value_info("y", T.FLOAT, None)],
             [shape, nh.from_array(np.array([0.5], np.float32), "c")])
    r = rlx("run", f, "--input", f"x={x}", "--output-dir", os.path.join(d, "fold_out"))
    check(r.returncode == 0, "a constant 16 MiB intermediate folds under the default limit", r.stderr.strip()[-300:])
    ok, why = fails(rlx("run", f, "--input", f"x={x}", env=limit), "RESOURCE_EXHAUSTED", "Expand", "16777216 bytes",
                    "allocation limit of 1048576 bytes")
    check(ok, "folding it at import over RLX_MAX_ALLOCATION=1M is refused", why)
    ok, why = fails(rlx("run", f, "--input", f"x={x}", env={"RLX_MAX_ALLOCATION": "lots"}), "INVALID_ARGUMENT", "RLX_MAX_ALLOCATION",
                    "'lots' is not a size")
    check(ok, "an RLX_MAX_ALLOCATION that is not a size is refused", why)


with tempfile.TemporaryDirectory() as tmp:
    input_checks(tmp)
    index_checks(tmp)
    hostile_files(tmp)
    allocation_checks(tmp)
print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
