#!/bin/bash
# Times one batch through `serve` + N one-thread workers on 127.0.0.1, on fresh stores, and
# prints the CPU seconds each process spent between the submission and its end, their sum,
# and the nodes the coordinator counted: the cluster side of a comparison with `tilesolve
# bench` (scripts/cluster-vs-thread.sh runs both).
#
# usage: [WORKERS=2] [HEURISTIC=default] [SERVE_ARGS="--audit-fraction 0"] \
#            scripts/cluster-batch.sh TABLE_DIR BATCH_FILE
#   KEEP=DIR copies the processes' logs there.
#   WARM_UP=FILE runs that batch through the same processes first, outside the count: the
#   coordinator's cost once it has served a batch, as a long-running one does (a fresh one
#   first takes its heap's pages from the system, a fifth of its CPU on 10,000 walks).
#   LATENCY_MS=D puts the workers D ms from the coordinator each way (scripts/latency-proxy.py
#   between them): workers on other hosts, where a round trip is not loopback's.
#   TABLE_DIR holds the pattern table files (linked into each process's data directory, so
#   nothing is built or fetched); the binary is target/release/tilesolve unless BIN names one.
set -euo pipefail
trap 'echo "cluster-batch.sh: line $LINENO failed" >&2' ERR
# CPU is counted from each thread's schedstat (below).
[ -r /proc/self/schedstat ] || { echo "this kernel has no /proc/PID/schedstat (CONFIG_SCHED_INFO): the CPU in the batch cannot be counted" >&2; exit 1; }
tables=$(realpath "$1")
batch=$(realpath "$2")
workers=${WORKERS:-2}
heuristic=${HEURISTIC:-default}
bin=${BIN:-$(realpath "$(dirname "$0")/../target/release/tilesolve")}
# shellcheck source=scripts/lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
work=$(mktemp -d)
port=$(free_port)
url="http://127.0.0.1:$port"
pids=()
keep() { if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$work"/*.log "$work/answers.txt" "$KEEP/"; fi; }
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; keep; rm -rf "$work"' EXIT
names=(coordinator)
data_dirs "$work" "$tables" coordinator $(seq -f "w%g" 1 "$workers")
# shellcheck disable=SC2086 # SERVE_ARGS is a list of arguments
"$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" ${SERVE_ARGS:-} > "$work/serve.log" 2>&1 &
pids+=($!)
wait_for_serve "$url"
worker_url=$url
if [ -n "${LATENCY_MS:-}" ]; then
    proxy_port=$(free_port)
    python3 "$(dirname "$0")/latency-proxy.py" "$proxy_port" "$port" "$LATENCY_MS" &
    pids+=($!)
    names+=("latency proxy")
    worker_url="http://127.0.0.1:$proxy_port"
    sleep 0.3
fi
start_workers "$bin" "$worker_url" "$work" "$workers"
for i in $(seq 1 "$workers"); do names+=("worker $i"); done
# Both sides load the tables present at start; let them finish before the clock starts.
wait_for_workers "$url" "$workers"
sleep 0.5
measured=1
if [ -n "${WARM_UP:-}" ]; then
    "$bin" submit --coordinator "$url" --heuristic "$heuristic" --wait "$WARM_UP" > /dev/null
    measured=2
fi
# shellcheck source=scripts/lib/thread-cpu.sh
. "$(dirname "$0")/lib/thread-cpu.sh"
# Its system time and minor page faults: on a VM guest with free page reporting (the
# development machines: Firecracker, `page_reporting` in dmesg) a page the host took back costs
# tens of microseconds to fault in again, so a process's system time moves with the fresh
# memory it touches, not only with its work (docs/benchmarks/history.md, fifty-third session).
system() { awk '{print $15 / 100}' "/proc/$1/stat"; }
faults() { awk '{print $10}' "/proc/$1/stat"; }
# Context switches of all of a process's threads: each costs a wake-up on another core.
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n }'; }
# A process gone already would be read from /proc as nothing: named instead.
for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2> /dev/null || { echo "${names[$i]} stopped before the batch (its log: ${KEEP:-KEEP=DIR keeps it})" >&2; exit 1; }
done
before=()
system_before=()
faults_before=()
switches_before=()
for pid in "${pids[@]}"; do
    before+=("$(thread_ns "$pid")")
    system_before+=("$(system "$pid")")
    faults_before+=("$(faults "$pid")")
    switches_before+=("$(switches "$pid")")
done
# The coordinator's anonymous memory (its tables are file pages, not counted), before the
# batch and at its peak, sampled every 50 ms: what its live puzzles and intake hold.
rss_anon() { awk '/^RssAnon/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
anon_before=$(rss_anon "${pids[0]}")
echo "$anon_before" > "$work/anon-peak"
(
    peak=$anon_before
    while anon=$(rss_anon "${pids[0]}") && [ -n "$anon" ]; do
        if [ "$anon" -gt "$peak" ]; then
            peak=$anon
            echo "$peak" > "$work/anon-peak"
        fi
        sleep 0.05
    done
) &
sampler=$!
/usr/bin/time -f "submit --wait: %e s wall, client CPU %U s user + %S s system" \
    "$bin" submit --coordinator "$url" --heuristic "$heuristic" --wait "$batch" > "$work/answers.txt"
kill "$sampler" 2>/dev/null || true
echo "coordinator: anonymous memory $((anon_before / 1024)) MiB before the batch, $(($(cat "$work/anon-peak") / 1024)) MiB at its peak"
echo "$(grep -c " moves " "$work/answers.txt") answers"
total=0
for i in "${!pids[@]}"; do
    spent=$(cpu_since "${pids[$i]}" "${before[$i]}")
    spent_system=$(awk -v now="$(system "${pids[$i]}")" -v then="${system_before[$i]}" 'BEGIN { printf "%.2f", now - then }')
    echo "${names[$i]}: CPU $spent s in the batch (system $spent_system s, $(( $(faults "${pids[$i]}") - ${faults_before[$i]} )) minor faults), $(( $(switches "${pids[$i]}") - ${switches_before[$i]} )) context switches"
    # The proxy stands for the network, not for the cluster's work.
    [ "${names[$i]}" = "latency proxy" ] && continue
    total=$(awk -v a="$total" -v b="$spent" 'BEGIN { printf "%.3f", a + b }')
done
echo "coordinator + workers: CPU $total s"
"$bin" status --coordinator "$url" --json "$measured" | python3 -c 'import json, sys; print("nodes counted by the coordinator:", json.load(sys.stdin)["nodes"])'
curl -s "$url/metrics" > "$work/metrics.txt"
# (Counted since the start: with WARM_UP, over both batches.)
grep -E "^tilesolve_(audits|nodes_audited|tasks_done)" "$work/metrics.txt" | tr '\n' ' '; echo
# How many calls carried the answers: the coordinator's cost is partly per call.
grep -E '^tilesolve_rpc_seconds_count\{.*(Poll|Heartbeat)' "$work/metrics.txt" | tr '\n' ' '; echo
