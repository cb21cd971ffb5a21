#!/usr/bin/env bash
# The main job from a fresh clone: set-up, build, then a pretrained OCR model through rlx on MLX's
# CPU backend, checked against ONNX Runtime. Extra arguments go to examples/ocr_demo.py.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
scripts/build.sh release
exec .venv/bin/python examples/ocr_demo.py build/rlx "$@"
