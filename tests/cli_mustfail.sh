#!/bin/sh
# cli_mustfail.sh - every program shipped with tessera refuses a bad command
# line: a non-zero exit status that is not a signal, a message on stderr that
# names the mistake, no sanitizer report, and nothing run.  Only error paths
# are exercised, so no benchmark or tutorial step ever starts.
#
#   cli_mustfail.sh MATMUL [TUTORIAL [BENCH [EXERCISE [TUNE]]]]
#
# A program whose path is empty or missing is skipped (tessera-tutorial and
# tessera-bench and tessera-tune are built only when OpenBLAS and oneDNN are
# found).
set -u

matmul=${1:-}
tutorial=${2:-}
bench=${3:-}
exercise=${4:-}
tune=${5:-}
failures=0
cases=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera_cli.XXXXXX") || exit 1
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT

# expect WANT_SUBSTRING PROGRAM ARGS...: the program must exit non-zero
# (below 128: no signal), print WANT_SUBSTRING on stderr, print no
# sanitizer report, and print nothing on stdout (no work was done).
expect() {
	want=$1
	shift
	cases=$((cases + 1))
	timeout 20 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	why=
	if [ "$rc" -eq 0 ]; then
		why="exit status 0"
	elif [ "$rc" -ge 124 ]; then
		why="exit status $rc (timeout or signal)"
	elif ! grep -qF -- "$want" "$tmp/err"; then
		why="stderr lacks '$want'"
	elif grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then
		why="sanitizer report"
	elif [ -s "$tmp/out" ]; then
		why="output on stdout: $(head -c 200 "$tmp/out")"
	fi
	if [ -n "$why" ]; then
		failures=$((failures + 1))
		printf 'FAIL: %.200s: %.300s\n' "$*" "$why"
		printf '  stderr: %s\n' "$(head -c 600 "$tmp/err")"
	fi
}

have() {
	[ -n "$1" ] && [ -x "$1" ]
}

if have "$matmul"; then
	for n in 0 -5 abc 12abc 99999999999 "" " 12" 1.5 0x10; do
		expect "matmul: N must be an integer from 1 to" "$matmul" "$n"
	done
	expect "matmul: unexpected argument '7'" "$matmul" 12 7
	expect "matmul: unknown option '--bogus'" "$matmul" --bogus
fi

if have "$tutorial"; then
	t=$tutorial
	expect "usage:" "$t"
	expect "unknown tutorial 'matmul' (available: gemm" "$t" matmul
	expect "unknown tutorial '--golden' (available: gemm" "$t" --golden gemm
	expect "--step: 99 is not a step of gemm; the steps are 0 to" "$t" gemm --step 99
	expect "--step: -5 is not a step of gemm; the steps are 0 to" "$t" gemm --step -5
	expect "--step: 'abc' is not an integer" "$t" gemm --step abc
	expect "--step: '3x' is not an integer" "$t" gemm --step 3x
	expect "unknown option '--bogus'" "$t" gemm --bogus
	expect "unknown option '--bogus'" "$t" gemm --bogus 3
	expect "unexpected argument 'extra'" "$t" gemm extra
	expect "--size needs a value" "$t" gemm --size
	expect "--step needs a value" "$t" gemm --size 64 --step
	expect "--size: 0 is out of range (1 to" "$t" gemm --size 0
	expect "--size: 99999999999 is out of range (1 to" "$t" gemm --size 99999999999
	expect "--size: 'abc' is not an integer" "$t" gemm --size abc
	expect "--threads: 0 is out of range (1 to 1024)" "$t" gemm --threads 0
	expect "--threads: 100000 is out of range (1 to 1024)" "$t" gemm --threads 100000
	expect "--lines: -1 is out of range (0 to" "$t" gemm --lines -1
	expect "unknown option '--golden=1'" "$t" gemm --golden=1
	expect "--step: 6 is not a step of blur; the steps are 0 to 5" "$t" blur --step 6
	expect "--size: 0 is out of range (1 to" "$t" blur --size 0
	expect "--size: 99999999 is out of range (1 to" "$t" blur --size 99999999
	expect "--step: 5 is not a step of softmax; the steps are 0 to 4" "$t" softmax --step 5
	expect "--threads: 0 is out of range (1 to 1024)" "$t" softmax --threads 0
	expect "--step: 5 is not a step of conv; the steps are 0 to 4" "$t" conv --step 5
	expect "--size: 1025 is out of range (1 to 1024)" "$t" conv --size 1025
	expect "--step: 4 is not a step of gpu; the steps are 0 to 3" "$t" gpu --step 4
	expect "--size: -3 is out of range (1 to" "$t" gpu --size -3
	expect "--plot: cannot write '/nonexistent/gpu.svg'" "$t" gpu --plot /nonexistent/gpu.svg
	expect "--plot needs a value" "$t" gemm --plot
	expect "--plot: '$tmp/x.png' does not end in .svg" "$t" gemm --plot "$tmp/x.png"
	expect "--plot: '.svg' does not end in .svg" "$t" gemm --plot .svg
	expect "--plot: cannot write '/nonexistent/x.svg'" "$t" gemm --plot /nonexistent/x.svg
	mkdir "$tmp/dir.svg"
	expect "--plot: cannot write '$tmp/dir.svg'" "$t" gemm --plot "$tmp/dir.svg"
	expect "has a quote or a backslash" "$t" gemm --plot "$tmp/it's.svg"
	expect "--plot draws measured speeds and --golden measures nothing" "$t" gemm --golden --plot "$tmp/x.svg"
