#!/usr/bin/env bash
# Configures and builds rlx. Usage: [RLX_BACKEND=cpu|cuda] scripts/build.sh [release|asan]
#   release -> build/       (warnings are errors)
#   asan    -> build-asan/  (AddressSanitizer + UndefinedBehaviorSanitizer, warnings are errors)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
kind=${1:-release}
case "$kind" in
  release) dir=build; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan) dir=build-asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DRLX_SANITIZE=ON) ;;
  *) echo "usage: $0 [release|asan]" >&2; exit 2 ;;
esac
# RLX_BACKEND=cuda: against the venv's mlx-cuda-13 (scripts/venv.sh). Its MLXConfig.cmake needs the
# CUDA toolkit (CUDA_HOME, default /usr/local/cuda) and cuDNN (the venv's nvidia-cudnn-cu13, or
# CUDNN_ROOT) at configure time; the CPU stream's BLAS stays the wheel's (no OpenBLAS).
if [ "${RLX_BACKEND:-cpu}" = cuda ]; then
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cudnn=${CUDNN_ROOT:-$site/nvidia/cudnn}
  flags+=(-DRLX_USE_OPENBLAS=OFF "-DCUDAToolkit_ROOT=${CUDA_HOME:-/usr/local/cuda}"
          "-DCUDNN_INCLUDE_PATH=$cudnn/include" "-DCUDNN_LIBRARY_PATH=$cudnn/lib")
else
  flags+=(-DRLX_USE_OPENBLAS=ON)
fi
# Debian packages unpacked by scripts/bootstrap.sh (RLX_DEBS) come first.
[ -d .deps/usr ] && flags+=("-DRLX_DEPS_PREFIX=$root/.deps/usr")
cmake -S . -B "$dir" -G Ninja -DRLX_WERROR=ON "${flags[@]}" >/dev/null
cmake --build "$dir" -j "$(nproc)"
