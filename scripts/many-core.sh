#!/bin/bash
# Issue 64's measurement on a many-core host, in one go: the default tables built there (7-8 and
# 6-6-6-6-max, side by side), then scripts/scaling.sh undilated on hard80 ("4 8 15"), the Korf-24
# five ("15") and the Korf-24 fifteen (serve + 15 only), and last the fifteen one board a thread
# (`bench --threads 15`) until SECONDS_LEFT runs out: an unfinished board's time is then a lower
# bound. After hard80 and the five, `tilesolve simulate` replays each serve + N run's store, so
# the simulator's walls stand beside the measured ones. Every step is cut off so that the whole
# ends within SECONDS_LEFT (default 575) and its logs and stores are packed into OUT/keep.tgz
# after each step (a lent machine's time is short).
#
# usage: [BIN=...] [OUT=DIR] [SECONDS_LEFT=575] [TABLES_4X4=DIR TABLES_5X5=DIR] scripts/many-core.sh
#   TABLES_4X4 and TABLES_5X5 name directories already holding the default tables (7-8 and
#   6-6-6-6-max), which are then not built: a rehearsal of the whole script on a small machine.
set -u
begin=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export BIN=${BIN:-$root/target/release/tilesolve}
out=${OUT:-/tmp/many-core}
limit=${SECONDS_LEFT:-575}
scratch=$(mktemp -d)
mkdir -p "$out" "$scratch/keep"
exec > >(tee -a "$out/log.txt") 2>&1
pack() { tar czf "$out/keep.tgz" -C "$scratch" keep 2>/dev/null; }
left() { echo $(( limit - ($(date +%s) - begin) )); }
# Runs the rest of the line for what is left of the time, or not at all when under 5 s are left
# (`timeout` takes 0 as no limit and refuses a negative one).
within() {
    local seconds
    seconds=$(left)
    if [ "$seconds" -lt 5 ]; then
        echo "(skipped: ${seconds} s left)"
        return 0
    fi
    timeout "$seconds" "$@"
}
# `tilesolve simulate` on a run's kept store (KEEP/cN), against the last one-thread wall
# printed: the simulator's walls beside the measured ones (issue 64, item 5).
simulated() {
    local one
    one=$(grep -oE "one thread: wall [0-9.]+" "$out/log.txt" | tail -1 | awk '{ print $4 }')
    echo "== simulate $1 (measured above)"
    timeout 60 "$BIN" simulate --data "$1" --batch 1 --workers "$2" --sequential-seconds "$one" | tail -n +2
}
echo "== host"; nproc; grep -m1 "model name" /proc/cpuinfo; free -g | head -2; date -u; uname -r
# Where the tables live decides whether they are read into 2 MiB pages (ext4 or xfs: yes; tmpfs
# only when mounted huge=): bench and every worker print the share they got.
df -T "$scratch" | tail -1
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), shmem $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
echo "== tables"
mkdir -p "$scratch/t44" "$scratch/t55"
if [ -n "${TABLES_4X4:-}" ] && [ -n "${TABLES_5X5:-}" ]; then
    ln -s "$(realpath "$TABLES_4X4")"/*.pdb "$scratch/t44/"
    ln -s "$(realpath "$TABLES_5X5")"/*.pdb "$scratch/t55/"
    echo "tables linked from $TABLES_4X4 and $TABLES_5X5"
else
    start=$(date +%s.%N)
    "$BIN" pdb build 7-8 --data "$scratch/t44" > "$scratch/keep/build44.txt" 2>&1 &
    b44=$!
    "$BIN" pdb build 6-6-6-6-max --data "$scratch/t55" > "$scratch/keep/build55.txt" 2>&1 &
    b55=$!
    wait "$b44" "$b55"
    echo "tables built in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }') s"
fi
echo "== hard80 (left $(left) s)"
KEEP=$scratch/keep/h80 within scripts/scaling.sh "$scratch/t44" bench-logs/hard80.txt "4 8 15"
for n in 4 8 15; do simulated "$scratch/keep/h80/c$n" "$n"; done
echo "== hard80's idle per split iteration (serve + 15)"
python3 scripts/task-reports.py "$scratch/keep/h80/c15.log" 2>&1 | tail -40
pack
echo "== hard80 one board a thread (what 15 busy cores cost a node)"
within "$BIN" bench --threads 15 --data "$scratch/t44" bench-logs/hard80.txt
pack
echo "== Korf-24 five (left $(left) s)"
# Each task's report logged (puzzle, bound, nodes, outcome): where serve + 15's extra nodes go
# (`scripts/task-reports.py keep/k5/c15.log` sums them per puzzle and bound).
RUST_LOG="info,tilesolve_coordinator::scheduler::lifecycle=debug" KEEP=$scratch/keep/k5 \
    within scripts/scaling.sh "$scratch/t55" bench-logs/korf24-five.txt "15"
simulated "$scratch/keep/k5/c15" 15
echo "== the five's nodes per bound and idle per iteration (serve + 15)"
python3 scripts/task-reports.py "$scratch/keep/k5/c15.log" 2>&1 | tail -30
pack
echo "== Korf-24 fifteen, serve + 15 (left $(left) s)"
ONE_THREAD=1 SERVE_ONLY=1 KEEP=$scratch/keep/k15 within \
    scripts/scaling.sh "$scratch/t55" bench-logs/korf24-easiest15.txt "15"
pack
echo "== Korf-24 fifteen, one board a thread (left $(left) s)"
within "$BIN" bench --threads 15 --data "$scratch/t55" bench-logs/korf24-easiest15.txt
echo "elapsed $(( $(date +%s) - begin )) s"
pack
rm -rf "$scratch"
