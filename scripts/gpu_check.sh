#!/usr/bin/env bash
# The GPU checks in one run: the CUDA test suites, then tessera-bench on the
# GPU (fp32, fp16, bf16 and TF32 GEMM against cuBLAS, GEMMs of shapes that
# no tile divides, the ResNet-50 3x3 layers against cuDNN) and the GPU
# tutorial.  Without a usable GPU the suites still run (their device cases
# skip, NVRTC's run) and the benchmarks are skipped with the reason.
#
# Usage: scripts/gpu_check.sh [--build DIR | --bundle FILE.tar.xz] [OUTDIR]
#        scripts/gpu_check.sh --list-tests
#   --build DIR     the programs of a build tree (default: build)
#   --bundle FILE   the programs of a scripts/bundle.sh bundle, for a
#                   machine without tessera's build dependencies
#   OUTDIR          where the logs go (default gpu-check): summary.txt,
#                   tests.log, bench.log and the benchmarks' JSON, 8 files
# CUDA's libraries (libcuda, NVRTC, cuBLAS, cuDNN) are found where the
# driver, the toolkit and Python's nvidia-* packages put them.
# Exit status: 0 when every suite passed or skipped and every benchmark
# that ran was correct, 1 otherwise, 2 on a bad command line.
set -uo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"

# The suites that build, compile or launch CUDA kernels.
tests=(test_cuda test_cuda_exec test_cuda_rfactor test_cuda_schedules test_cuda_shapes
       test_tensorcore test_double_buffer test_storage_align test_op_schedules test_names test_mustfail_api
       test_mustfail_cuda test_mustfail_cudashape test_mustfail_cudatime)

usage() { sed -n '8,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build="$src/build" bundle="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --list-tests) printf '%s\n' "${tests[@]}"; exit 0 ;;
    --build) [ $# -ge 2 ] || usage; build="$2"; shift 2 ;;
    --bundle) [ $# -ge 2 ] || usage; bundle="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "gpu_check: unknown option '$1'" >&2; usage ;;
    *) [ -z "$out" ] || usage; out="$1"; shift ;;
  esac
done
out="${out:-gpu-check}"
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

# ---- the programs ---------------------------------------------------------
if [ -n "$bundle" ]; then
  [ -f "$bundle" ] || { echo "gpu_check: no bundle '$bundle' (scripts/bundle.sh makes one)" >&2; exit 2; }
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  # tar needs xz for .tar.xz; Python's tarfile reads it without.
  if ! tar -C "$work" -xJf "$bundle" 2>/dev/null; then
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$bundle" "$work" 2>/dev/null || { echo "gpu_check: cannot unpack '$bundle'" >&2; exit 2; }
  fi
  bin="$work/tessera-bundle/bin"
  bench="$bin/tessera-bench" tutorial="$bin/tessera-tutorial" testdir="$bin"
  export LD_LIBRARY_PATH="$work/tessera-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "programs: bundle $bundle ($(sed -n 's/^commit: //p' "$work/tessera-bundle/MANIFEST"))"
else
  [ -d "$build" ] || { echo "gpu_check: no build tree '$build' (scripts/setup.sh builds one)" >&2; exit 2; }
  build="$(cd "$build" && pwd)"
  bench="$build/bench/tessera-bench" tutorial="$build/tessera-tutorial" testdir="$build"
  say "programs: build tree $build ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'))"
fi

# ---- CUDA's libraries -----------------------------------------------------
# The directory of the first copy of each library found, on the loader's
# path: the toolkit's before the Python packages', the driver's own mount.
roots=(/usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/local/cuda/lib64
       /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/lib64)
