#!/bin/bash
# Strong scaling of one batch file against one thread: `bench --threads 1`, then for each N the
# embedded `batch --threads N` and `serve` + N one-thread workers, each with its wall time, the
# CPU of every process, the nodes, and speedup and efficiency against the one thread's wall.
# Every length is checked against the file's optimal= facts (the runs print how many matched).
#
# DILATE=K runs every process in a cgroup (v1) CPU quota of 1/K of a core (a process of N
# threads, the embedded batch, gets N/K), so N + 1 processes fit on a 2-core machine and every
# wall time stretches by K alike: a many-core host emulated. Needs root and a quiet machine;
# keep (N + 1) / K under the core count. Without DILATE every process runs unconstrained.
# The scheduling policy's times (prefetch and packing limits, report and poll waits, leases)
# do not stretch by themselves, so against the slowed work the policy is not the host's;
# STRETCH=1 gives serve and its workers `--time-scale K` (TILESOLVE_TIME_SCALE), which
# stretches them alike.
#
# LATENCY_MS=D puts serve's workers D ms from it each way (scripts/latency-proxy.py, outside
# any quota: it stands for the network), as on other hosts; under DILATE=K it stands for D/K ms
# on the host emulated.
#
# usage: [DILATE=10 [STRETCH=1]] [BIN=...] [SERVE_ARGS=...] [ONE_THREAD=S] [SERVE_ONLY=1] [KEEP=DIR]
#        [LATENCY_MS=D] scripts/scaling.sh TABLE_DIR FILE "1 2 4 8 15"
#   TABLE_DIR holds the table files (linked into each process's data directory, so nothing is
#   built or fetched). ONE_THREAD=S takes S seconds, a one-thread wall measured on this host
#   before, instead of running `bench --threads 1` (a batch of an hour's work, say); SERVE_ONLY=1
#   skips the embedded batch; KEEP=DIR keeps every process's log, the coordinator's /metrics
#   and its store there (KEEP/cN, the tables linked beside it: `tilesolve simulate --data`).
#   Needs bash and awk (curl and python3 where present).
set -euo pipefail
tables=$(realpath "$1")
file=$(realpath "$2")
counts=$3
bin=${BIN:-$(realpath "$(dirname "$0")/../target/release/tilesolve")}
dilate=${DILATE:-}
# serve's and the workers' policy times stretched by DILATE (see above), or nothing.
stretched=()
if [ -n "$dilate" ] && [ -n "${STRETCH:-}" ]; then stretched=(env "TILESOLVE_TIME_SCALE=$dilate"); fi
root=/sys/fs/cgroup/cpu/tilesolve-scaling.$$
pids=()
work=$(mktemp -d)
proxy=
cleanup() {
    # shellcheck disable=SC2086 # empty without LATENCY_MS
    kill "${pids[@]}" $proxy 2>/dev/null || true
    wait 2>/dev/null || true
    if [ -n "$dilate" ]; then
        for group in "$root"/*/; do rmdir "$group" 2>/dev/null || true; done
        rmdir "$root" 2>/dev/null || true
    fi
    [ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$work"/*.log "$work"/*.txt "$KEEP"/ 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
[ -n "$dilate" ] && mkdir -p "$root"

# Runs the rest of the line in a cgroup of its own with `cores` cores' worth of quota, each
# divided by DILATE (or unconstrained without it).
confined() {
    local name=$1 cores=$2
    shift 2
    if [ -z "$dilate" ]; then
        exec "$@"
    fi
    local group=$root/$name
    mkdir -p "$group"
    echo 100000 > "$group/cpu.cfs_period_us"
    echo $(( 100000 * cores / dilate )) > "$group/cpu.cfs_quota_us"
    echo "$BASHPID" > "$group/cgroup.procs"
    exec "$@"
}
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
# The coordinator's CPU to the millisecond (its 0.1 s on hard80 dilated is ten ticks of
# /proc/PID/stat).
# shellcheck source=scripts/lib/thread-cpu.sh
. "$(dirname "$0")/lib/thread-cpu.sh"
now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# The coordinator's /metrics (through bash's /dev/tcp where curl is missing).
metrics() {
    if command -v curl > /dev/null; then
        curl -s "$1/metrics"
    else
        local address=${1#http://}
        exec 5<> "/dev/tcp/${address%:*}/${address#*:}"
        printf 'GET /metrics HTTP/1.0\r\nHost: %s\r\n\r\n' "$address" >&5
        tr -d '\r' <&5
        exec 5<&-
    fi
}
free_port() {
    if command -v python3 > /dev/null; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $(( 20000 + RANDOM % 20000 ))
    fi
}
# Thread-seconds the coordinator counted its workers' threads holding no task.
idle_seconds() { metrics "$1" | awk '/^tilesolve_idle_thread_seconds_total/ { print $2 }'; }
ratio() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { s = a / b; printf "%.2fx, %.0f%%", s, 100 * s / n }'; }
mkdata() { mkdir -p "$1"; ln -sf "$tables"/*.pdb "$1/"; }

echo "binary $bin; file $file; ${dilate:+every process at 1/$dilate of a core per thread}${stretched[*]:+, policy times stretched $dilate times}"
if [ -n "${ONE_THREAD:-}" ]; then
    one=$ONE_THREAD
    echo "one thread: wall $one s (measured before: ONE_THREAD)"
else
    mkdata "$work/one"
    # Its CPU too: held to 1/DILATE of a core, a process comes back to cold caches after each
    # pause and spends more CPU on the same nodes (1.54x on the 24-puzzle's tables on M2).
    TIMEFORMAT='%R %U %S'
    { time { (confined one 1 "$bin" bench --threads 1 --data "$work/one" "$file") > "$work/one.txt" 2>&1; }; } 2> "$work/one.time"
    read -r one user system < "$work/one.time"
    echo "one thread: wall $one s, CPU $(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }') s; $(grep -E 'lengths optimal' "$work/one.txt" | tr -s ' '); $(grep -E '^expanded' "$work/one.txt" | tr -s ' ')$(grep -E '^tables' "$work/one.txt" | tr -s ' ' | sed 's/^tables/; tables:/')"
fi
printf "%-28s %9s %16s %12s %s\n" "run" "wall s" "speedup, eff." "CPU s" "CPU per process, nodes, lengths"

for n in $counts; do
    if [ -z "${SERVE_ONLY:-}" ]; then
        # The embedded coordinator and its N threads in one process.
        mkdata "$work/batch$n"
        # (Its wall includes building nothing: the tables are there; it includes loading them.)
        TIMEFORMAT='%R %U %S'
        { time { (confined "batch$n" "$n" "$bin" batch --threads "$n" --data "$work/batch$n" \
            "$file") > "$work/batch$n.txt" 2>&1 || true; }; } 2> "$work/batch$n.time"
        read -r wall user system < "$work/batch$n.time"
        printf "%-28s %9s %16s %12s %s\n" "batch --threads $n" "$wall" "$(ratio "$one" "$wall" "$n")" \
            "$(awk -v u="$user" -v s="$system" 'BEGIN { printf "%.2f", u + s }')" \
            "one process; $(grep -oE "lengths matching[^;]*" "$work/batch$n.txt" | head -1)"
    fi

    # serve + N one-thread workers, each in its own process (and cgroup).
    port=$(free_port)
    url="http://127.0.0.1:$port"
    pids=()
    mkdata "$work/c$n"
    # shellcheck disable=SC2086 # SERVE_ARGS is a list of arguments
    (confined "c$n" 1 "${stretched[@]}" "$bin" serve --listen "127.0.0.1:$port" --data "$work/c$n" ${SERVE_ARGS:-}) \
        > "$work/c$n.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do (exec 3<> "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    worker_url=$url
    if [ -n "${LATENCY_MS:-}" ]; then
        proxy_port=$(free_port)
        python3 "$(dirname "$0")/latency-proxy.py" "$proxy_port" "$port" "$LATENCY_MS" &
        proxy=$!
        worker_url="http://127.0.0.1:$proxy_port"
        for _ in $(seq 200); do (exec 3<> "/dev/tcp/127.0.0.1/$proxy_port") 2>/dev/null && break; sleep 0.1; done
    fi
    for i in $(seq 1 "$n"); do
        mkdata "$work/w$n.$i"
        (confined "w$n.$i" 1 "${stretched[@]}" "$bin" worker --coordinator "$worker_url" --threads 1 --data "$work/w$n.$i") \
            > "$work/w$n.$i.log" 2>&1 &
        pids+=($!)
    done
    # Every worker registered and its tables loaded before the clock starts.
    for _ in $(seq 1200); do
        [ "$(grep -l 'registered with coordinator' "$work"/w"$n".*.log 2>/dev/null | wc -l)" -ge "$n" ] && break
        sleep 0.1
    done
    sleep 3
    before=()
    for pid in "${pids[@]}"; do before+=("$(cpu "$pid")"); done
    coordinator_before=$(thread_ns "${pids[0]}")
    idle_before=$(idle_seconds "$url")
    start=$(now)
    "$bin" submit --coordinator "$url" --wait "$file" > "$work/answers$n.txt" 2>&1 || true
    wall=$(seconds "$start" "$(now)")
    total=0
    spent=()
    for i in "${!pids[@]}"; do
        if [ "$i" -eq 0 ]; then
            s=$(cpu_since "${pids[0]}" "$coordinator_before")
        else
            s=$(awk -v a="$(cpu "${pids[$i]}")" -v b="${before[$i]}" 'BEGIN { printf "%.2f", a - b }')
        fi
        spent+=("$s")
        total=$(awk -v a="$total" -v b="$s" 'BEGIN { printf "%.2f", a + b }')
    done
    # Every node the workers reported: for answers, for audits, and for tasks withdrawn first;
    # and the tasks asked back for idle threads (returned unstarted, handed back part searched).
    metrics "$url" > "$work/metrics$n.txt"
    nodes=$(awk '
        /^tilesolve_nodes_searched_total/ { a = $2 } /^tilesolve_nodes_audited_total/ { b = $2 }
        /^tilesolve_nodes_withdrawn_total/ { c = $2 } /^tilesolve_nodes_audited_by_coordinator_total/ { d = $2 }
        /^tilesolve_tasks_returned_total/ { r = $2 } /^tilesolve_tasks_handed_back_total/ { h = $2 }
        /^tilesolve_tasks_done_total/ { t = $2 } /^tilesolve_coordinator_seconds_per_task/ { m = $2 }
        END { printf "%.0f nodes (+ %.0f audits, %.0f withdrawn; the coordinator audited %.0f); %d tasks, the coordinator measured %.0f us a task; tasks asked back: %d returned, %d handed back", a, b, c, d, t, m * 1e6, r, h }' "$work/metrics$n.txt")
    idle=$(awk -v a="$(idle_seconds "$url")" -v b="$idle_before" -v n="$n" -v w="$wall" \
        'BEGIN { printf "%.1f%%", 100 * (a - b) / (n * w) }')
    workers_cpu=$(printf "%s " "${spent[@]:1}")
    printf "%-28s %9s %16s %12s %s\n" "serve + $n workers" "$wall" "$(ratio "$one" "$wall" "$n")" "$total" \
        "coordinator ${spent[0]}, workers ${workers_cpu% }; threads idle $idle; $nodes; $(grep -oE 'lengths matching[^;]*' "$work/answers$n.txt" | head -1)"
    # Whether the workers' tables were in 2 MiB pages (worker 1's last reading).
    pages=$(grep -ohE "[0-9]+ MB of pattern tables, [0-9]+% of them in 2 MiB pages" "$work/w$n.1.log" | tail -1 || true)
    [ -n "$pages" ] && echo "  (worker 1: $pages)"
    # shellcheck disable=SC2086 # empty without LATENCY_MS
    kill "${pids[@]}" $proxy 2>/dev/null || true
    wait 2>/dev/null || true
    pids=()
    proxy=
    # The coordinator's store, for `tilesolve simulate --data KEEP/cN` (tables linked beside it).
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP/c$n" && cp -r "$work/c$n/store" "$KEEP/c$n/" && ln -sf "$tables"/*.pdb "$KEEP/c$n/"
    fi
done
