"""Writes the cases of tests/ops/cases/<module>.py and runs op_runner on them.
usage: run_cases.py OP_RUNNER WORKDIR MODULE [--filter SUBSTRING]"""
import importlib
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    runner, work, module = sys.argv[1:4]
    filt = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--filter" else ""
    mod = importlib.import_module(f"cases.{module}")
    root = os.path.join(work, module)
    shutil.rmtree(root, ignore_errors=True)
    dirs = [c.write(root) for c in mod.cases() if filt in c.name]
    if not dirs:
        print(f"no cases in {module}")
        return 1
    return subprocess.call([runner] + dirs)


if __name__ == "__main__":
    sys.exit(main())
