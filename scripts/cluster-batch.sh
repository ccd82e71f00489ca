#!/bin/bash
# Times one batch through `serve` + 2 one-thread workers on 127.0.0.1, on fresh stores, and
# prints each process's CPU seconds: the cluster side of the comparison with
# `tilesolve bench --threads 2` in BENCHMARKS.md (issue 19).
#
# usage: scripts/cluster-batch.sh TABLE_DIR BATCH_FILE
#   TABLE_DIR holds the pattern table files (linked into each process's data directory, so
#   nothing is built or fetched); the binary is target/release/tilesolve.
set -euo pipefail
tables=$(realpath "$1")
batch=$(realpath "$2")
bin=$(realpath "$(dirname "$0")/../target/release/tilesolve")
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
for dir in coordinator w1 w2; do
    mkdir -p "$work/$dir"
    ln -s "$tables"/*.pdb "$work/$dir/"
done
"$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" > "$work/serve.log" 2>&1 &
pids+=($!)
sleep 0.7
for w in w1 w2; do
    "$bin" worker --coordinator "$url" --threads 1 --data "$work/$w" > "$work/$w.log" 2>&1 &
    pids+=($!)
done
# Both sides load the tables present at start; let them finish before the clock starts.
sleep 1.5
/usr/bin/time -f "submit --wait: %e s wall, client CPU %U s user + %S s system" \
    "$bin" submit --coordinator "$url" --wait "$batch" > "$work/answers.txt"
echo "$(grep -c " moves " "$work/answers.txt") answers"
for pid in "${pids[@]}"; do
    awk '{printf "%s CPU %.2f s\n", $2, ($14 + $15) / 100}' "/proc/$pid/stat"
done
