#!/usr/bin/env bash
# Measures what the dashboard costs a run: the same study headless and under
# the TUI in tmux, interleaved, comparing process CPU time (bash `times`) and
# each arm's mean output tok/s (tokentop compare). Not part of the tests:
# shared machines are too noisy to assert on; docs/dashboard.md reports its figures.
# Usage: ui/testdata/measure-overhead.sh [WIDTHxHEIGHT] [REPEATS]
set -euo pipefail
size=${1:-80x24}; reps=${2:-3}
W=${size%x*}; H=${size#*x}
out=$(mktemp -d); bin=$out/tokentop
go build -o "$bin" .
study=(run --profile greedy-vs-sampling --trials 100 --threads 1)
for rep in $(seq "$reps"); do
  d=$out/headless$rep; mkdir -p "$d"
  bash -c "$bin ${study[*]} --headless --out $d >/dev/null; times > $d/times"
  d=$out/tui$rep; mkdir -p "$d"
  tmux -S "$out/sock" new-session -d -s m -x "$W" -y "$H" "bash -c '$bin ${study[*]} --out $d; times > $d/times'"
  until [ -s "$d/times" ]; do
    if tmux -S "$out/sock" capture-pane -p -t m 2>/dev/null | grep -q "Run complete"; then tmux -S "$out/sock" send-keys -t m q; fi
    sleep 0.2
  done
  tmux -S "$out/sock" kill-server 2>/dev/null || true
done
for d in "$out"/headless* "$out"/tui*; do
  m=$(ls "$d"/*.toml)
  echo "$(basename "$d"): cpu (user sys) $(sed -n 2p "$d/times"); output tok/s mean per arm: $("$bin" compare "$m" --metric output_tps | awk '/ mean /{print $3, $4, $5}')"
done
echo "wall times: finished_at - created_at in each manifest under $out"
