#!/usr/bin/env bash
# The whole test suite from a fresh clone: set-up, then CTest on the release build and on the
# AddressSanitizer + UndefinedBehaviorSanitizer build (leak detection on), the thread-safety tests
# under ThreadSanitizer, then the fuzz targets.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
scripts/bootstrap.sh
jobs=$(nproc)
scripts/llama_cpp.sh >/dev/null # llama.cpp, the GGUF tests' oracle (cached outside the clone)
scripts/build.sh release
(cd build && ctest --output-on-failure -j "$jobs")
scripts/build.sh asan
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
(cd build-asan && ctest --output-on-failure -j "$jobs" -L sanitize)
scripts/tsan.sh    # build-tsan/: the tests that use threads, under ThreadSanitizer
scripts/fuzz.sh 60 # replays the committed fuzz reproducers, then 60 s per fuzz target
echo "test.sh: all tests passed (release, ASan/UBSan and TSan builds, fuzz targets)"
