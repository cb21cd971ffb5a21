#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): calibrates
# the CPU and the GPU (figures cached in $XDG_CACHE_HOME/rlx or ~/.cache/rlx), then runs the cost
# model's validation on both devices: predicted vs measured time per zoo model and op microbenchmark,
# the share predicted within 2x, and whether the predicted faster device is the measured one.
# Arguments go to bench/cost_model.py (e.g. --rounds 5, --no-micro, --models bert,resnet50).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/build/rlx" version
"$root/build/rlx" calibrate --device all --force
exec "$root/.venv/bin/python" "$root/bench/cost_model.py" "$root/build/rlx" --device both --json cost_model_gpu.json "$@"
