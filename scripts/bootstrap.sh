#!/usr/bin/env bash
# Installs everything rlx needs on a fresh Debian 12 machine, idempotently:
# Debian packages (apt-get) and the pinned Python packages in the project-local .venv.
# RLX_BACKEND=cuda installs MLX's CUDA package instead of the CPU one; RLX_WHEELS=DIR works offline
# (no apt-get: missing Debian packages are listed; Python packages from DIR), see scripts/venv.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

debs=(cmake ninja-build gcc g++ pkg-config python3 python3-venv
      protobuf-c-compiler libprotobuf-c-dev libcjson-dev libcmocka-dev
      libonnx-dev libonnx-testdata libopenblas0-pthread libsleef-dev fonts-dejavu-core openmpi-bin libopenmpi-dev
      clang libclang-rt-14-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ -n "${RLX_WHEELS:-}" ]; then
  echo "bootstrap: offline (RLX_WHEELS): not installing ${missing[*]}; the build needs what it finds missing"
elif [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bootstrap: apt-get install ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# Python: the project-local virtual environment (scripts/venv.sh: RLX_BACKEND, RLX_WHEELS).
scripts/venv.sh
