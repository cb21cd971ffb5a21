#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): profiles
# GPT-2 (seq 128) and ResNet-50 batch 8 per op family, rlx (lazy, compiled) against PyTorch (eager,
# torch.compile), with ncu's kernel durations (bench/zoo/gpu_profile.py says what is measured).
# Each engine runs twice per model: once alone for its wall time, once under ncu for its kernels.
# Prints per model a table (wall ms, GPU kernel ms and kernel count per run, ms per op family) and
# the heaviest kernels; keeps the raw files in $OUT (default gpu_profile/). ~10 minutes.
# Environment: PY (Python with torch/transformers/torchvision; default python3), LIB (librlx.so
# built for CUDA; default build/librlx.so), NCU (default ncu), PRECISION (fp32 or tf32; default fp32).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PY:-python3}
lib=${LIB:-$root/build/librlx.so}
ncu=${NCU:-ncu}
out=${OUT:-gpu_profile}
prec=${PRECISION:-fp32}
mkdir -p "$out"
for model in gpt2 resnet50_b8; do
  for eng in rlx_lazy rlx_compiled torch_eager torch_compile; do
    echo "== $model $eng" >&2
    args="run --engine $eng --model $model --lib $lib --precision $prec"
    "$py" "$root/bench/zoo/gpu_profile.py" $args --runs 1 > "$out/$model.$eng.wall"
    "$ncu" --profile-from-start off --csv --page raw --metrics gpu__time_duration.sum \
      "$py" "$root/bench/zoo/gpu_profile.py" $args --runs 2 > "$out/$model.$eng.csv"
    # the run under ncu says how many runs it profiled
    grep profiled_runs "$out/$model.$eng.csv" | sed 's/^.*profiled_runs/profiled_runs/' >> "$out/$model.$eng.wall"
  done
done
exec "$py" "$root/bench/zoo/gpu_profile.py" report "$out"
