#!/bin/bash
# Where one process of serve + 2 one-thread workers spends its time during one batch: `perf
# record -e cpu-clock` (a software event, so it works in the development machines' VM guests)
# on the coordinator or on worker 1, from the submission to the last answer, then its own
# functions by share of samples. Unlike scripts/coordinator-instructions.sh (instructions, under
# callgrind) it sees cache and TLB misses, page faults and context switches: a table lookup was
# 7.6% of a coordinator's time and 1.8% of its instructions (history.md, fifty-seventh session).
#
# usage: [WORKERS=2] [CALL_GRAPH=1] scripts/time-profile.sh TABLE_DIR FILE BIN coordinator|worker [OUT.data]
#   perf must be installed (Debian: linux-perf); OUT.data keeps the recording (perf report -i).
#   WORKERS=15 feeds fifteen workers (split puzzles: one call a task); CALL_GRAPH=1 records
#   each sample's stack too (--call-graph dwarf), to see whose work a function was.
set -euo pipefail
tables=$(realpath "$1")
batch=$(realpath "$2")
bin=$(realpath "$3")
which=$4
out=${5:-$(mktemp --suffix=.data)}
command -v perf > /dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
# shellcheck source=scripts/lib/cluster.sh
. "$(dirname "$0")/lib/cluster.sh"
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
start_cluster "$bin" "$tables" "${WORKERS:-2}"
# Both sides load the tables present at start; let them finish before the recording starts.
sleep 2
case "$which" in
    coordinator) target=${pids[0]} ;;
    worker) target=${pids[1]} ;;
    *) echo "profile the coordinator or a worker, not '$which'" >&2; exit 2 ;;
esac
stacks=()
if [ -n "${CALL_GRAPH:-}" ]; then stacks=(--call-graph dwarf,32768); fi
perf record -e cpu-clock -F 20000 "${stacks[@]}" -o "$out" -p "$target" > /dev/null 2>&1 &
recorder=$!
sleep 0.5
"$bin" submit --coordinator "$url" --wait "$batch" > "$work/answers.txt" 2> /dev/null
kill -INT "$recorder"
wait "$recorder" 2>/dev/null || true
echo "$(grep -c " moves " "$work/answers.txt") answers; $which's samples by function (perf report -i $out):"
perf report -i "$out" --no-children -g none --sort dso,sym 2>/dev/null | grep -v '^#' | grep -v '^$' | head -30
