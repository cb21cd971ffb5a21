#!/bin/sh
# On the GPU machine, from a checkout built against the mlx-cuda-13 wheel (README, "GPU"): the
# kernel registry's GPU checks (issue 13): a CUDA source kernel in every mode (unit test_custom),
# the built-in batched LU solve kernel against numpy (ops.linalg on the GPU, incl. a singular
# system reported in status), seeded Sample on the GPU, then bench_solve (built-in kernel vs MLX's
# solve) and torch.linalg.solve on the same sizes.
set -e
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${RLX_BUILD:-$root/build}
"$build/tests/test_custom"
"$build/examples/custom_ops" --device gpu
(cd "$build" && ctest -R "gpu.ops.(linalg|sample)" --output-on-failure)
"$build/bench/bench_solve" --device gpu
python3 "$root/bench/solve_torch.py"
