#!/usr/bin/env bash
# Makes the Python environment that generates the ONNX models and runs ONNX
# Runtime as the reference (scripts/onnx_models.py): a virtual environment at
# ${TESSERA_VENV:-<repo>/.venv} with numpy, onnx and onnxruntime.  Does
# nothing, quickly and silently, when that environment already imports them;
# otherwise (re)creates it, installing python3 and python3-venv first when
# missing.  Usage: scripts/python-env.sh
set -euo pipefail
venv="$(realpath -m "${TESSERA_VENV:-$(dirname "$0")/../.venv}")"
cd "$(dirname "$0")/.."
py="$venv/bin/python"
check='import onnx, onnxruntime, numpy'

if [ -x "$py" ] && "$py" -c "$check" >/dev/null 2>&1; then
  exit 0
fi

scripts/install-missing.sh python3 python3-venv
echo "tessera: installing Python packages (numpy onnx onnxruntime) into $venv"
# A venv whose interpreter is gone or cannot run (moved, Python upgraded) is
# rebuilt from scratch; a working one only gets the missing packages.
if ! { [ -x "$py" ] && "$py" -c 'import sys' >/dev/null 2>&1 &&
       "$py" -m pip --version >/dev/null 2>&1; }; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
fi
"$py" -m pip install -q --disable-pip-version-check numpy onnx onnxruntime
"$py" -c "$check"
