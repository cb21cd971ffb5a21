#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): the zoo's
# classics (BERT-base, GPT-2, ResNet-50 batch 1 and 8; seeded weights) through rlx on the GPU (lazy
# and compiled) against PyTorch eager and torch.compile with the same weights, outputs checked
# against ONNX Runtime, in full fp32 in both engines (PRECISION=tf32: TF32 in both; MLX fixes the
# precision per process, so each precision is its own run). Prints a table (bench/zoo/gpu.py).
# ~6-8 minutes with empty compile caches. Environment: PY (Python with torch, transformers,
# torchvision, onnx, onnxruntime; default python3), LIB (librlx.so built for CUDA; default
# build/librlx.so). Arguments go to gpu.py (--models, --repeat, --no-torch-compile).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PY:-python3}
lib=${LIB:-$root/build/librlx.so}
exec "$py" "$root/bench/zoo/gpu.py" --lib "$lib" --precision "${PRECISION:-fp32}" "$@"
