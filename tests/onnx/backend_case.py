"""Writing ONNX models in the backend-test layout (CASE/model.onnx, CASE/test_data_set_0/input_K.pb
and output_K.pb, the layout of the onnx package's node tests) and running the conformance runner
(tests/onnx/conformance.c) over them; shared by the generated-model scripts in tests/onnx."""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def fresh_dir(work, name):
    """WORK/name, emptied."""
    root = os.path.join(work, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    return root


def save_case(d, model, inputs, outputs):
    """Writes model and its test data into folder d; inputs and outputs: {name: array}, in order."""
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, (k, v) in enumerate(items.items()):
            onnx.save_tensor(numpy_helper.from_array(np.asarray(v), k), os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"))


def run_expected(runner, suite, root, names, expect, results, env=None):
    """Runs the conformance runner over root expecting exactly `names` to pass (listed in the file
    `expect`), prints every result line but the passes, and returns (exit code, result lines)."""
    with open(expect, "w") as f:
        f.write("".join(n + "\n" for n in sorted(names)))
    rc = subprocess.call([runner, suite, root, "--expect", expect, "--results", results], env=env)
    with open(results) as f:
        lines = f.readlines()
    sys.stdout.write("".join(line for line in lines if not line.startswith("PASS")))
    return rc, lines
