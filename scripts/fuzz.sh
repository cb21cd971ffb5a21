#!/usr/bin/env bash
# Fuzzing (libFuzzer with Debian's clang, AddressSanitizer + UndefinedBehaviorSanitizer).
#   scripts/fuzz.sh [SECONDS]   builds build-fuzz/, replays every committed reproducer in
#                               tests/fuzz/regressions/<target>/ (each must end cleanly), then runs
#                               each target for SECONDS (default 60) from its seed corpus, with
#                               libFuzzer's -seed RLX_FUZZ_SEED (default 1: CI explores the same
#                               inputs every run; set another for a campaign).
# Seeds: fuzz_onnx the ONNX backend test models (Debian libonnx-testdata and the onnx wheel's node
# tests), fuzz_npy their input .npy files converted by tests/fuzz/seeds.py, fuzz_graph random bytes,
# fuzz_gguf small GGUF files written by gguf-py (every value type, tensor types, tiny llama models).
# A crash leaves its input in build-fuzz/findings/<target>/; commit it under regressions/ with the fix.
# A negative size reaching malloc fails the run too (no input is saved: replay the corpus to find it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
secs=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLX_SANITIZE=ON -DRLX_FUZZ=ON \
  -DBUILD_TESTING=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_onnx fuzz_npy fuzz_graph fuzz_gguf
# An allocation over 2 GiB fails (NULL) instead of reaching libFuzzer's malloc limit: rlx must then
# return RESOURCE_EXHAUSTED, which is what a valid graph with a huge output tests. The targets set
# rlx's allocation limit to 256 MiB (RLX_MAX_ALLOCATION, tests/fuzz/fuzz_util.h), far under that
# cap and the 4 GiB RSS limit, so rlx refuses a larger buffer before MLX allocates it.
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=2048:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
opts=(-rss_limit_mb=4096 -malloc_limit_mb=4096 -timeout=60 -max_len=65536)
seeds=build-fuzz/seeds
.venv/bin/python tests/fuzz/seeds.py "$seeds"
# A size of 2^63 bytes or more is a negative size converted to size_t: ASan refuses it (NULL, a
# warning) and rlx copes, but the arithmetic behind it is a bug, so its warning fails the run.
fuzz() {
  local log=build-fuzz/last.log
  "$@" 2>&1 | tee "$log"
  if grep -E 'failed to allocate 0x[89a-f][0-9a-f]{15} ' "$log"; then
    echo "fuzz.sh: a negative size reached malloc (above)"
    exit 1
  fi
}
for t in fuzz_onnx fuzz_npy fuzz_graph fuzz_gguf; do
  reg=tests/fuzz/regressions/$t
  if compgen -G "$reg/*" >/dev/null; then
    echo "fuzz.sh: replaying $(ls "$reg" | wc -l) reproducers of $t"
    fuzz build-fuzz/tests/fuzz/$t "${opts[@]}" "$reg"/*
  fi
done
for t in fuzz_onnx fuzz_npy fuzz_graph fuzz_gguf; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus" "build-fuzz/findings/$t"
  echo "fuzz.sh: $t for ${secs}s"
  fuzz build-fuzz/tests/fuzz/$t "${opts[@]}" -seed="${RLX_FUZZ_SEED:-1}" -max_total_time="$secs" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/findings/$t/" "$corpus" "$seeds/$t"
done
echo "fuzz.sh: no crash"
