"""ONNX importer cases beyond the ONNX backend test data: one-node (or small) models whose expected
outputs come from onnx.reference.ReferenceEvaluator, written in the backend-test layout
(model.onnx + test_data_set_0/{input,output}_K.pb) and run through the conformance runner.

usage: importer_cases.py CONFORMANCE_RUNNER WORKDIR [--filter SUBSTRING]
Exits 1 unless every case passes."""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(7)
OPSET = 22


def f32(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


class Case:
    """A model of `nodes` over named inputs (dict name -> array, in order); outputs named in `outputs`."""

    def __init__(self, name, nodes, inputs, outputs, opset=OPSET, initializers=None, domains=None):
        self.name, self.nodes, self.inputs, self.outputs = name, nodes, inputs, outputs
        self.opset, self.initializers, self.domains = opset, initializers or {}, domains or {}

    def write(self, root):
        vi = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in self.inputs.items()]
        outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in self.outputs]
        inits = [numpy_helper.from_array(v, k) for k, v in self.initializers.items()]
        g = helper.make_graph(self.nodes, self.name, vi, outs, inits)
        imports = [helper.make_opsetid("", self.opset)] + [helper.make_opsetid(d, v) for d, v in self.domains.items()]
        m = helper.make_model(g, opset_imports=imports)
        want = ReferenceEvaluator(m).run(None, self.inputs)
        d = os.path.join(root, "test_" + self.name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for i, (k, v) in enumerate(self.inputs.items()):
            t = numpy_helper.from_array(np.asarray(v), k)
            open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
        for i, (k, v) in enumerate(zip(self.outputs, want)):
            t = numpy_helper.from_array(np.asarray(v), k)
            open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())


def one(name, op, inputs, n_out=1, opset=OPSET, domain="", **attrs):
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, list(inputs), outs, domain=domain or None, **attrs)
    return Case(name, [node], inputs, outs, opset=opset, domains={domain: 1} if domain else None)


def einsum_cases():
    eqs = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
           ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
           ("ii->i", [(4, 4)]), ("ii", [(3, 3)]), ("bii->b", [(2, 3, 3)]), ("ij->", [(3, 4)]), ("i,j->ij", [(3,), (4,)]),
           ("ijk->kji", [(2, 3, 4)]), ("ij,ij->ij", [(3, 4), (3, 4)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
           ("iij->j", [(2, 2, 3)]), ("ab,cb->ac", [(2, 3), (4, 3)]), ("i,i->", [(6,), (6,)])]
    for k, (eq, shapes) in enumerate(eqs):
        ins = {f"x{i}": f32(*s) for i, s in enumerate(shapes)}
        yield one(f"einsum_{k}", "Einsum", ins, equation=eq)


def all_cases():
    yield from einsum_cases()


def main():
    runner, work = sys.argv[1:3]
    filt = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--filter" else ""
    root = os.path.join(work, "importer_cases")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for c in all_cases():
        if filt in c.name:
            c.write(root)
    res = os.path.join(work, "importer_cases.txt")
    out = subprocess.run([runner, "importer", root, "--results", res], capture_output=True, text=True).stdout
    sys.stdout.write(out)
    for line in open(res):
        if not line.startswith("PASS"):
            sys.stdout.write(line)
    m = re.search(r"(\d+)/(\d+) passed", out)
    return 0 if m and m.group(1) == m.group(2) else 1


if __name__ == "__main__":
    sys.exit(main())
