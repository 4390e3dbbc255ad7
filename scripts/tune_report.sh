#!/usr/bin/env bash
# Tunes the operators tessera-bench knows, then benchmarks them tuned: every
# ResNet-50 conv layer (tessera-bench conv2d --layer list), the BERT-base
# GEMMs and MobileNet-v2's depthwise layers (tessera-bench depthwise --layer
# list), with tessera-tune into one log per thread count, then tessera-bench
# conv2d / gemm / depthwise --tuned LOG, and a summary per operator family:
# tuned tessera against the best of OpenBLAS and oneDNN, and against
# tessera's default schedules (timed in a second bench run without the log).
#
# Usage: scripts/tune_report.sh [BUDGET_SECONDS [THREADS...]]
#   BUDGET_SECONDS  tuning budget per operator (default 20)
#   THREADS         thread counts, one log and one set of tables each
#                   (default: all cores)
# Environment:
#   BUILD_DIR          the build (default build); configured without
#                      sanitizers and tessera-bench / tessera-tune built
#                      when missing or out of date
#   TUNE_REPORT_ONLY   comma-separated names to keep (res2_3x3, bert.qkv,
#                      dw1, ...): a quick look at a few operators
# Logs and the bench's JSON go to BUILD_DIR/tune/.  A log that already
# has a record for an operator seeds its search (tessera-tune resumes).
set -euo pipefail
cd "$(dirname "$0")/.."

budget=${1:-20}
shift || true
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=("$(nproc)")
if ! [[ $budget =~ ^[0-9]+([.][0-9]+)?$ ]] || ! awk -v b="$budget" 'BEGIN { exit !(b > 0 && b <= 86400) }'; then
  echo "tune_report.sh: BUDGET_SECONDS must be a number above 0 and at most 86400, got '$budget'" >&2
  exit 2
fi
for t in "${threads[@]}"; do
  if ! [[ $t =~ ^[1-9][0-9]{0,3}$ ]] || [ "$t" -gt 1024 ]; then
    echo "tune_report.sh: THREADS must be integers from 1 to 1024, got '$t'" >&2
    exit 2
  fi
done

build="${BUILD_DIR:-build}"
# Timings from a sanitizer build would be meaningless: build without them.
cmake -S . -B "$build" -DTESSERA_SANITIZE=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target tessera-bench tessera-tune >/dev/null
bench="$build/bench/tessera-bench"
tune="$build/bench/tessera-tune"
out="$build/tune"
mkdir -p "$out"
# As scripts/bench.sh: OpenBLAS picks the kernels for this CPU itself.
unset OPENBLAS_CORETYPE

# The BERT-base GEMMs of tessera-bench (bench/cli.c), M N K.
bert_names=(bert.qkv bert.ffn1 bert.ffn2)
bert_shapes=("128 768 768" "128 3072 768" "128 768 3072")

only=",${TUNE_REPORT_ONLY:-},"
keep() { [ "$only" = ",," ] || [[ $only == *",$1,"* ]]; }

conv_layers=() dw_layers=() dw_shapes=() gemms=() gemm_shapes=()
while read -r name _; do
  keep "$name" && conv_layers+=("$name")
done < <("$bench" conv2d --layer list)
# "dw2  1x96x112x112 dw 3x3 s2 p1" -> depthwise 1 96 112 112 3 2 1
while read -r name shape _ kernel stride pad; do
  keep "$name" || continue
  dw_layers+=("$name")
  dw_shapes+=("$(echo "$shape" | tr x ' ') ${kernel%%x*} ${stride#s} ${pad#p}")
done < <("$bench" depthwise --layer list)
for i in "${!bert_names[@]}"; do
  keep "${bert_names[$i]}" && gemms+=("${bert_names[$i]}") && gemm_shapes+=("${bert_shapes[$i]}")
