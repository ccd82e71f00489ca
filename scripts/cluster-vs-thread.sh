#!/bin/bash
# The same boards one thread in process, then through `serve` + N one-thread workers: wall,
# CPU (per process and summed), nodes, and every length against the file's optimal= facts.
# This is the comparison "Distribution must pay" is judged by.
#
# usage: [WORKERS=2] [HEURISTIC=default] [SERVE_ARGS=...] [BIN=...] \
#            scripts/cluster-vs-thread.sh TABLE_DIR BATCH_FILE
set -euo pipefail
here=$(dirname "$0")
bin=${BIN:-$(realpath "$here/../target/release/tilesolve")}
echo "== one thread in process (bench --threads 1)"
/usr/bin/time -f "bench: %e s wall, CPU %U s user + %S s system" \
    "$bin" bench --threads 1 --heuristic "${HEURISTIC:-default}" --data "$1" "$2" 2>&1 \
    | grep -E "lengths optimal|^expanded|solve seconds|^bench: "
echo "== serve + ${WORKERS:-2} one-thread workers"
BIN="$bin" "$here/cluster-batch.sh" "$1" "$2" 2>&1