fi

if have "$bench"; then
	b=$bench
	expect "unknown command 'frobnicate'" "$b" frobnicate
	expect "missing command" "$b"
	for s in 8x x8 8xx8 8x8x8x8 "" 8,8,8 -8 +8 " 8" 8x-8x8; do
		expect "--size: '$s' is not N or MxNxK" "$b" gemm --size "$s"
	done
	expect "must be >= 1" "$b" gemm --size 0x8x8
	expect "--size: '99999999999' is not N or MxNxK" "$b" gemm --size 99999999999
	expect "below 2^31 elements" "$b" gemm --size 65536x65536x8
	expect "--size needs a value" "$b" gemm --size
	expect "--sizes: '-5' is not a list" "$b" gemm --sizes -5
	expect "--sizes: '99999999999' is not a list" "$b" gemm --sizes 99999999999
	expect "--size applies to the gemm, dense and symbolic commands only" "$b" conv2d --size 8
	expect "unknown option '--bogus'" "$b" gemm --bogus
	expect "unknown option '--bogus'" "$b" gemm --bogus=3
	for n in 0 -1 abc 100000 99999999999 4x; do
		expect "--threads: must be an integer from 1 to 1024, got '$n'" "$b" gemm --threads "$n"
	done
	expect "--repeat: must be an integer from 1 to" "$b" gemm --repeat 0
	expect "--flush-l2 applies to --target cuda only" "$b" gemm --flush-l2
	expect "--flush-l2 takes no value (got '1')" "$b" gemm --target cuda --flush-l2=1
	many=$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "%snaive", i ? "," : "" }')
	expect "--impl: 'naive' is named twice" "$b" gemm --impl "$many"
	many=$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "%simpl%d", i ? "," : "", i }')
	expect "--impl: unknown implementation 'impl0'" "$b" gemm --impl "$many"
	long=$(awk 'BEGIN { for (i = 0; i < 10000; i++) printf "a" }')
	expect "--impl: unknown implementation 'aaaaaaaa" "$b" gemm --impl "$long"
	expect "--impl: unknown implementation 'mkl'" "$b" gemm --impl tessera,mkl
	expect "--impl: empty name in 'tessera,,naive'" "$b" gemm --impl tessera,,naive
	expect "--impl: empty name in ','" "$b" gemm --impl ,
	expect "unknown option '--aaaaaaaaaaaaaaaa" "$b" gemm "--$long" 1
	expect "--json: cannot write '/nonexistent/dir/x.json'" "$b" gemm --json /nonexistent/dir/x.json
	expect "--json: cannot write '$tmp': it is a directory" "$b" gemm --json "$tmp"
	expect "--json: cannot write '$tmp/x.json/'" "$b" gemm --json "$tmp/x.json/"
	mkdir "$tmp/ro" && chmod a-w "$tmp/ro"
	# root may write anywhere; the check is meaningful only for other users
	if ! touch "$tmp/ro/probe" 2>/dev/null; then
		expect "--plot: cannot write '$tmp/ro/x.png'" "$b" gemm --plot "$tmp/ro/x.png"
		expect "--json: cannot write '$tmp/ro/x.json'" "$b" peak --json "$tmp/ro/x.json"
	fi
	expect "--plot: cannot write '/nonexistent/x.png'" "$b" gemm --plot /nonexistent/x.png
	expect "--plot: cannot write '/proc/x.png'" "$b" gemm --plot /proc/x.png
	expect "--json: empty path" "$b" gemm --json=
	expect "unknown target 'tpu'" "$b" gemm --target tpu
	expect "--dtype: unknown type 'fp8' (f32, f16, bf16 or tf32)" "$b" gemm --target cuda --dtype fp8
	expect "--dtype needs a value" "$b" gemm --target cuda --dtype
	expect "--dtype f16 applies to --target cuda only" "$b" gemm --dtype f16
	expect "--dtype tf32 applies to --target cuda only" "$b" gemm --dtype tf32
	expect "--dtype bf16 applies to the gemm command only" "$b" conv2d --target cuda --dtype=bf16
	expect "--dtype f16 applies to the gemm command only" "$b" summary --dtype f16
	expect "--tuned: tune log /nonexistent/t.jsonl: cannot read" "$b" gemm --tuned /nonexistent/t.jsonl
	expect "--tuned: empty path" "$b" gemm --tuned=
	expect "--tuned applies to the CPU gemm, conv2d, depthwise and summary commands" "$b" dense --tuned x
	expect "--tuned applies to the CPU gemm, conv2d, depthwise and summary commands" "$b" gemm --target cuda --tuned x
	expect "--layer: unknown depthwise layer 'res2_3x3'" "$b" depthwise --layer res2_3x3
	expect "depthwise conv3x3_0: K must equal C (multiplier 1), got K 8, C 4" "$b" depthwise --conv 1,4,9,9,8,3,3,1,1
	expect "conv conv5x5_0: the kernel is larger than the padded image" "$b" depthwise --conv 1,4,2,2,4,5,5,1,0
	expect "conv conv3x3_0: N, C, H, W, K, R, S and stride must be >= 1" "$b" depthwise --conv 1,4,9,9,4,3,3,0,1
	for c in 65536,65536,65536,65536,1,1,1,1,0 1,1,40000,40000,40000,1,1,1,0 1,1,1,1,1,1,1,1,2000000000; do
		expect "a tensor has more than 2^31 elements" "$b" conv2d --conv "$c"
	done
	expect "depthwise runs on the CPU only" "$b" depthwise --target cuda
	expect "--sizes applies to the gemm, dense and symbolic commands only" "$b" depthwise --sizes 64
	expect "--tuned: tune log $tmp/none.jsonl: cannot read" "$b" depthwise --tuned "$tmp/none.jsonl"
	printf 'garbage\n' >"$tmp/bad_tune.log"
	expect "--tuned: $tmp/bad_tune.log:1: expected '{'" "$b" gemm --tuned "$tmp/bad_tune.log"
	expect "model: --tuned: tune log /nonexistent/t.jsonl: cannot read" "$b" model resnet50 --tuned /nonexistent/t.jsonl
	expect "model: --tuned: $tmp/bad_tune.log:1: expected '{'" "$b" model resnet50 --small --tuned "$tmp/bad_tune.log"
	for r in 0 51 -1 x 2x "" 99999999999999999999; do
		expect "model: --rounds takes a number 1..50, got '$r'" "$b" model resnet50 --small --rounds "$r"
	done
	if ls "$tmp" | grep -q json; then
		failures=$((failures + 1))
		echo "FAIL: a refused --json path was created"
	fi