while IFS= read -r sp; do [ -d "$sp/nvidia" ] && roots+=("$sp/nvidia"); done < <(
  python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
for lib in libcuda.so.1 libnvrtc.so libcublas.so libcudnn.so.9; do
  found=""
  for r in "${roots[@]}"; do
    [ -d "$r" ] || continue
    found="$(find "$r/" -maxdepth 4 -name "$lib*" \( -type f -o -type l \) 2>/dev/null | sort | head -1)"
    [ -n "$found" ] && break
  done
  if [ -n "$found" ]; then
    d="$(dirname "$found")"
    case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d" ;; esac
    say "library: $lib -> $found"
  else
    say "library: $lib not found"
  fi
done
gpu="none"
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  gpu="${gpu:-none}"
fi
say "GPU: $gpu"
# With a GPU, every GPU-bound function the suites check through the
# interpreter also runs on it (TESSERA_TEST_CUDA, tests/testutil.h).
device_checks=0
[ "$gpu" != "none" ] && device_checks=1

# ---- the suites -----------------------------------------------------------
status=0
: > "$out/tests.log"
passed=0 skipped=0 failed=0
for t in "${tests[@]}"; do
  exe="$testdir/$t"
  if [ ! -x "$exe" ]; then
    say "test $t: MISSING ($exe)"; failed=$((failed + 1)); status=1; continue
  fi
  start=$SECONDS
  (cd "$out" && CK_DEFAULT_TIMEOUT=600 TESSERA_SOURCE_DIR="$src" TESSERA_TEST_CUDA=$device_checks \
     timeout 900 "$exe") \
    > "$out/$t.log" 2>&1
  rc=$?
  { echo "==== $t (exit $rc, $((SECONDS - start)) s)"; cat "$out/$t.log"; } >> "$out/tests.log"
  rm -f "$out/$t.log"
  case $rc in
    0) say "test $t: passed ($((SECONDS - start)) s)"; passed=$((passed + 1)) ;;
    77) say "test $t: skipped"; skipped=$((skipped + 1)) ;;
    *) say "test $t: FAILED (exit $rc)"; failed=$((failed + 1)); status=1 ;;
  esac
done
say "tests: $passed passed, $skipped skipped, $failed failed"
if [ "$gpu" != "none" ] && [ $skipped -gt 0 ]; then
  say "WARNING: a GPU is present but $skipped suite(s) skipped: see tests.log for the reason"
  status=1
fi

# ---- the benchmarks -------------------------------------------------------
: > "$out/bench.log"
run_bench() { # NAME JSON ARGS...
  local name="$1" json="$2"
  shift 2
  local start=$SECONDS
  echo "==== $name: $*" >> "$out/bench.log"
  if [ -n "$json" ]; then set -- "$@" --json "$out/$json"; fi
  timeout 600 "$@" >> "$out/bench.log" 2>&1
  local rc=$?
  echo "==== $name: exit $rc, $((SECONDS - start)) s" >> "$out/bench.log"
  return $rc
}
run_bench "gemm f32" gemm_f32.json "$bench" gemm --target cuda
rc=$?
if [ $rc -eq 3 ]; then
  say "benchmarks: skipped, no usable GPU ($(grep -v '^====' "$out/bench.log" | grep -m1 . || echo 'see bench.log'))"
else
  [ $rc -eq 0 ] && say "bench gemm f32: ok" || { say "bench gemm f32: FAILED (exit $rc)"; status=1; }
  for dt in f16 bf16 tf32; do
    if run_bench "gemm $dt" "gemm_$dt.json" "$bench" gemm --target cuda --dtype "$dt"; then
      say "bench gemm $dt: ok"
    else say "bench gemm $dt: FAILED"; status=1; fi
  done
  # Shapes no tile divides, skinny and odd ones: each is checked against
  # the CPU result before it is timed.
  if run_bench "gemm shapes" "" "$bench" gemm --target cuda --repeat 5 --size 1000 --size 1023 \
       --shape 1,4096,4096 --shape 4096,1,4096 --shape 17,33,65 --shape 4096,16,4096 \
       --shape 3,3,3; then
    say "bench gemm odd shapes: ok"
  else say "bench gemm odd shapes: FAILED"; status=1; fi
  if run_bench "conv2d" conv2d.json "$bench" conv2d --target cuda; then
    say "bench conv2d: ok"
  else say "bench conv2d: FAILED"; status=1; fi
  if run_bench "tutorial gpu" "" "$tutorial" gpu; then
    say "tutorial gpu: ok"
  else say "tutorial gpu: FAILED"; status=1; fi
  # tessera's rows of every table (their ratio columns) and the geomeans.
  grep -E '^(====|problem|geomean)| tessera +[0-9]' "$out/bench.log" | grep -v ': exit ' \
    >> "$summary"
fi
say "gpu_check: $([ $status -eq 0 ] && echo passed || echo FAILED); logs in $out"
exit $status
