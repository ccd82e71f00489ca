# Sourced (not run) by the measurement scripts that start `serve` and one-thread workers on
# 127.0.0.1, each process with a data directory of its own holding links to one set of table
# files, so nothing is built or fetched: the start-up those scripts share.
#
# Processes started here are appended to the caller's `pids` array (the coordinator first),
# which its EXIT trap kills: the caller sets `pids=()`, `work=$(mktemp -d)` and that trap
# before it starts any.

# A TCP port free on 127.0.0.1 now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# data_dirs WORK TABLES NAME...: WORK/NAME for each NAME, TABLES' table files linked in.
data_dirs() {
    local work=$1 tables=$2 dir
    shift 2
    for dir in "$@"; do
        mkdir -p "$work/$dir"
        ln -s "$tables"/*.pdb "$work/$dir/"
    done
}

# start_workers BIN URL WORK N [PREFIX...]: N one-thread workers of URL, worker i on WORK/wi
# and logging to WORK/wi.log, each run under PREFIX when given (valgrind, say).
start_workers() {
    local bin=$1 url=$2 work=$3 count=$4 i
    shift 4
    for i in $(seq 1 "$count"); do
        "$@" "$bin" worker --coordinator "$url" --threads 1 --data "$work/w$i" > "$work/w$i.log" 2>&1 &
        pids+=($!)
    done
}

# wait_for_serve URL: until the coordinator at URL answers (it loads its tables first).
wait_for_serve() {
    local _
    for _ in $(seq 1 600); do
        curl -s -o /dev/null "$1/metrics" && return 0
        sleep 0.5
    done
    echo "no coordinator answered at $1 within 5 minutes" >&2
    return 1
}

# wait_for_workers URL N: until N workers are registered at URL (each registers once its
# tables are loaded).
wait_for_workers() {
    local _
    for _ in $(seq 1 600); do
        [ "$(curl -s "$1/metrics" | awk '/^tilesolve_workers_connected/ { print $2 + 0 }')" = "$2" ] && return 0
        sleep 0.5
    done
    echo "fewer than $2 workers registered at $1 within 5 minutes" >&2
    return 1
}

# start_cluster BIN TABLES N: `serve` (data WORK/coordinator, log WORK/serve.log) and N
# workers of it, once all N are registered; sets `port` and `url`.
start_cluster() {
    local bin=$1 tables=$2 count=$3
    port=$(free_port)
    url="http://127.0.0.1:$port"
    data_dirs "$work" "$tables" coordinator $(seq -f "w%g" 1 "$count")
    "$bin" serve --listen "127.0.0.1:$port" --data "$work/coordinator" > "$work/serve.log" 2>&1 &
    pids+=($!)
    wait_for_serve "$url"
    start_workers "$bin" "$url" "$work" "$count"
    wait_for_workers "$url" "$count"
}
