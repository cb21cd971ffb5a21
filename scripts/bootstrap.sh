#!/usr/bin/env bash
# Installs everything rlx needs on a fresh Debian 12 machine, idempotently:
# Debian packages (apt-get) and the pinned Python packages in the project-local .venv.
# RLX_BACKEND=cuda installs MLX's CUDA package instead of the CPU one; RLX_WHEELS=DIR works offline
# (no apt-get: missing Debian packages are listed; Python packages from DIR), see scripts/venv.sh.
# RLX_DEBS=DIR (offline too): the .deb files in DIR (scripts/fetch_offline.sh DIR fetches them:
# protobuf-c, cJSON, cmocka, SLEEF, a font) are unpacked into .deps/ with dpkg-deb -x, no root
# needed, their pkg-config files pointed there; scripts/build.sh then builds against .deps/usr
# first (CMake's RLX_DEPS_PREFIX) and the binaries find those libraries through their run paths.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the folders named relative to where the command was given
[ -z "${RLX_DEBS:-}" ] || RLX_DEBS=$(cd "$RLX_DEBS" && pwd)
[ -z "${RLX_WHEELS:-}" ] || RLX_WHEELS=$(cd "$RLX_WHEELS" && pwd)
cd "$root"

debs=(cmake ninja-build gcc g++ pkg-config python3 python3-venv
      protobuf-c-compiler libprotobuf-c-dev libcjson-dev libpcre2-dev libcmocka-dev
      libonnx-dev libonnx-testdata libopenblas0-pthread libsleef-dev fonts-dejavu-core openmpi-bin libopenmpi-dev
      clang libclang-rt-14-dev)

unpacked=()
if [ -n "${RLX_DEBS:-}" ]; then
  compgen -G "$RLX_DEBS/*.deb" >/dev/null || { echo "bootstrap: no .deb files in RLX_DEBS=$RLX_DEBS" >&2; exit 1; }
  for f in "$RLX_DEBS"/*.deb; do unpacked+=("$(dpkg-deb -f "$f" Package)"); done
  want=$( (cd "$RLX_DEBS" && sha256sum ./*.deb) | sha256sum | cut -d' ' -f1)
  if [ "$(cat .deps/.rlx-debs 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: unpacking ${unpacked[*]} into .deps"
    rm -rf .deps
    mkdir -p .deps
    for f in "$RLX_DEBS"/*.deb; do dpkg-deb -x "$f" .deps; done
    # their pkg-config files name /usr: the unpacked tree instead
    for pc in .deps/usr/lib/*/pkgconfig/*.pc; do
      sed -i -E "s#(^[A-Za-z_]+=|-I|-L)/usr(/|\$| )#\1$root/.deps/usr\2#g" "$pc"
    done
    echo "$want" > .deps/.rlx-debs
  fi
fi

missing=()
for p in "${debs[@]}"; do
  [[ " ${unpacked[*]} " == *" $p "* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] && [ -n "${RLX_WHEELS:-}${RLX_DEBS:-}" ]; then
  echo "bootstrap: offline (RLX_WHEELS/RLX_DEBS): not installing ${missing[*]}; the build needs what it finds missing"
elif [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bootstrap: apt-get install ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# Python: the project-local virtual environment (scripts/venv.sh: RLX_BACKEND, RLX_WHEELS).
scripts/venv.sh
