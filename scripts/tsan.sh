#!/usr/bin/env bash
# Builds tessera with ThreadSanitizer (clang-14, TESSERA_TSAN) in build-tsan
# and runs the tests labelled THREADS (CMakeLists.txt) through CTest; a data
# race fails the test.  Suppressions, each with its reason, are in
# tests/tsan.supp.  Code JIT-compiled by LLVM is not instrumented, so races
# inside generated kernels are out of its sight.  Usage: scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-missing.sh build-essential cmake pkg-config check libsubunit-dev llvm-dev \
  clang-14 libclang-rt-14-dev

cmake -S . -B build-tsan -DTESSERA_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
# Only the labelled tests are built.
tests=$(cd build-tsan && ctest -N -L THREADS 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: *//p')
if [ -z "$tests" ]; then
  echo "tsan: no test carries the THREADS label" >&2
  exit 1
fi
cmake --build build-tsan -j2 --target $tests
cd build-tsan
ctest --output-on-failure -L THREADS