done
total=$((${#conv_layers[@]} + ${#dw_layers[@]} + ${#gemms[@]}))
if [ "$total" -eq 0 ]; then
  echo "tune_report.sh: TUNE_REPORT_ONLY='${TUNE_REPORT_ONLY:-}' names no operator the bench knows" >&2
  exit 2
fi

# tune_one LOG T LABEL OP SHAPE...: one tessera-tune run, its time printed.
tune_one() {
  local log=$1 t=$2 label=$3 t0 t1
  shift 3
  t0=$(date +%s.%N)
  if ! "$tune" "$@" --budget "$budget" --threads "$t" --log "$log" >"$out/tune.out" 2>&1; then
    cat "$out/tune.out" >&2
    echo "tune_report.sh: tessera-tune $* failed" >&2
    return 1
  fi
  t1=$(date +%s.%N)
  awk -v l="$label" -v s="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" \
    '/^  tuned / { r = $4 } END { printf "  %-12s tuned in %6s s  (tuned / default as the tuner measured: %sx)\n", l, s, r }' \
    "$out/tune.out"
}

# summarize TUNED_JSON DEFAULT_JSON: per problem the tuned and default
# tessera times, the best library's, and the geometric means over the
# problems where no timing was flagged.  The GEMMs get their BERT names.
summarize() {
  local labels="" i
  for i in "${!gemms[@]}"; do labels+="$(echo "${gemm_shapes[$i]}" | tr ' ' x)=${gemms[$i]},"; done
  awk -v labels="$labels" '
    BEGIN {
      k = split(labels, kv, ",")
      for (i = 1; i <= k; i++)
        if (split(kv[i], pair, "=") == 2)
          label[pair[1]] = pair[2]
    }
    function field(line, key,   v) {
      if (!match(line, "\"" key "\": (\"[^\"]*\"|[^,}]*)"))
        return ""
      v = substr(line, RSTART + length(key) + 4, RLENGTH - length(key) - 4)
      gsub(/"/, "", v)
      return v
    }
    /"impl"/ {
      name = field($0, "name"); impl = field($0, "impl"); ms = field($0, "median_ms")
      ok = field($0, "status") == "ok"; rel = field($0, "reliable") == "true"
      if (!ok) next
      if (FILENAME == ARGV[2]) {
        if (impl == "tessera") { def[name] = ms; defrel[name] = rel }
        next
      }
      if (!(name in seen)) { seen[name] = 1; order[n++] = name }
      if (impl == "tessera") { tuned[name] = ms; tunedrel[name] = rel }
      else if (impl == "openblas" || impl == "onednn") {
        if (!(name in lib) || ms + 0 < lib[name] + 0) { lib[name] = ms; libname[name] = impl; librel[name] = rel }
      }
    }
    END {
      printf "  %-22s %11s %11s %11s %-8s %14s %13s\n", "problem", "default ms", "tuned ms", "best lib", "(lib)", "tuned/default", "tuned/lib"
      for (i = 0; i < n; i++) {
        p = order[i]
        d = (p in def) ? def[p] : ""; t = (p in tuned) ? tuned[p] : ""; l = (p in lib) ? lib[p] : ""
        sd = (d != "" && t != "") ? sprintf("%.2fx", d / t) : "-"
        sl = (l != "" && t != "") ? sprintf("%.2fx", l / t) : "-"
        flag = (d != "" && !defrel[p]) || (t != "" && !tunedrel[p]) || (l != "" && !librel[p])
        printf "  %-22s %11s %11s %11s %-8s %14s %13s%s\n", (p in label) ? label[p] : p, d == "" ? "-" : sprintf("%.3f", d),
          t == "" ? "-" : sprintf("%.3f", t), l == "" ? "-" : sprintf("%.3f", l),
          l == "" ? "" : libname[p], sd, sl, flag ? " !" : ""
        if (flag) { left++; continue }
        if (sd != "-") { gd += log(d / t); nd++ }
        if (sl != "-") { gl += log(l / t); nl++ }
      }
      printf "  geomean tuned/default: %s over %d problems; tuned vs best library (time ratio, >1: tessera faster): %s over %d",
        nd ? sprintf("%.2fx", exp(gd / nd)) : "-", nd, nl ? sprintf("%.2fx", exp(gl / nl)) : "-", nl
      printf "%s\n", left ? sprintf(" (%d flagged problems, marked !, left out)", left) : ""
    }' "$1" "$2"
}

# report T OP ARGS...: the bench with the log and without, then the summary.
report() {
  local t=$1 op=$2 log=$3 impls=$4
  shift 4
  echo
  echo "== tessera-bench $op --tuned $log --threads $t"
  "$bench" "$op" "$@" --threads "$t" --impl "$impls" --tuned "$log" --json "$out/${op}_t${t}_tuned.json" ||
    echo "tune_report.sh: tessera-bench $op --tuned exited with status $?" >&2
  echo "== tessera-bench $op --threads $t --impl tessera (the default schedules, for tuned/default)"
  "$bench" "$op" "$@" --threads "$t" --impl tessera --json "$out/${op}_t${t}_default.json" >/dev/null ||
    echo "tune_report.sh: tessera-bench $op (default) exited with status $?" >&2
  echo "== $op, $t thread(s): tuned tessera against the default schedules and the best library"
  summarize "$out/${op}_t${t}_tuned.json" "$out/${op}_t${t}_default.json"
}

for t in "${threads[@]}"; do
  log="$out/tune_t$t.jsonl"
  echo "== tuning $total operators, budget $budget s each, $t thread(s), log $log"
  t_start=$(date +%s)
  for l in "${conv_layers[@]}"; do tune_one "$log" "$t" "$l" conv2d "$l"; done
  for i in "${!gemms[@]}"; do
    # shellcheck disable=SC2086 # the shape is three words
    tune_one "$log" "$t" "${gemms[$i]}" matmul ${gemm_shapes[$i]}
  done
  for i in "${!dw_layers[@]}"; do
    # shellcheck disable=SC2086
    tune_one "$log" "$t" "${dw_layers[$i]}" depthwise ${dw_shapes[$i]}
  done
  echo "  all tuning: $(($(date +%s) - t_start)) s"

  layer_args=() gemm_args=() dw_args=()
  for l in "${conv_layers[@]}"; do layer_args+=(--layer "$l"); done
  for s in "${gemm_shapes[@]}"; do gemm_args+=(--shape "$(echo "$s" | tr ' ' ,)"); done
  for l in "${dw_layers[@]}"; do dw_args+=(--layer "$l"); done
  [ ${#layer_args[@]} -eq 0 ] || report "$t" conv2d "$log" tessera,openblas,onednn "${layer_args[@]}"
  [ ${#gemm_args[@]} -eq 0 ] || report "$t" gemm "$log" tessera,openblas,onednn "${gemm_args[@]}"
  [ ${#dw_args[@]} -eq 0 ] || report "$t" depthwise "$log" tessera,onednn "${dw_args[@]}"
done
