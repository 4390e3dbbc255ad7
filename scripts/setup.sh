#!/usr/bin/env bash
# Installs what tessera needs on Debian 12 (only the missing packages) and
# configures + builds it.  Usage: scripts/setup.sh BUILD_DIR [cmake options]
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS="build-essential cmake pkg-config check libsubunit-dev llvm-dev libopenblas-dev libdnnl-dev gnuplot-nox"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "tessera: installing$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

build="${1:-build}"
shift || true
cmake -S . -B "$build" "$@" >/dev/null
cmake --build "$build" -j"$(nproc)"
