#!/usr/bin/env bash
# speed-table.sh: docs/engine-speed.md's table of the built-in engine against llama.cpp.
#
# Writes f32 GGUFs of the stories shapes with the tests' GGUF writer,
# quantizes them with llama.cpp's llama-quantize, then times each file in
# tokentop (BenchmarkGGUFFile) and in llama-bench, taking turns (tokentop,
# llama.cpp, tokentop, ...) so both see the same machine, and prints a
# Markdown table (speed-summary.awk): each engine's median, the median of
# the rounds' ratios and their range.
#
#   LLAMA_CPP=~/llama.cpp/build/bin backends/builtin/testdata/speed-table.sh [rounds] [shape] [presets...]
#
# LLAMA_CPP is the folder holding llama-quantize and llama-bench (a build
# of your own; the table should name its commit). Defaults: 3 rounds,
# stories110M, presets F32 Q8_0 Q4_0 Q4_K_M. Files go to $OUT (default a
# temporary folder), kept for reuse. DEPTH=N times tg128 with each
# engine's cache holding an N-token prompt first (llama-bench's -d), where
# attention reads the cache: what a long conversation decodes at; and
# ppN, that prompt itself read from an empty cache (llama-bench -p N).
# LLAMA_BENCH_ARGS adds llama-bench options (e.g. "-fa off", its faster
# attention at depth on the development VM; "-fa on" was its faster for
# long prompts). THREADS names the thread counts (default "1 2").
# ORDER=abba times each cell as tokentop, llama.cpp, llama.cpp, tokentop
# a round and records each engine's mean of its two, so the round's
# ratio is of the sums: a memory whose speed drifts through the round
# weighs on both engines alike (the docs' ABBA rounds).
set -euo pipefail
depth=${DEPTH:-0}
tests=(tg128 pp64)
label=
read -ra thread_counts <<<"${THREADS:-1 2}"
order=${ORDER:-ab}
case $order in ab | abba) ;; *) echo "speed-table: ORDER is ab or abba, not \"$order\"" >&2; exit 2 ;; esac
if [ "$depth" != 0 ]; then
	tests=(tg128 "pp$depth")
	label=" @ d$depth" # tg128's alone: ppN is read from an empty cache
fi

rounds=${1:-3}
shape=${2:-stories110M}
shift $(( $# > 2 ? 2 : $# ))
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(F32 Q8_0 Q4_0 Q4_K_M)
: "${LLAMA_CPP:?set LLAMA_CPP to the folder with llama-quantize and llama-bench}"
for tool in llama-quantize llama-bench; do
	[ -x "$LLAMA_CPP/$tool" ] || { echo "speed-table: no $tool in $LLAMA_CPP" >&2; exit 2; }
done
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=machine.sh
. "$(dirname "$0")/machine.sh"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"

if [ ! -f "$out/$shape-f32.gguf" ]; then
	echo "writing f32 GGUFs into $out" >&2
	(cd "$repo" && TOKENTOP_GGUF_DIR="$out" go test ./backends/builtin -run '^TestWriteSpeedTableFiles$' -count=1 >/dev/null)
fi
for p in "${presets[@]}"; do
	f="$out/$shape-$p.gguf"
	if [ "$p" = F32 ]; then
		f="$out/$shape-f32.gguf"
	elif [ ! -f "$f" ]; then
		echo "llama-quantize $p" >&2
		"$LLAMA_CPP/llama-quantize" "$out/$shape-f32.gguf" "$f" "$p" >/dev/null 2>&1
	fi
done

bench="$out/builtin.test"
(cd "$repo" && GOEXPERIMENT=simd go test -c -o "$bench" ./backends/builtin)

# positive NAME VALUE: VALUE, or the script ends saying NAME gave none. A
# crashing llama-bench once gave "0.0 t/s", a ratio of "inf", and exit 0.
positive() {
	if ! awk -v v="$2" 'BEGIN { exit !(v + 0 > 0) }'; then
		echo "speed-table: $1 gave no speed (\"$2\"); fix it before the table is believed" >&2
		exit 1
	fi
	echo "$2"
}

# tokentop FILE TEST THREADS: tok/s of one sub-benchmark.
tokentop() {
	local out
	out=$(TOKENTOP_BENCH_GGUF=$1 TOKENTOP_BENCH_DEPTH=$depth "$bench" -test.run '^$' -test.bench "^BenchmarkGGUFFile/$2/threads=$3\$" -test.benchtime 3x) ||
		{ echo "speed-table: the engine's benchmark failed on $1 ($2, $3 threads):" >&2; echo "$out" >&2; exit 1; }
	positive "tokentop on $1 ($2, $3 threads)" "$(awk '/tok\/s/ { for (i = 1; i < NF; i++) if ($(i+1) ~ /tok\/s$/) print $i }' <<<"$out")"
}

# mean X Y: the mean of two speeds.
mean() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%.6g\n", (x + y) / 2 }'; }

# llamacpp FILE TEST THREADS: llama-bench's mean tok/s over 3 repetitions.
llamacpp() {
	local args=(-p 0 -n 128) out
	# -d only where asked: llama-bench before mid-2025 has no -d
	[ "$depth" != 0 ] && args+=(-d "$depth")
	[ "$2" != tg128 ] && args=(-p "${2#pp}" -n 0)
	# shellcheck disable=SC2086 # LLAMA_BENCH_ARGS is words
	out=$("$LLAMA_CPP/llama-bench" -m "$1" -t "$3" -r 3 "${args[@]}" ${LLAMA_BENCH_ARGS:-} -o csv 2>&1) ||
		{ echo "speed-table: llama-bench failed on $1 ($2, $3 threads):" >&2; echo "$out" | tail -5 >&2; exit 1; }
	positive "llama-bench on $1 ($2, $3 threads)" "$(awk -F, '/avg_ts/ && !col { for (i = 1; i <= NF; i++) if ($i ~ /avg_ts/) col = i; next } col { gsub(/"/, "", $col); print $col }' <<<"$out")"
}

results="$out/runs.tsv"
: >"$results"
for ((r = 1; r <= rounds; r++)); do
	for p in "${presets[@]}"; do
		f="$out/$shape-$p.gguf"
		[ "$p" = F32 ] && f="$out/$shape-f32.gguf"
		for test in "${tests[@]}"; do
			for threads in "${thread_counts[@]}"; do
				a=$(tokentop "$f" "$test" "$threads") # a failure ends the script here
				b=$(llamacpp "$f" "$test" "$threads")
				if [ "$order" = abba ]; then
					# each on its own line: a failure nested in another
					# substitution would not end the script
					b2=$(llamacpp "$f" "$test" "$threads")
					a2=$(tokentop "$f" "$test" "$threads")
					a=$(mean "$a" "$a2") b=$(mean "$b" "$b2")
				fi
				printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$p" "$test" "$threads" "$a" "$b" >>"$results"
			done
		done
	done
	echo "round $r of $rounds done" >&2
done

# The CPU every figure came from, named with the table. GODEBUG=cpu.avx512f=off
# (tokentop's AVX2 kernels) is part of what was measured.
echo "$(machine_line)${GODEBUG:+; tokentop ran with GODEBUG=$GODEBUG}"
echo
awk -v shape="$shape" -v label="$label" -f "$(dirname "$0")/speed-summary.awk" "$results"
