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
# ONNX import from the static library: protobuf-c must come along.  A file
# that is not protobuf is refused by protobuf-c's parser (or, in a tessera
# built without protobuf-c, by the message that says what to install).
printf '\377\377\377\377\017' > "$work/bad.onnx"
onnx_refused() {
  if "$@" "$work/bad.onnx" 2> "$work/onnx.err"; then
    echo "onnx_info accepted a file that is not a model"; return 1
  fi
  grep -E "protobuf does not parse|built without ONNX import" "$work/onnx.err"
}
onnx_refused "$work/app/onnx_info"

echo "== pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/vadd-pc" examples/outoftree/vadd.c \
   $(pkg-config --cflags --libs tessera)
LD_LIBRARY_PATH="$prefix/lib" "$work/vadd-pc"
# the static library through pkg-config --static: Libs.private names
# LLVM, protobuf-c and the system libraries
static_libs="$(pkg-config --libs --static tessera)"
# shellcheck disable=SC2046,SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$work/onnx-pc" examples/outoftree/onnx_info.c \
   $(pkg-config --cflags tessera) ${static_libs/-ltessera/-l:libtessera.a}
onnx_refused "$work/onnx-pc"

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
