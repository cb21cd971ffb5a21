#!/bin/sh
# all_sum bus bandwidth on 2 GPUs over NCCL, 1 MiB to 1 GiB: rlx's AllReduce graph op and MLX's
# own all_sum (bench/bench_allsum.c), then PyTorch's torch.distributed NCCL all_reduce in the same
# run (bench/allsum_torch.py), as one table with the ratios (issue 9's goal: rlx >= 0.9 of PyTorch).
# NVLink multicast stays off everywhere (NCCL_NVLS_ENABLE=0: a program that uses it can put a
# shared host's GPUs out of service). Builds nothing: it runs a build made against the mlx-cuda-13
# wheel (README, "GPU").
#   BUILD  that build directory (default .gpubuild, else build): rlx and bench/bench_allsum
#   PY     a Python with torch (default python3)
#   ROUNDS rounds per size (default 7)
# Runs, each printed as it comes:
#   1. pipelined (PyTorch's timing: N calls queued, one wait; the table the ratios use): the
#      graph op committed N times then synced (device handle in, no readback), MLX's all_sum
#      async_eval'd N times then waited for;
#   2. synchronous (each call waits for its result: per-call latency);
#   3. MLX's all_sum on an input uploaded from the host (CUDA unified memory, as rlx's device
#      handles are) instead of one computed on the GPU: whether the kind of memory matters;
#   4. PyTorch, then the table: busbw per size of torch, the graph op, MLX, MLX on the uploaded
#      input, and their ratios to torch.
# Exit status: 0 when every run completed (the ratios are reported, not checked); 77 without 2
# GPUs. ~3-5 minutes.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-}
[ -n "$build" ] || { [ -x "$root/.gpubuild/rlx" ] && build=$root/.gpubuild || build=$root/build; }
py=${PY:-python3}
rounds=${ROUNDS:-7}
export NCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L | wc -l)
[ "$ngpu" -ge 2 ] || { echo "allsum.sh: needs 2 GPUs, nvidia-smi lists $ngpu"; exit 77; }
"$build/rlx" version
bench="$build/rlx launch -n 2 --backend nccl -- $build/bench/bench_allsum --device gpu --min-kib 1024 --max-mib 1024 --rounds $rounds"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== 1. pipelined: rlx graph op and MLX all_sum"
$bench --variants graph,mlx --pipelined > "$tmp/pipelined"
cat "$tmp/pipelined"
echo "== 2. synchronous: rlx graph op and MLX all_sum"
$bench --variants graph,mlx
echo "== 3. pipelined: MLX all_sum on an uploaded input"
$bench --variants mlx --pipelined --peer-input uploaded > "$tmp/uploaded"
cat "$tmp/uploaded"
echo "== 4. PyTorch all_reduce, and the table"
"$py" "$root/bench/allsum_torch.py" --ranks 2 --min-mib 1 --max-mib 1024 --rounds "$rounds" --rlx "$tmp/pipelined" --uploaded "$tmp/uploaded"
