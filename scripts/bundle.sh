#!/usr/bin/env bash
# Builds a relocatable binary bundle of tessera for a GPU machine that has
# a CUDA driver but none of tessera's build dependencies (no LLVM, Check,
# OpenBLAS or oneDNN): libtessera.so with LLVM linked in statically, the
# GPU test suites, tessera-bench and tessera-tutorial, and every shared
# library they need beyond glibc and the C++ runtime.
# The CUDA libraries are not in it: tessera opens libcuda, NVRTC, cuBLAS
# and cuDNN at run time, from the machine it runs on.
#
# Usage: scripts/bundle.sh [OUT.tar.xz]   (default build-bundle/tessera-bundle.tar.xz)
# Run it with scripts/gpu_check.sh --bundle OUT.tar.xz (README, "Checking on
# a GPU machine").
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
out="${1:-$src/build-bundle/tessera-bundle.tar.xz}"
case "$out" in /*) ;; *) out="$src/$out" ;; esac
build="$src/build-bundle/build"
stage="$src/build-bundle/tessera-bundle"

scripts/install-missing.sh build-essential cmake pkg-config check libsubunit-dev llvm-dev \
  libopenblas-dev libdnnl-dev libprotobuf-c-dev protobuf-c-compiler xz-utils

mapfile -t tests < <(scripts/gpu_check.sh --list-tests)
echo "== bundle: configure and build (static LLVM) in $build"
cmake -S . -B "$build" -DTESSERA_LLVM_STATIC=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_SKIP_BUILD_RPATH=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target tessera_shared tessera-bench tessera-tutorial \
  "${tests[@]}"

rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/lib"
cp "$build/libtessera.so" "$stage/lib/"
cp "$build/bench/tessera-bench" "$build/tessera-tutorial" "$stage/bin/"
for t in "${tests[@]}"; do cp "$build/$t" "$stage/bin/"; done
strip --strip-unneeded "$stage"/bin/* "$stage/lib/libtessera.so"

# Every library the programs load, except those every Linux with a CUDA
# driver has (glibc's and the C++ runtime, whose newer versions there are
# backward compatible; an older copy here could shadow what cuDNN needs).
base='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libtessera)\.so'
for f in "$stage"/bin/* "$stage/lib/libtessera.so"; do
  LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $base ]]; then cp -L "$path" "$stage/lib/$name"; fi
done
missing=$(for f in "$stage"/bin/*; do LD_LIBRARY_PATH="$stage/lib" ldd "$f"; done | grep "not found" || true)
if [ -n "$missing" ]; then
  echo "bundle: unresolved libraries:" >&2
  echo "$missing" >&2
  exit 1
fi

{
  echo "tessera bundle"
  echo "commit: $(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version | head -1)"
  echo "LLVM: $(llvm-config --version) (static)"
  echo "programs: $(cd "$stage/bin" && echo *)"
  echo "libraries: $(cd "$stage/lib" && echo *)"
} > "$stage/MANIFEST"

mkdir -p "$(dirname "$out")"
tar -C "$(dirname "$stage")" -cf - "$(basename "$stage")" | xz -T0 -6 > "$out.tmp"
mv "$out.tmp" "$out"
echo "bundle: $out ($(du -h "$out" | cut -f1)); run it with scripts/gpu_check.sh --bundle $out"
