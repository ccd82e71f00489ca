#!/usr/bin/env bash
# Fault injection by hand (RELIABILITY.md): a coordinator and three workers on 127.0.0.1 solve
# the first N of Korf's 100 while a random worker is SIGKILLed and restarted every few seconds
# and the coordinator is SIGKILLed and restarted on the same port and files every fourth round.
# A `submit --wait` client rides through all of it; at the end its lengths are compared with the
# file's published optimal= values.
#
#   scripts/chaos.sh [BOARDS=100] [ROUND_SECONDS=1]
set -euo pipefail
boards=${1:-100}
round=${2:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/target/release/tilesolve
[ -x "$bin" ] || cargo build --release --bin tilesolve --manifest-path "$root/Cargo.toml"
dir=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
url=http://127.0.0.1:$port
export TILESOLVE_TOKEN=chaos-$RANDOM
awk -v n="$boards" '!/^#/ && count < n { print; count++ }' "$root/tests/data/korf100-blank-last.txt" > "$dir/batch.txt"

serve() {
    "$bin" serve --listen 127.0.0.1:$port --data "$dir/coordinator" --lease-timeout 2 \
        --split-after 200000 >> "$dir/coordinator.log" 2>&1 &
    coordinator=$!
    sleep 0.5
}
start_worker() {
    "$bin" worker --coordinator $url --threads 1 --data "$dir/w$1" >> "$dir/w$1.log" 2>&1 &
    workers[$1]=$!
}
cleanup() { kill -9 $coordinator "${workers[@]}" ${client:-} 2>/dev/null || true; }
trap cleanup EXIT

serve
for w in 0 1 2; do start_worker $w; done
"$bin" submit --coordinator $url --heuristic pdb:5-5-5 --wait --json "$dir/batch.txt" \
    > "$dir/results.json" 2> "$dir/client.log" &
client=$!

worker_kills=0; coordinator_kills=0; rounds=0
while kill -0 $client 2>/dev/null; do
    sleep "$round"
    kill -0 $client 2>/dev/null || break
    rounds=$((rounds + 1))
    w=$((RANDOM % 3))
    kill -9 "${workers[$w]}" 2>/dev/null && worker_kills=$((worker_kills + 1))
    wait "${workers[$w]}" 2>/dev/null || true
    start_worker $w
    if [ $((rounds % 4)) -eq 0 ]; then
        kill -9 $coordinator && coordinator_kills=$((coordinator_kills + 1))
        wait $coordinator 2>/dev/null || true
        sleep 0.3
        serve
    fi
done
wait $client && status=0 || status=$?
echo "faults injected: $worker_kills worker SIGKILLs, $coordinator_kills coordinator SIGKILLs"
grep -h "lengths matching" "$dir/client.log" || true
solved=$(grep -c '"length"' "$dir/results.json" || true)
echo "boards: $boards submitted, $solved answered; client exit status $status"
echo "logs: $dir"
[ "$status" -eq 0 ] && [ "$solved" -eq "$boards" ] && ! grep -q MISMATCH "$dir/client.log"
