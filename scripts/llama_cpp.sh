#!/usr/bin/env bash
# llama.cpp as a test oracle and benchmark peer (never part of rlx): the llama.cpp that PyPI's
# llama-cpp-python sdist vendors, built once per pinned version into a cache folder outside the
# build trees, then the oracle program tests/gguf/llama_cpp_oracle.c linked against it.
#   scripts/llama_cpp.sh              builds what is missing, prints the oracle's path
#   scripts/llama_cpp.sh --installed  prints the oracle's path if it is built, else nothing (exit 1)
# Cache: $RLX_LLAMA_CPP_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rlx/llama.cpp)/<version>/{lib,include,bin},
# outside the clone, so fresh clones on one machine (CI) share it. Only libllama
# and ggml's CPU backend are built (Release; no tests, tools, examples, server, BLAS), with -j$(nproc).
# The oracle program is recompiled whenever its source changes (a second).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
version=0.3.36 # llama-cpp-python; its vendor/llama.cpp is the oracle
cache=${RLX_LLAMA_CPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rlx/llama.cpp}/$version
oracle_src=tests/gguf/llama_cpp_oracle.c
bin=$cache/bin/llama_cpp_oracle
if [ "${1:-}" = --installed ]; then
  [ -x "$bin" ] && [ "$(cat "$bin.src" 2>/dev/null)" = "$(sha256sum "$oracle_src" | cut -d' ' -f1)" ] && echo "$bin" && exit 0
  exit 1
fi

if [ ! -f "$cache/.built" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  start=$(date +%s)
  echo "llama_cpp: pip download llama-cpp-python==$version (sdist)" >&2
  .venv/bin/python -m pip download -q --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$work" >&2
  tar xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work"
  src=$work/llama_cpp_python-$version/vendor/llama.cpp
  echo "llama_cpp: building libllama + ggml CPU (Release, -j$(nproc)) into $cache" >&2
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_CURL=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=ON "-DCMAKE_INSTALL_PREFIX=$cache" >/dev/null
  nice -n 10 cmake --build "$work/build" --target llama -j "$(nproc)" >&2
  cmake --install "$work/build" --component Unspecified >/dev/null 2>&1 || cmake --install "$work/build" >/dev/null
  echo "llama_cpp: built in $(( $(date +%s) - start )) s" >&2
  touch "$cache/.built"
fi

lib=$cache/lib
[ -d "$lib" ] || lib=$cache/lib64
mkdir -p "$cache/bin"
hash=$(sha256sum "$oracle_src" | cut -d' ' -f1)
if [ "$(cat "$bin.src" 2>/dev/null)" != "$hash" ] || [ ! -x "$bin" ]; then
  cc -std=c17 -O2 -Wall -Wextra -Werror -o "$bin" "$oracle_src" -I"$cache/include" -L"$lib" -lllama \
    -lggml -lggml-base -Wl,--disable-new-dtags,-rpath,"$lib" -lm # DT_RPATH: libllama finds libggml there too
  echo "$hash" > "$bin.src"
fi
echo "$bin"
