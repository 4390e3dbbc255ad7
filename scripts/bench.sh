#!/usr/bin/env bash
# tessera's main job in one command: build tessera (installing what is
# missing), then time its generated GEMM and conv2d kernels against naive C,
# OpenBLAS and oneDNN on a few ResNet-50 and BERT shapes, and write the
# results as JSON and a bar chart.
#
# Usage: scripts/bench.sh [extra tessera-bench options, e.g. --threads 1]
# Environment: BUILD_DIR (default build).  For other problems run
# BUILD_DIR/bench/tessera-bench gemm|conv2d ... (see its --help).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${BUILD_DIR:-build}"
# Timings from a sanitizer build would be meaningless: build without them.
scripts/setup.sh "$build" -DTESSERA_SANITIZE=OFF

# OpenBLAS picks the kernels for this CPU itself; a core type inherited
# from the environment (some machines set OPENBLAS_CORETYPE=Haswell) would
# make the baseline slower than it is on an AVX-512 CPU.
unset OPENBLAS_CORETYPE
mkdir -p out
status=0
"$build/bench/tessera-bench" summary --json out/bench.json --plot out/bench.png "$@" || status=$?

echo
[ -f out/bench.json ] && echo "JSON results: $PWD/out/bench.json"
[ -f out/bench.png ] && echo "chart:        $PWD/out/bench.png (data: $PWD/out/bench.dat)"
if [ "$status" -ne 0 ]; then
  echo "tessera-bench exited with status $status (1: a result was wrong or a kernel failed)" >&2
fi
exit "$status"
