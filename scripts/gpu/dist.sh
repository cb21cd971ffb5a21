#!/bin/sh
# On a host with 2 GPUs, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"):
# distributed rlx over MLX's NCCL backend (rlx/dist.h). NVLink multicast stays off everywhere
# (NCCL_NVLS_ENABLE=0: a program that uses it can put a shared host's GPUs out of service).
#  1. the collectives and graph ops on 2 GPUs (tests/dist/dist_collectives.c, closed-form checks);
#  2. the tensor-parallel decoder on 2 GPUs against the single-GPU run (tests/dist/dist_tp.c:
#     logits within 1e-5, identical tokens; TF32 off so both runs compute in float32);
#  3. all_sum bus bandwidth from 1 MiB to 1 GiB against PyTorch (scripts/gpu/allsum.sh).
# Environment: BUILD (the CUDA build directory; default build), PY (Python with torch; default
# python3). Prints each step's result; exit status 0 when steps 1 and 2 pass. ~2-4 minutes.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
py=${PY:-python3}
export NCCL_NVLS_ENABLE=0 MLX_ENABLE_TF32=0
ngpu=$(nvidia-smi -L | wc -l)
[ "$ngpu" -ge 2 ] || { echo "dist.sh: needs 2 GPUs, nvidia-smi lists $ngpu"; exit 77; }
cmake --build "$build" --target rlx_cli dist_collectives dist_tp bench_allsum
launch="$build/rlx launch -n 2 --backend nccl --"
echo "== 1. collectives and graph ops on 2 GPUs (nccl)"
$launch "$build/tests/dist/dist_collectives" --strict --gpu | grep -v "ok (expected"
echo "== 2. tensor-parallel decoder, 2 GPUs vs 1 GPU"
$launch "$build/tests/dist/dist_tp" --device gpu
echo "== 3. all_sum bus bandwidth, rlx and MLX, then PyTorch (scripts/gpu/allsum.sh)"
BUILD="$build" PY="$py" sh "$root/scripts/gpu/allsum.sh"
