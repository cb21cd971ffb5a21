#!/usr/bin/env bash
# Installs everything rlx needs on a fresh Debian 12 machine, idempotently:
# Debian packages (apt-get) and the pinned Python packages in the project-local .venv.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

debs=(cmake ninja-build gcc g++ pkg-config python3 python3-venv
      protobuf-c-compiler libprotobuf-c-dev libcjson-dev libcmocka-dev
      libonnx-dev libonnx-testdata libopenblas0-pthread libsleef-dev fonts-dejavu-core openmpi-bin libopenmpi-dev)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bootstrap: apt-get install ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# Python: prefer the python3 on PATH (a venv-capable 3.10+), the virtual environment is local.
stamp=.venv/.rlx-requirements
want=$(cat scripts/requirements.txt scripts/requirements-models.txt | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: pip install (pinned) into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements.txt
  .venv/bin/python -m pip install -q --no-deps -r scripts/requirements-models.txt
  echo "$want" > "$stamp"
fi
