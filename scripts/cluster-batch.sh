#!/bin/bash
# Times one batch through `serve` + 2 one-thread workers on 127.0.0.1, on fresh stores, and
# prints the CPU seconds each process spent between the submission and its end: the cluster
# side of the comparison with `tilesolve bench --threads 2` in BENCHMARKS.md (issue 19).
#
# usage: [SERVE_ARGS="--audit-fraction 0"] scripts/cluster-batch.sh TABLE_DIR BATCH_FILE
#   TABLE_DIR holds the pattern table files (linked into each process's data directory, so
#   nothing is built or fetched); the binary is target/release/tilesolve unless BIN names one.
set -euo pipefail
tables=$(realpath "$1")
batch=$(realpath "$2")
bin=${BIN:-$(realpath "$(dirname "$0")/../target/release/tilesolve")}
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
for dir in coordinator w1 w2; do
    mkdir -p "$work/$dir"
    ln -s "$tables"/*.pdb "$work/$dir/"
done
# shellcheck disable=SC2086 # SERVE_ARGS is a list of arguments
"$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" ${SERVE_ARGS:-} > "$work/serve.log" 2>&1 &
pids+=($!)
sleep 0.7
for w in w1 w2; do
    "$bin" worker --coordinator "$url" --threads 1 --data "$work/$w" > "$work/$w.log" 2>&1 &
    pids+=($!)
done
# Both sides load the tables present at start; let them finish before the clock starts.
sleep 1.5
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
before=()
for pid in "${pids[@]}"; do before+=("$(cpu "$pid")"); done
/usr/bin/time -f "submit --wait: %e s wall, client CPU %U s user + %S s system" \
    "$bin" submit --coordinator "$url" --wait "$batch" > "$work/answers.txt"
echo "$(grep -c " moves " "$work/answers.txt") answers"
names=(coordinator "worker 1" "worker 2")
for i in "${!pids[@]}"; do
    awk -v name="${names[$i]}" -v now="$(cpu "${pids[$i]}")" -v then="${before[$i]}" \
        'BEGIN { printf "%s: CPU %.2f s in the batch\n", name, now - then }'
done
