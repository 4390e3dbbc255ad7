#!/usr/bin/env bash
# Installs what tessera needs on Debian 12 (only the missing packages, and
# the Python environment of scripts/python-env.sh) and configures + builds
# it.  Usage: scripts/setup.sh BUILD_DIR [cmake options]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-missing.sh build-essential cmake pkg-config check libsubunit-dev llvm-dev \
  libopenblas-dev libdnnl-dev gnuplot-nox libprotobuf-c-dev protobuf-c-compiler
# numpy, onnx and onnxruntime in a virtual environment, for the ONNX models
# and the ONNX Runtime reference (docs/MODELS.md).
scripts/python-env.sh

build="${1:-build}"
shift || true
cmake -S . -B "$build" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