fi

if have "$exercise"; then
	e=$exercise
	expect "missing command (list or check)" "$e"
	expect "unknown command 'run' (list or check)" "$e" run 1
	expect "unexpected argument 'extra'" "$e" list extra
	expect "check needs an exercise number (1 to 5, or all)" "$e" check
	for n in 0 6 -1 abc 1x "" " 1" 99999999999999999999 +1; do
		expect "'$n' is not an exercise; the exercises are 1 to 5 (or all)" "$e" check "$n"
	done
	expect "unknown option '--bogus'" "$e" check 1 --bogus
	expect "unknown option '--solution=1'" "$e" check 1 --solution=1
	expect "unexpected argument '2'" "$e" check 1 2
	expect "--svg needs a file name" "$e" check 1 --svg
	expect "--svg needs a file name" "$e" check 1 --svg ""
	expect "--svg: cannot write '/nonexistent/x.svg'" "$e" check 1 --svg /nonexistent/x.svg
	mkdir -p "$tmp/ex_dir.svg"
	expect "--svg: cannot write '$tmp/ex_dir.svg'" "$e" check 1 --svg "$tmp/ex_dir.svg"
	expect "--svg draws one exercise, not all" "$e" check all --svg "$tmp/x.svg"
	if [ -e "$tmp/x.svg" ]; then
		failures=$((failures + 1))
		echo "FAIL: a refused --svg path was created"
	fi
