#!/usr/bin/env bash
# Builds tessera as a library (no tests), installs it into a scratch prefix,
# and builds examples/outoftree against the installed copy three ways:
# find_package(tessera), pkg-config, and add_subdirectory() of the source
# tree; then runs what was built.  Usage: scripts/test_install.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
src="$PWD"
work="${1:-$src/build-install}"
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"

echo "== tessera: build and install into $prefix"
cmake -S . -B "$work/lib" -DTESSERA_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/lib" -j"$(nproc)" --target tessera tessera_shared >/dev/null
cmake --install "$work/lib" --prefix "$prefix" >/dev/null
test -f "$prefix/include/tessera/tessera.h"
test -f "$prefix/lib/pkgconfig/tessera.pc"
test -f "$prefix/lib/cmake/tessera/tesseraConfig.cmake"

echo "== find_package(tessera)"
cmake -S examples/outoftree -B "$work/app" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/app" -j"$(nproc)" >/dev/null
"$work/app/vadd"
LD_LIBRARY_PATH="$prefix/lib" "$work/app/linkage"

echo "== pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/vadd-pc" examples/outoftree/vadd.c \
   $(pkg-config --cflags --libs tessera)
LD_LIBRARY_PATH="$prefix/lib" "$work/vadd-pc"

echo "== add_subdirectory(tessera)"
mkdir -p "$work/parent"
cat > "$work/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(parent C CXX)
add_subdirectory("$src" tessera)
add_executable(vadd "$src/examples/outoftree/vadd.c")
target_link_libraries(vadd PRIVATE tessera)
CMAKE
cmake -S "$work/parent" -B "$work/parent/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/parent/build" -j"$(nproc)" --target vadd >/dev/null
"$work/parent/build/vadd"
echo "install test: all passed"
