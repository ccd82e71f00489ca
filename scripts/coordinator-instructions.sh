#!/bin/bash
# Counts the instructions one coordinator runs for a batch through `serve` + 2 one-thread
# workers, under valgrind's callgrind with instrumentation on only from the submission to the
# last answer: a figure that, unlike CPU seconds, a noisy host does not move (a guest's CPU
# time on 10,000 easy boards varied by a quarter between runs of one binary). System calls
# and cache misses are not in it; the CPU seconds (scripts/cpu-against-bench.sh) are.
#
# With ALL=1 the two workers run under callgrind too, and `bench --threads 2` on the same boards
# (the whole process, as scripts/cpu-against-bench.sh times it): the cluster's instructions
# against the bench's, the 2-core bound of issue 64 without the contention of three processes
# on two cores, which moves the CPU seconds but not this.
#
# usage: [ALL=1] scripts/coordinator-instructions.sh TABLE_DIR FILE BIN [BIN ...]
#   KEEP=DIR keeps each binary's callgrind profile as DIR/NAME.callgrind (for callgrind_annotate).
set -euo pipefail
tables=$(realpath "$1")
batch=$(realpath "$2")
shift 2
command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
# shellcheck source=scripts/lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
for bin in "$@"; do
    work=$(mktemp -d)
    port=$(free_port)
    url="http://127.0.0.1:$port"
    data_dirs "$work" "$tables" coordinator w1 w2
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/callgrind.out" \
        "$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" > "$work/serve.log" 2>&1 &
    pids=($!)
    trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
    wait_for_serve "$url"
    if [ -n "${ALL:-}" ]; then
        start_workers "$bin" "$url" "$work" 2 \
            valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/worker.%p.out"
    else
        start_workers "$bin" "$url" "$work" 2
    fi
    # Registered and their tables loaded (under valgrind a worker takes its time).
    wait_for_workers "$url" 2
    sleep 3
    counted=("${pids[0]}")
    if [ -n "${ALL:-}" ]; then counted=("${pids[@]}"); fi
    for pid in "${counted[@]}"; do callgrind_control -i on "$pid" > /dev/null; done
    "$bin" submit --coordinator "$url" --wait "$batch" > "$work/answers.txt" 2> /dev/null
    for pid in "${counted[@]}"; do
        callgrind_control -i off "$pid" > /dev/null
        callgrind_control -d "$pid" > /dev/null
    done
    sleep 1
    millions() { cat "$@" | awk '/^totals:/ { n += $2 } END { printf "%.1f", n / 1e6 }'; }
    coordinator=$(millions "$work"/callgrind.out.*)
    line="$(basename "$bin"): $(grep -c " moves " "$work/answers.txt") answers, coordinator $coordinator M instructions"
    if [ -n "${ALL:-}" ]; then
        workers=$(millions "$work"/worker.*.out.*)
        valgrind --tool=callgrind --callgrind-out-file="$work/bench.out" \
            "$bin" bench --threads 2 --data "$tables" "$batch" > /dev/null 2>&1
        bench=$(millions "$work/bench.out")
        line="$line, workers $workers M; bench --threads 2 $bench M; cluster \
$(awk -v c="$coordinator" -v w="$workers" -v b="$bench" 'BEGIN { printf "%.3fx", (c + w) / b }') the bench's"
    fi
    echo "$line"
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP" && cp "$work"/callgrind.out.1 "$KEEP/$(basename "$bin").callgrind"
    fi
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
    trap - EXIT
done
