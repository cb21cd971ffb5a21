#!/usr/bin/env bash
# llama.cpp as a test oracle and benchmark peer (never part of rlx): the llama.cpp that PyPI's
# llama-cpp-python sdist vendors, built once per pinned version into a cache folder outside the
# build trees, then the oracle program tests/gguf/llama_cpp_oracle.c linked against it.
#   scripts/llama_cpp.sh              builds what is missing, prints the oracle's path
#   scripts/llama_cpp.sh --installed  prints the oracle's path if it is built, else nothing (exit 1)
# Cache: $RLX_LLAMA_CPP_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rlx/llama.cpp)/<version>/{lib,include,bin},
# outside the clone, so fresh clones on one machine (CI) share it. Only libllama
# and ggml's CPU backend are built (Release; no tests, tools, examples, server, BLAS), with -j$(nproc),
# for this machine's CPU (-march=native) without AMX: on an Intel Xeon VM with AMX-INT8 ggml's AMX
# matmul (ggml_backend_amx_mul_mat) crashed with SIGSEGV on Q8_0 weights (test_llama_cpp.py's
# llama-q8_0). The cache is rebuilt when these settings change (.built holds them).
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

# ggml's own -march=native (GGML_NATIVE) would turn AMX on; its per-extension options off, the
# compiler flags below choose the instructions
arch="-march=native -mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
config="GGML_NATIVE=OFF $arch"
if [ "$(cat "$cache/.built" 2>/dev/null)" != "$config" ]; then
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
    -DLLAMA_CURL=OFF -DGGML_BLAS=OFF -DGGML_NATIVE=OFF -DGGML_SSE42=OFF -DGGML_AVX=OFF -DGGML_AVX2=OFF \
    -DGGML_BMI2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF "-DCMAKE_C_FLAGS=$arch" "-DCMAKE_CXX_FLAGS=$arch" \
    "-DCMAKE_INSTALL_PREFIX=$cache" >/dev/null
  nice -n 10 cmake --build "$work/build" --target llama -j "$(nproc)" >&2
  cmake --install "$work/build" --component Unspecified >/dev/null 2>&1 || cmake --install "$work/build" >/dev/null
  echo "llama_cpp: built in $(( $(date +%s) - start )) s" >&2
  echo "$config" > "$cache/.built"
  rm -f "$bin"  # relinked below against the new libraries
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
