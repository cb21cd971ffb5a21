"""Op-test cases for rlx: each case is a small rlx graph, its inputs, and expected outputs
computed by an independent oracle (numpy, or onnx.reference). run_cases.py writes cases to disk
and runs the C runner (op_runner.c) on them in eager, lazy and compiled modes."""
import json
import os

import numpy as np

MODES = ["eager", "lazy", "compiled"]


def I(v):
    return {"i": int(v)}


def F(v):
    return {"f": float(v)}


def IS(v):
    return {"is": [int(x) for x in v]}


def FS(v):
    return {"fs": [float(x) for x in v]}


def S(v):
    return {"s": str(v)}


def DT(name):
    return {"dtype": name}


def G(graph):
    """A sub-graph attribute: graph = {"inputs": [{"name", "dtype", "dims"}], "nodes": [...], "outputs": [{"name"}]}."""
    return {"g": graph}


def P(name):
    """A sub-graph param entry; its value is Case(params=...) or Case(sub_params=...)[name]."""
    return {"name": name, "file": f"params_{name}.npy"}


def C(name):
    """A sub-graph constant entry; its value is Case(sub_constants=...)[name]."""
    return {"name": name, "file": f"constants_{name}.npy"}


def node(op, inputs, outputs, **attrs):
    return {"op": op, "inputs": list(inputs), "outputs": list(outputs), "attrs": attrs}


def sym(k):
    """The rlx encoding of symbolic dim k (RLX_DIM_SYMBOL)."""
    return -2 - k


class Case:
    def __init__(self, name, nodes, inputs, outputs, atol=1e-6, rtol=1e-5, modes=MODES, params=None,
                 constants=None, dims=None, expect_error=None, sub_params=None, sub_constants=None, cpu_only=None,
                 expect_message=None, gpu_only=None, reset=None):
        """cpu_only: why the case cannot run on MLX's GPU backend (float64 data is detected
        automatically); op_runner skips it there and says so. gpu_only: likewise for a case whose
        expected outputs hold on the GPU only (skipped on the CPU). reset: (params, outputs): after
        the checked run these params are set again, and one more run must give these outputs."""
        self.cpu_only, self.gpu_only = cpu_only, gpu_only
        self.name, self.nodes, self.inputs, self.outputs = name, nodes, inputs, outputs
        self.atol, self.rtol, self.modes = atol, rtol, modes
        self.params, self.constants = params or {}, constants or {}
        self.dims = dims or {}
        self.reset = reset
        self.expect_error, self.expect_message = expect_error, expect_message
        # values of params/constants that only sub-graphs declare (see P and C)
        self.sub_files = {f"params_{k}.npy": v for k, v in (sub_params or {}).items()}
        self.sub_files.update({f"constants_{k}.npy": v for k, v in (sub_constants or {}).items()})

    def write(self, root):
        d = os.path.join(root, self.name.replace("/", "_"))
        os.makedirs(d, exist_ok=True)
        js = {"inputs": [], "params": [], "constants": [], "nodes": self.nodes, "outputs": [], "modes": self.modes}
        arrays = [*self.inputs.values(), *self.params.values(), *self.constants.values(), *self.outputs.values()]
        if self.gpu_only:
            js["gpu_only"] = self.gpu_only
        elif self.cpu_only:
            js["cpu_only"] = self.cpu_only
        elif any(np.asarray(a).dtype in (np.float64, np.complex128) for a in arrays) or "float64" in json.dumps(self.nodes):
            js["cpu_only"] = "float64: MLX has no float64 on GPUs"

        for group, items in (("inputs", self.inputs), ("params", self.params), ("constants", self.constants)):
            for k, v in items.items():
                f = f"{group}_{k}.npy"
                np.save(os.path.join(d, f), np.asarray(v))
                e = {"name": k, "file": f}
                if group == "inputs" and k in self.dims:
                    e["dims"] = self.dims[k]
                js[group].append(e)
        for f, v in self.sub_files.items():
            np.save(os.path.join(d, f), np.asarray(v))
        for k, v in self.outputs.items():
            f = f"out_{k}.npy"
            np.save(os.path.join(d, f), np.asarray(v))
            js["outputs"].append({"name": k, "file": f, "atol": self.atol, "rtol": self.rtol})
        if self.reset:
            params, outputs = self.reset
            js["reset"] = {"params": [], "outputs": []}
            for k, v in params.items():
                np.save(os.path.join(d, f"reset_params_{k}.npy"), np.asarray(v))
                js["reset"]["params"].append({"name": k, "file": f"reset_params_{k}.npy"})
            for k, v in outputs.items():
                np.save(os.path.join(d, f"reset_out_{k}.npy"), np.asarray(v))
                js["reset"]["outputs"].append({"name": k, "file": f"reset_out_{k}.npy", "atol": self.atol, "rtol": self.rtol})
        if self.expect_error:
            js["expect_error"] = self.expect_error
            if self.expect_message:
                js["expect_message"] = self.expect_message
            if not js["outputs"]:  # the failing node's outputs are the graph outputs
                js["outputs"] = [{"name": o} for o in self.nodes[-1]["outputs"]]
        with open(os.path.join(d, "case.json"), "w") as fh:
            json.dump(js, fh)
        return d


def simple(name, op, inputs, expected, atol=1e-6, rtol=1e-5, **attrs):
    """A one-node case: inputs (dict, in order) -> a single output 'out'."""
    return Case(name, [node(op, list(inputs), ["out"], **attrs)], inputs, {"out": expected}, atol=atol, rtol=rtol)


def error_case(name, op, inputs, code="INVALID_ARGUMENT", **attrs):
    """A one-node case whose graph building must fail with status `code` (checked in lazy mode)."""
    return Case(name, [node(op, list(inputs), ["y"], **attrs)], inputs, {}, expect_error=code, modes=["lazy"])
