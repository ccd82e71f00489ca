#!/bin/bash
# A quarantine on a large store, as processes on 127.0.0.1: a store of many finished batches
# (`loadtest` for LOAD_SECONDS against serve + a 2-thread worker), then the coordinator again on
# it under --verify full with tokens, a liar (scripts/liar-health.py) that lies on every task,
# a batch of 30 fresh 15-puzzles, and an honest worker: the liar is quarantined and the store
# passed over for what rests on it, while the health check is called every 10 ms. Prints the
# store's batch count, the quarantine's and the withdrawal's log lines, and the health
# latencies. Needs a Python with grpcio and grpcio-tools (TILESOLVE_PYTHON, as the tests).
#
# usage: [BIN=...] [LOAD_SECONDS=125] [SEED=11] scripts/quarantine-health.sh TABLE_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$root/target/release/tilesolve}
python=${TILESOLVE_PYTHON:-python3}
tables=$(realpath "$1")
work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/c" "$work/w1" "$work/w2" "$work/stubs"
for d in c w1 w2; do ln -s "$tables"/*.pdb "$work/$d/"; done
"$python" -m grpc_tools.protoc -I "$root/proto" --python_out="$work/stubs" \
    --grpc_python_out="$work/stubs" "$root/proto/tilesolve/v1/worker.proto"
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
"$bin" serve --listen "127.0.0.1:$port" --data "$work/c" > "$work/a.log" 2>&1 &
pids+=($!)
sleep 1
"$bin" worker --coordinator "$url" --threads 2 --data "$work/w1" > "$work/w1.log" 2>&1 &
pids+=($!)
sleep 2
"$bin" loadtest --coordinator "$url" --clients 16 --seconds "${LOAD_SECONDS:-125}" --batch-size 4 \
    --heuristic default --walk 20 > "$work/load.txt" 2>&1
grep -E "^batches" "$work/load.txt"
kill "${pids[@]}"; wait 2>/dev/null || true; pids=()
export TILESOLVE_TOKEN=client-secret TILESOLVE_WORKER_TOKEN=worker-secret
"$bin" serve --listen "127.0.0.1:$port" --data "$work/c" --verify full > "$work/b.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "coordinator serving" "$work/b.log" && break; sleep 0.2; done
"$python" "$root/scripts/liar-health.py" "$work/stubs" "127.0.0.1:$port" worker-secret 50 \
    > "$work/probe.txt" 2>&1 &
probe=$!
for _ in $(seq 100); do grep -q "host=liar" "$work/b.log" && break; sleep 0.2; done
python3 "$root/scripts/random-walks.py" 30 40 60 "${SEED:-11}" > "$work/walks.txt"
"$bin" submit --coordinator "$url" --wait "$work/walks.txt" > "$work/submit.out" 2> "$work/submit.err" &
submit=$!
sleep 3
env -u TILESOLVE_TOKEN "$bin" worker --coordinator "$url" --threads 2 --data "$work/w2" \
    > "$work/w2.log" 2>&1 &
pids+=($!)
wait "$submit" || true
tail -1 "$work/submit.err"
wait "$probe" || true
cat "$work/probe.txt"
grep -E "worker quarantined|withdrawn:" "$work/b.log" | cut -c1-220
