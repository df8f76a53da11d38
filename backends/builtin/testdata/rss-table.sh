#!/usr/bin/env bash
# rss-table.sh: docs/engine-speed.md's peak memory table of the built-in engine against llama.cpp.
#
# Runs a short `tokentop run` of each GGUF (1 warmup and 2 timed trials of
# 16 tokens on 2 threads) and `llama-bench -p 0 -n 16 -t 2 -r 1` on it,
# first as llama-bench runs by default (the file mapped), then reading
# the file into memory ($LLAMA_BENCH_READ_ARGS, default "-lm none"; "-mmp 0"
# for a llama-bench before mid-2025), each under /usr/bin/time, and prints
# each peak resident size in MiB, with tokentop's ratio to each, as a
# Markdown table.
#
#   LLAMA_CPP=~/llama.cpp/build/bin backends/builtin/testdata/rss-table.sh FILE.gguf...
set -euo pipefail
: "${LLAMA_CPP:?set LLAMA_CPP to the folder with llama-bench}"
[ -x "$LLAMA_CPP/llama-bench" ] || { echo "rss-table: no llama-bench in $LLAMA_CPP" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "rss-table: needs GNU time at /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: LLAMA_CPP=... $0 FILE.gguf..." >&2; exit 2; }
read_args=${LLAMA_BENCH_READ_ARGS:--lm none}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
# shellcheck source=machine.sh
. "$(dirname "$0")/machine.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$repo" && GOEXPERIMENT=simd go build -o "$work/tokentop" .)

# peak NAME COMMAND...: the command's peak resident size in MiB, or the
# script ends saying NAME failed (a crashed llama-bench must not read as
# a small peak).
peak() {
	local name=$1
	shift
	if ! /usr/bin/time -f '%M' -o "$work/time" "$@" >"$work/out" 2>&1; then
		echo "rss-table: $name failed:" >&2
		tail -5 "$work/out" >&2
		exit 1
	fi
	echo $(($(tail -1 "$work/time") / 1024))
}

echo "$(machine_line); llama-bench reading the file with: $read_args"
echo
echo "| file | tokentop MiB | llama-bench MiB | reading it in MiB | ÷ default | ÷ reading it in |"
echo "|---|---:|---:|---:|---:|---:|"
for f in "$@"; do
	[ -f "$f" ] || { echo "rss-table: no file $f" >&2; exit 2; }
	a=$(peak "tokentop on $f" "$work/tokentop" run --model-path "$f" --headless --warmup 1 --trials 2 --max-tokens 16 --threads 2 --out "$work/sessions")
	b=$(peak "llama-bench on $f" "$LLAMA_CPP/llama-bench" -m "$f" -p 0 -n 16 -t 2 -r 1)
	# shellcheck disable=SC2086 # read_args is words
	c=$(peak "llama-bench $read_args on $f" "$LLAMA_CPP/llama-bench" -m "$f" -p 0 -n 16 -t 2 -r 1 $read_args)
	awk -v f="$(basename "$f" .gguf)" -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "| %s | %d | %d | %d | %.2f | %.2f |\n", f, a, b, c, a / b, a / c }'
done
