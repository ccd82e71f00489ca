#!/usr/bin/env bash
# Benchmark: N fresh workers fetching the 15-puzzle's 7-8 tables (576.6 MB) from one
# coordinator at the same moment, while `tilesolve loadtest` measures what clients feel.
#
#   tilesolve pdb build 7-8 --data DIR      # once: the coordinator's copy
#   scripts/table-storm.sh 8 DIR            # prints the wall time, the rate and the latencies
#
# Every worker starts with an empty data directory and one thread; a batch of 2N Korf boards
# asking for pdb:7-8 gives each worker its first task, which makes it fetch both tables. The
# wall time runs from the submission to the last worker's second fetch. Workers and coordinator
# share this host, so the rate is loopback's and the coordinator's, not a network's.
set -euo pipefail
workers="${1:?usage: scripts/table-storm.sh WORKERS DATA_DIR_WITH_7-8_TABLES}"
data="${2:?usage: scripts/table-storm.sh WORKERS DATA_DIR_WITH_7-8_TABLES}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${TILESOLVE_BIN:-$root/target/release/tilesolve}"
work="$(mktemp -d)"
pids=()
cleanup() {
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
export TILESOLVE_TOKEN=table-storm-token
"$bin" serve --listen "127.0.0.1:$port" --data "$data" > "$work/coordinator.log" 2>&1 &
pids+=($!)
until "$bin" health --address "$url" >/dev/null 2>&1; do sleep 0.2; done
for i in $(seq 1 "$workers"); do
    RUST_LOG=info "$bin" worker --coordinator "$url" --threads 1 --data "$work/w$i" \
        > "$work/w$i.log" 2>&1 &
    pids+=($!)
done
until [ "$(grep -l "registered with coordinator" "$work"/w*.log 2>/dev/null | wc -l)" -eq "$workers" ]; do
    sleep 0.2
done
"$bin" loadtest --coordinator "$url" --clients 8 --rate 20 --seconds 40 --walk 12 \
    --drain-seconds 60 > "$work/loadtest.txt" 2>&1 &
load=$!
sleep 5
grep -v '^#' "$root/tests/data/korf100-blank-last.txt" | head -n $((2 * workers)) > "$work/batch.txt"
started=$(date +%s.%N)
"$bin" submit --coordinator "$url" --heuristic pdb:7-8 "$work/batch.txt" > /dev/null
until [ "$(cat "$work"/w*.log | grep -c "pattern database fetched")" -ge $((2 * workers)) ]; do
    if grep -q "could not fetch" "$work"/w*.log; then
        grep -h "could not fetch" "$work"/w*.log >&2
        exit 1
    fi
    sleep 0.05
done
ended=$(date +%s.%N)
wait "$load" || true
sum() {
    cat "$work"/w*.log | grep "pattern database fetched" | grep -o " $1=[0-9]*" | cut -d= -f2 \
        | paste -sd+ | bc || true
}
bytes=$(sum bytes)
transferred=$(sum transferred)
transferred="${transferred:-$bytes}"   # a build from before compressed transfer
seconds=$(echo "$ended - $started" | bc -l)
printf 'workers %d: %.2f GB of tables (%.2f GB sent) in %.1f s wall (%.0f MB/s of tables, %.0f MB/s sent)\n' \
    "$workers" "$(echo "$bytes / 1000000000" | bc -l)" "$(echo "$transferred / 1000000000" | bc -l)" \
    "$seconds" "$(echo "$bytes / $seconds / 1000000" | bc -l)" "$(echo "$transferred / $seconds / 1000000" | bc -l)"
echo "per worker, seconds from the submission to its second table:"
for i in $(seq 1 "$workers"); do
    last=$(grep "pattern database fetched" "$work/w$i.log" | tail -n 1 | cut -c1-27)
    printf '  w%d %.1f' "$i" "$(echo "$(date -d "$last" +%s.%N) - $started" | bc -l)"
done
echo
echo "load test during the storm (8 clients, 20 batches/s):"
sed -n '/^call/,/^errors/p; /^batches:/p' "$work/loadtest.txt" | sed 's/^/  /'
