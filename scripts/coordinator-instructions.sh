#!/bin/bash
# Counts the instructions one coordinator runs for a batch through `serve` + 2 one-thread
# workers, under valgrind's callgrind with instrumentation on only from the submission to the
# last answer: a figure that, unlike CPU seconds, a noisy host does not move (a guest's CPU
# time on 10,000 easy boards varied by a quarter between runs of one binary). System calls
# and cache misses are not in it; the CPU seconds (scripts/cpu-against-bench.sh) are.
#
# usage: scripts/coordinator-instructions.sh TABLE_DIR FILE BIN [BIN ...]
#   KEEP=DIR keeps each binary's callgrind profile as DIR/NAME.callgrind (for callgrind_annotate).
set -euo pipefail
tables=$(realpath "$1")
batch=$(realpath "$2")
shift 2
command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
for bin in "$@"; do
    work=$(mktemp -d)
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    url="http://127.0.0.1:$port"
    for dir in coordinator w1 w2; do
        mkdir -p "$work/$dir"
        ln -s "$tables"/*.pdb "$work/$dir/"
    done
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
        "$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" > "$work/serve.log" 2>&1 &
    pids=($!)
    trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
    for _ in $(seq 1 240); do curl -s -o /dev/null "$url/metrics" && break; sleep 0.5; done
    for i in 1 2; do
        "$bin" worker --coordinator "$url" --threads 1 --data "$work/w$i" > "$work/w$i.log" 2>&1 &
        pids+=($!)
    done
    sleep 3
    callgrind_control -i on "${pids[0]}" > /dev/null
    "$bin" submit --coordinator "$url" --wait "$batch" > "$work/answers.txt" 2> /dev/null
    callgrind_control -i off "${pids[0]}" > /dev/null
    callgrind_control -d "${pids[0]}" > /dev/null
    sleep 1
    instructions=$(cat "$work"/callgrind.out.* | awk '/^totals:/ { n += $2 } END { print n }')
    echo "$(basename "$bin"): $(grep -c " moves " "$work/answers.txt") answers, coordinator \
$(awk -v n="$instructions" 'BEGIN { printf "%.1f", n / 1e6 }') M instructions"
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP" && cp "$work"/callgrind.out.1 "$KEEP/$(basename "$bin").callgrind"
    fi
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
    trap - EXIT
done
