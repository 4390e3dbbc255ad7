#!/usr/bin/env bash
# The test command: installs what is missing, builds with AddressSanitizer
# and UndefinedBehaviorSanitizer, and runs every Check suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build-asan -DTESSERA_SANITIZE=ON
cd build-asan
ctest --output-on-failure -j"$(nproc)"
