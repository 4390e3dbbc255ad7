#!/usr/bin/env bash
# Builds tessera's libFuzzer targets (tests/fuzz/, clang with ASan and UBSan) in
# build-fuzz and runs each for SECONDS (default 60) on a corpus seeded from
# tests/fuzz/corpus/<target>.  Exits non-zero on any finding; the input that
# found it is left in build-fuzz/findings/<target>/ (rerun it with
# build-fuzz/tests/fuzz/<target> FILE; its bytes are also printed, so a
# finding in a log can be rebuilt with xxd -r -p).
#
# The run is seeded with FUZZ_SEED (default 1), so two runs of the same
# tree from the same corpus try the same inputs in the same order and a
# finding in CI is found again here; FUZZ_SEED=0 picks a fresh seed each
# run, for longer searches by hand.  A run for SECONDS tries as many inputs
# as the machine manages in that time; with --runs instead, each target
# tries a fixed number of inputs (about a minute's worth on two cores), as
# many on a slow or loaded machine as on a fast one: CI runs that.  (Runs
# still drift apart a little: thread-pool and timing paths add coverage
# that differs from run to run, and the fuzzer follows coverage.)
# Usage: scripts/fuzz.sh [SECONDS | --runs]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
seed="${FUZZ_SEED:-1}"

scripts/install-missing.sh build-essential cmake pkg-config check libsubunit-dev llvm-dev \
  clang-14 libclang-rt-14-dev libprotobuf-c-dev protobuf-c-compiler

cmake -S . -B build-fuzz -DTESSERA_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
targets="fuzz_simplify fuzz_schedule fuzz_onnx fuzz_api fuzz_graph_api"
cmake --build build-fuzz -j2 --target $targets

# Per target: the largest input and the time one input may take (the
# schedule fuzzer JIT-compiles every input with LLVM, tens of ms each; the
# ONNX fuzzer compiles the models that import, up to 20 nodes, twice; the
# API fuzzer makes up to 160 calls an input and builds at most two
# functions with LLVM; the graph API fuzzer compiles a graph at most twice).
declare -A max_len=([fuzz_simplify]=256 [fuzz_schedule]=128 [fuzz_onnx]=4096 [fuzz_api]=1024
                    [fuzz_graph_api]=1024)
declare -A timeout=([fuzz_simplify]=10 [fuzz_schedule]=60 [fuzz_onnx]=60 [fuzz_api]=60
                    [fuzz_graph_api]=60)
declare -A runs=([fuzz_simplify]=20000 [fuzz_schedule]=2500 [fuzz_onnx]=20000 [fuzz_api]=2000
                 [fuzz_graph_api]=2500)
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=""
for t in $targets; do
  work="build-fuzz/corpus/$t" found="build-fuzz/findings/$t"
  mkdir -p "$work" "$found"
  if [ "$secs" = "--runs" ]; then
    budget=(-runs="${runs[$t]}")
    echo "fuzz: $t for ${runs[$t]} inputs, seed $seed"
  else
    budget=(-max_total_time="$secs")
    echo "fuzz: $t for ${secs}s, seed $seed"
  fi
  # New inputs go to the work corpus; tests/fuzz/corpus/$t only seeds it.
  # tests/fuzz/$t.dict, where there is one, lists words worth inserting.
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  if ! build-fuzz/tests/fuzz/$t "${budget[@]}" -seed="$seed" -timeout="${timeout[$t]}" \
       -max_len="${max_len[$t]}" -rss_limit_mb=4096 -print_final_stats=1 ${dict[@]+"${dict[@]}"} \
       -artifact_prefix="$found/" "$work" "tests/fuzz/corpus/$t" \
       >"build-fuzz/$t.log" 2>&1; then
    failed="$failed $t"
    echo "fuzz: $t found a problem (build-fuzz/$t.log):"
    grep -v -E '^#[0-9]+ +(NEW|REDUCE|pulse)|NEW_FUNC' "build-fuzz/$t.log" | tail -n 60
    for f in "$found"/*; do
      [ -f "$f" ] || continue
      echo "fuzz: input $f, in hex (rebuild it with xxd -r -p):"
      od -An -v -tx1 "$f" | tr -d ' \n'
      echo
    done
  else
    grep -E '^Done|stat::number_of_executed_units' "build-fuzz/$t.log" | head -n 1
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: findings in$failed; inputs under build-fuzz/findings/"
  exit 1
fi
echo "fuzz: no findings"
