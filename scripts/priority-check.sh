#!/bin/bash
# Issue 66's priority check as a user would run it: `serve` + 2 one-thread workers on
# 127.0.0.1, a 1,000-board batch at the default priority (3) running, then a 3-board batch at
# priority 5; prints how long the urgent batch took from its submission to its last answer,
# and where the long batch stood then.
#
# usage: scripts/priority-check.sh TABLE_DIR
#   TABLE_DIR holds the 4x4 pattern table files (linked into each process's data directory,
#   so nothing is built or fetched); the binary is target/release/tilesolve unless BIN names one.
#   ROUNDS=N repeats the urgent submission N times (3 unless given), each with new boards;
#   URGENT_PRIORITY=3 submits the small batches at the default priority instead, the baseline.
set -euo pipefail
here=$(dirname "$0")
tables=$(realpath "$1")
bin=${BIN:-$(realpath "$here/../target/release/tilesolve")}
rounds=${ROUNDS:-3}
urgent=${URGENT_PRIORITY:-5}
# shellcheck source=scripts/lib/cluster.sh
. "$here/lib/cluster.sh"
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
start_cluster "$bin" "$tables" 2
# Random 15-puzzles (walks of 200-300 moves) under linear conflict: a second or so each, so
# the batch runs for minutes (on 7-8 it would end within seconds).
python3 "$here/random-walks.py" 1000 200 300 66 > "$work/long.txt"
long=$("$bin" submit --coordinator "$url" --heuristic linear-conflict "$work/long.txt" 2>/dev/null)
field() { "$bin" status --coordinator "$url" --json "$1" | python3 -c "import json, sys; print(json.load(sys.stdin)['$2'])"; }
until [ "$(field "$long" solved)" -ge 4 ]; do sleep 0.2; done
for round in $(seq 1 "$rounds"); do
    python3 "$here/random-walks.py" 3 200 300 "$((660 + round))" > "$work/urgent.txt"
    start=$(date +%s.%N)
    "$bin" submit --coordinator "$url" --priority "$urgent" --wait "$work/urgent.txt" > "$work/urgent-answers.txt" 2>/dev/null
    end=$(date +%s.%N)
    echo "round $round: the 3-board priority-$urgent batch took $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }') s" \
        "from submission to its last answer ($(grep -c " moves " "$work/urgent-answers.txt") answers);" \
        "the 1,000-board batch then: $(field "$long" state), $(field "$long" solved) solved"
done
"$bin" batches --coordinator "$url" | tail -n "$((rounds + 1))"
