#!/usr/bin/env python3
"""Where a batch's nodes and idle threads went, from a coordinator's log with task reports
logged (RUST_LOG="info,tilesolve_coordinator::scheduler::lifecycle=debug"): per puzzle, its
total and, per IDA* bound, the nodes and the number of task reports; then the reports by
outcome. Compare a puzzle's total with `bench --threads 1`'s nodes for its board: a final
iteration searched far past its answer shows as a last bound with most of its tasks reported.
Then each split iteration's wall time and the connected threads' idle while it ran (the
"iteration ended" lines, logged at info): with several puzzles at once that is the batch's idle
in those seconds, shared by every iteration then running.

usage: scripts/task-reports.py COORDINATOR_LOG
"""
import collections
import re
import sys

per_bound = collections.defaultdict(lambda: [0, 0])
outcomes = collections.Counter()
iterations = []
with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
    for line in log:
        if "iteration ended" in line:
            fields = dict(re.findall(r"(\w+)=(\S+)", line))
            iterations.append(
                (int(fields["batch"]), int(fields["puzzle"]), int(fields["bound"]),
                 float(fields["seconds"]), float(fields["idle_thread_seconds"]),
                 float(fields["idle_share"])))
            continue
        if "task reported" not in line:
            continue
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if "bound" not in fields:
            continue
        key = (int(fields["batch"]), int(fields["puzzle"]), int(fields["bound"]))
        per_bound[key][0] += int(fields["nodes"])
        per_bound[key][1] += 1
        outcomes[fields["outcome"].strip('"')] += 1
puzzles = sorted({key[:2] for key in per_bound})
for puzzle in puzzles:
    bounds = [(key[2], *per_bound[key]) for key in sorted(per_bound) if key[:2] == puzzle]
    total = sum(nodes for _, nodes, _ in bounds)
    shown = " ".join(f"{bound}: {nodes / 1e6:.2f} M in {count}" for bound, nodes, count in bounds)
    print(f"batch {puzzle[0]} puzzle {puzzle[1]}: {total:,} nodes; {shown}")
print("reports by outcome:", dict(outcomes))
for batch, puzzle, bound, seconds, idle, share in iterations:
    print(f"batch {batch} puzzle {puzzle} bound {bound}: {seconds:.3f} s, "
          f"threads idle {idle:.2f} thread-s ({100 * share:.1f}%)")
