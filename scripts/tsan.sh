#!/usr/bin/env bash
# ThreadSanitizer (issue 8): builds build-tsan/ (the default compiler, -fsanitize=thread through
# RLX_TSAN=ON) with only the tests that drive rlx from several threads, and runs them under TSan:
#   unit.test_executable_threads  executables in parallel, one shared compiled executable, trace
#                                 erasure, commit on one thread and sync on another, the CPU
#                                 kernels' thread pool entered by four threads (RLX_NUM_THREADS=4)
#   unit.test_executable_async    asynchronous commit / sync (MLX's stream threads)
#   unit.test_custom              custom ops registered, looked up and unregistered by 8 threads
# MLX is an uninstrumented wheel: tests/tsan.supp names the MLX functions whose internal hand-offs
# TSan cannot see; any other report fails the test (TSan's exit code 66).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tests=(test_executable_threads test_executable_async test_custom)
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLX_WERROR=ON -DRLX_USE_OPENBLAS=ON -DRLX_TSAN=ON >/dev/null
cmake --build build-tsan -j "$(nproc)" --target "${tests[@]}"
export TSAN_OPTIONS="suppressions=$root/tests/tsan.supp:${TSAN_OPTIONS:-}"
pattern=$(IFS='|'; echo "^unit\.(${tests[*]})\$")
(cd build-tsan && ctest --output-on-failure -j "$(nproc)" -R "$pattern")
