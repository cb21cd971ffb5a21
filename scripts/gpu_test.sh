#!/usr/bin/env bash
# The GPU tests and benchmarks in one command, on a machine with an NVIDIA GPU (README, "GPU"):
#   RLX_WHEELS=DIR RLX_DEBS=DIR scripts/gpu_test.sh [STEP...]
#                                                  offline: wheels and Debian packages from DIR
#                                                  (scripts/fetch_offline.sh DIR fetches them)
#   scripts/gpu_test.sh [STEP...]                  with a package registry
# Steps (default: all, in this order):
#   setup  scripts/bootstrap.sh and scripts/build.sh release with RLX_BACKEND=cuda (mlx-cuda-13)
#   tests  rlx version (the GPU's name), CTest's GPU tests (label gpu: the op tests on MLX's CUDA
#          backend, float64 cases skipped) and the install test (find_package/pkg-config consumer)
#   demo   the main job on the GPU (examples/ocr_demo.py against ONNX Runtime), lazy, then compiled
#          with CUDA_HOME and CUDA_PATH unset (rlx finds the CUDA toolkit for NVRTC itself)
#   bench  rlx bench of the main job's model (the demo's input) on the GPU, lazy and compiled, and on
#          the CPU for comparison; JSON results in RLX_RESULTS (default build/gpu-results)
# RLX_BACKEND=cpu runs the same steps on MLX's CPU backend (GPU tests skipped, bench on the CPU
# only): how this script is checked on machines without a GPU. RLX_TEST_JOBS: ctest -j (default 4);
# RLX_BENCH_RUNS: timed runs per bench (default 50).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export RLX_BACKEND=${RLX_BACKEND:-cuda}
device=gpu
[ "$RLX_BACKEND" = cuda ] || device=cpu
results=${RLX_RESULTS:-$root/build/gpu-results}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(setup tests demo bench)
say() { printf '\n== gpu_test: %s\n' "$*"; }

failed=()
# Runs one command; a failure is recorded (and reported at the end), the script goes on.
try() { "$@" || failed+=("$*"); }

step_setup() {
  say "set-up and build (RLX_BACKEND=$RLX_BACKEND${RLX_WHEELS:+, wheels from $RLX_WHEELS})"
  scripts/bootstrap.sh && scripts/build.sh release
}

step_tests() {
  say "rlx version"
  try build/rlx version
  say "CTest: GPU tests and the install test"
  try ctest --test-dir build -L gpu -j "${RLX_TEST_JOBS:-4}" --output-on-failure
  try ctest --test-dir build -R '^install\.' --output-on-failure
}

step_demo() {
  say "main job, $device, lazy"
  try .venv/bin/python examples/ocr_demo.py build/rlx --device "$device" --mode lazy
  say "main job, $device, compiled (CUDA_HOME and CUDA_PATH unset)"
  try env -u CUDA_HOME -u CUDA_PATH .venv/bin/python examples/ocr_demo.py build/rlx --device "$device" --mode compiled
}

# rlx bench of the main job's model on device $1 in mode $2: JSON printed and kept in $results.
bench_one() {
  build/rlx bench "$model" --input "x=$results/x.npy" --device "$1" --mode "$2" --warmup 5 --runs "${RLX_BENCH_RUNS:-50}" \
    --json --quiet > "$results/bench-$1-$2.json" && cat "$results/bench-$1-$2.json"
}

step_bench() {
  mkdir -p "$results"
  local devices=(cpu)
  model=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "examples"); import ocr_demo; print(ocr_demo.MODEL)')
  .venv/bin/python -c 'import sys, numpy as np; sys.path.insert(0, "examples"); import ocr_demo as d
np.save(sys.argv[1], d.preprocess(d.render("The quick brown fox jumps over 13 lazy dogs")))' "$results/x.npy"
  [ "$device" = gpu ] && devices=(gpu cpu)
  for dev in "${devices[@]}"; do
    for mode in lazy compiled; do
      say "rlx bench, $dev, $mode"
      try bench_one "$dev" "$mode"
    done
  done
}

for step in "${steps[@]}"; do
  case "$step" in
    setup) step_setup || { echo "gpu_test: set-up failed" >&2; exit 1; } ;;
    tests | demo | bench) "step_$step" ;;
    *) echo "gpu_test: unknown step '$step' (setup, tests, demo, bench)" >&2; exit 2 ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "done: ${steps[*]}, all passed"