fi
if have "$tune"; then
	u=$tune
	log="$tmp/tune.jsonl"
	expect "missing operator" "$u"
	expect "missing operator before '--log'" "$u" --log "$log"
	expect "unknown operator 'frobnicate'" "$u" frobnicate 1 2 --log "$log"
	expect "tune matmul: 2 extents given, the shape is matmul M N K" "$u" matmul 8 8 --log "$log"
	expect "tune matmul: extent 1 is 0" "$u" matmul 8 0 8 --log "$log"
	expect "extent 'abc' is not an integer" "$u" matmul 8 abc 8 --log "$log"
	expect "extent '-3' is not an integer" "$u" matmul 8 8 8 -3 --log "$log"
	expect "extent '99999999999' is not an integer" "$u" matmul 8 99999999999 8 --log "$log"
	expect "missing --log FILE" "$u" matmul 8 8 8
	expect "unknown option '--bogus'" "$u" matmul 8 8 8 --log "$log" --bogus
	expect "(STRIDE, in conv2d_nchw" "$u" conv2d_nchw 1 4 8 8 4 3 3 0 1 --log "$log"
	expect "--log needs a value" "$u" matmul 8 8 8 --log
	expect "--log: empty path" "$u" matmul 8 8 8 --log ""
	expect "--log: cannot write '/nonexistent/t.jsonl'" "$u" matmul 8 8 8 --log /nonexistent/t.jsonl
	expect "--log: cannot write '$tmp': it is a directory" "$u" matmul 8 8 8 --log "$tmp"
	for b in 0 -1 abc 1e9 nan ""; do
		expect "--budget: must be a number of seconds above 0" "$u" matmul 8 8 8 --log "$log" --budget "$b"
	done
	for n in 0 abc 2000 -2; do
		expect "--threads: must be an integer from 1 to 1024, got '$n'" "$u" matmul 8 8 8 --log "$log" --threads "$n"
	done
	expect "--seed: must be an integer from 0 to 2^63-1, got '-1'" "$u" matmul 8 8 8 --log "$log" --seed -1
	expect "unknown option '--bogus'" "$u" matmul 8 8 8 --log "$log" --bogus 1
	expect "conv2d: unknown layer 'res9'" "$u" conv2d res9 --log "$log"
	expect "unexpected argument '3' after the layer name" "$u" conv2d res2_3x3 3 --log "$log"
	expect "tune pool: padding 3 must be below the kernel 3" "$u" pool 1 4 8 8 3 1 3 --log "$log"
	expect "tune conv2d_nchw: 8 extents given, the shape is conv2d_nchw N C H W K R S STRIDE PAD" \
		"$u" conv2d_nchw 1 4 8 8 4 3 3 1 --log "$log"
	expect "tune conv2d_nhwc: the kernel (3x11) is larger than the padded image (10x10)" \
		"$u" conv2d_nhwc 1 4 8 8 4 3 11 1 1 --log "$log"
	expect "tune conv2d_nchw: extent 7 is 0" "$u" conv2d_nchw 1 4 8 8 4 3 3 0 1 --log "$log"
	expect "conv2d: unknown layer 'res9'" "$u" conv2d_nhwc res9 --log "$log"
	expect "depthwise: unknown layer 'res2_3x3' (tessera-bench depthwise --layer list)" \
		"$u" depthwise res2_3x3 --log "$log"
	expect "unexpected argument '3' after the layer name" "$u" depthwise dw1 3 --log "$log"
	expect "model: name the model's file (FILE.onnx)" "$u" model --log "$log"
	expect "unexpected argument 'b.onnx' after the model file" "$u" model a.onnx b.onnx --log "$log"
	expect "/nonexistent/m.onnx" "$u" model /nonexistent/m.onnx --log "$log"
	printf 'not a model' >"$tmp/bad.onnx"
	expect "$tmp/bad.onnx" "$u" model "$tmp/bad.onnx" --log "$log"
	printf '{"tessera": "0.1", "op": \n' >"$log"
	expect "$log:1: truncated record" "$u" matmul 8 8 8 --log "$log"
	printf '{"tessera": "0.0", "op": "matmul", "shape": [8, 8, 8], "dtype": "float32", "target": "llvm", "cpu": "x", "features": "y", "threads": 1, "params": {}, "median_ms": 1, "default_ms": 1, "trials": 1}\n' >"$log"
	expect "$log:1: the record for matmul [8, 8, 8] float32 llvm is refused: field tessera is '0.0'" "$u" matmul 8 8 8 --log "$log"
fi

echo "cli_mustfail: $cases cases, $failures failed"
[ "$failures" -eq 0 ]
