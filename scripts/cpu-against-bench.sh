#!/bin/bash
# The cluster's CPU against one process's on the same boards, binaries side by side: each round
# times `tilesolve bench --threads 2` (its CPU, from the shell's timer), then
# scripts/cluster-batch.sh (serve + 2 one-thread workers) once per binary, and prints each
# binary's coordinator CPU, the cluster's total and its ratio to the bench's, all to the
# millisecond (counted in hundredths, three processes' rounding moved a ratio by up to 0.06).
# Rounds alternate the binaries so a noisy host hits them alike (the 2-core bound of issue 64:
# 10,000 walks at most 1.25x). System time (in hundredths) is shown beside each total: on the
# development machines (VM guests with free page reporting) it moves with the fresh pages a
# process touches (cluster-batch.sh).
#
# usage: scripts/cpu-against-bench.sh TABLE_DIR FILE ROUNDS BIN [BIN ...]
#   The bench runs target/release/tilesolve unless BENCH_BIN names one. With WARM_UP=FILE each
#   binary also runs warm (cluster-batch.sh's WARM_UP: that batch served first, uncounted), as
#   a long-running coordinator does. Rounds of one process's CPU move by 10-30% on the
#   development machines, so the end gives each one's median ratio and how many rounds were
#   within 1.25x.
set -euo pipefail
tables=$1
file=$2
rounds=$3
shift 3
here=$(dirname "$0")
bench_bin=${BENCH_BIN:-$(realpath "$here/../target/release/tilesolve")}
ratios=$(mktemp)
trap 'rm -f "$ratios"' EXIT
runs=()
for bin in "$@"; do
    runs+=("$bin:")
    [ -n "${WARM_UP:-}" ] && runs+=("$bin:warm")
done
for round in $(seq 1 "$rounds"); do
    # The shell's own timer: the child's CPU to the millisecond (/usr/bin/time prints hundredths).
    times=$( { TIMEFORMAT='%3U %3S'; time "$bench_bin" bench --threads 2 --data "$tables" "$file" > /dev/null 2>&1; } 2>&1 | tail -1)
    bench=$(echo "$times" | awk '{ printf "%.3f", $1 + $2 }')
    line="round $round: bench $bench s (system $(echo "$times" | awk '{ printf "%.2f", $2 }'))"
    for run in "${runs[@]}"; do
        bin=${run%:*}
        warm=${run##*:}
        label=$(basename "$bin")${warm:+ (warm)}
        out=$(BIN=$bin WARM_UP=${warm:+$WARM_UP} "$here/cluster-batch.sh" "$tables" "$file" 2>&1)
        coordinator=$(echo "$out" | grep -E "^coordinator:" | grep -oE "CPU [0-9.]+" | awk '{ print $2 }')
        total=$(echo "$out" | grep -E "^coordinator \+ workers" | grep -oE "CPU [0-9.]+" | awk '{ print $2 }')
        # The system time of coordinator and workers (the proxy, if any, is no part of them).
        system=$(echo "$out" | grep -E "^(coordinator|worker [0-9]+):" | grep -oE "system [0-9.]+" \
            | awk '{ n += $2 } END { printf "%.2f", n }')
        answers=$(echo "$out" | grep -E " answers$" | awk '{ print $1 }')
        ratio=$(awk -v t="$total" -v b="$bench" 'BEGIN { printf "%.3f", t / b }')
        echo "$label	$ratio" >> "$ratios"
        line="$line | $label: coordinator $coordinator s, total $total s (system $system; ${ratio}x), $answers answers"
    done
    echo "$line"
done
for run in "${runs[@]}"; do
    bin=${run%:*}
    warm=${run##*:}
    label=$(basename "$bin")${warm:+ (warm)}
    awk -F '\t' -v label="$label" '$1 == label { print $2 }' "$ratios" | sort -n | awk -v label="$label" '
        { r[NR] = $1; if ($1 <= 1.25) within++ }
        END { if (NR == 0) exit
              median = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
              printf "%s: median %.3fx (%.3f-%.3fx), %d of %d rounds within 1.25x\n", label, median, r[1], r[NR], within, NR }'
done
