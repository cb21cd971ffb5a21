#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): the
# GGUF Llama-family models of tests/gguf/test_llama.py (F32, F16, Q8_0, quantized embedding, qwen2)
# on the GPU against the float64 numpy forward pass (prints one line per model with the max logit
# error and "ok"), then `rlx generate --device gpu` on a small model (its tokens/s line).
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/build/rlx" version
"$root/.venv/bin/python" "$root/tests/gguf/test_llama.py" "$root/build" --device gpu
exec "$root/.venv/bin/python" "$root/tests/gguf/test_generate.py" "$root/build" --device gpu
