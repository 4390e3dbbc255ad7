#!/usr/bin/env bash
# Installs those of the given Debian 12 packages that are missing, as
# scripts/setup.sh does (apt-get update first; sudo when not root).
# Usage: scripts/install-missing.sh PKG...
set -euo pipefail
missing=""
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "tessera: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
