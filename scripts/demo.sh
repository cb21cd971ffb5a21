#!/usr/bin/env bash
# The main job from a fresh clone: set-up, build, then a pretrained OCR model through rlx on MLX's
# CPU backend, checked against ONNX Runtime. Extra arguments go to examples/ocr_demo.py.
# RLX_BACKEND=cuda: the same on an NVIDIA GPU (MLX's mlx-cuda-13 package, --device gpu);
# RLX_WHEELS=DIR RLX_DEBS=DIR: offline, from a folder of wheels and Debian packages
# (scripts/fetch_offline.sh DIR fetches them; scripts/venv.sh and scripts/bootstrap.sh use them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
scripts/build.sh release
device=cpu
[ "${RLX_BACKEND:-cpu}" = cuda ] && device=gpu
exec .venv/bin/python examples/ocr_demo.py build/rlx --device "$device" "$@"
