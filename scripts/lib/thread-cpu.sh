# Sourced by the measurement scripts: a process's CPU to the millisecond. /proc/PID/stat counts
# in 10 ms ticks, a tenth of a coordinator's CPU on 10,000 easy boards or on hard80 through
# fifteen workers dilated, so a process's CPU over a batch is the sum over its threads of what
# each ran since the start (a thread that ended in between, an idle one of the blocking pool, is
# left out).

# thread_ns PID: each thread's time on a CPU in nanoseconds (`TID NS` lines, from schedstat).
thread_ns() { for task in /proc/"$1"/task/*; do echo "${task##*/} $(cut -d' ' -f1 "$task/schedstat" 2>/dev/null)"; done; }

# cpu_since PID BEFORE: seconds of CPU PID's threads ran since BEFORE (thread_ns's output).
cpu_since() {
    thread_ns "$1" | awk -v before="$2" 'BEGIN { n = split(before, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, " "); was[f[1]] = f[2] } }
        NF == 2 { ns += $2 - (($1 in was) ? was[$1] : 0) } END { printf "%.3f", ns / 1e9 }'
}
