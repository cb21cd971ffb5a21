#!/bin/sh
# The model-zoo benchmark on the CPU: every zoo model (or those named with --models), rlx lazy and
# compiled vs ONNX Runtime with 1 and 2 threads, medians of interleaved rounds, outputs checked
# against ONNX Runtime. Needs the build (scripts/build.sh) and the model packages of
# scripts/requirements-models.txt; the classics are written once into ~/.cache/rlx/zoo (~1.2 GB).
# Arguments go to zoo.py (--help lists them). Takes ~15 minutes on 2 cores.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
exec nice "$root/.venv/bin/python" "$root/bench/zoo/zoo.py" --lib "$root/build/librlx.so" "$@"
