#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): the
# quantized-weight ops and low-precision types of issue 10 on MLX's CUDA backend, against the same
# oracles as on the CPU (gguf-py, ml_dtypes, numpy): DequantMatMul / DequantGroupedMatMul for every
# scheme (GGUF blocks, int, MX and NVFP4 through quantized_matmul/gather_qmm, FP8), Cast to and
# from float8/float4/int4/int2, FakeQuantize (ema), Llada2GroupLimitedGate. float64 cases are
# reported as skipped on the GPU. Prints CTest's summary: all tests should pass.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${RLX_BUILD:-$root/build}
(cd "$build" && ctest -R "gpu.ops.(dequant|lowp|quant|gate)$" --output-on-failure)
