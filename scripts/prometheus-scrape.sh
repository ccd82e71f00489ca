#!/usr/bin/env bash
# A real Prometheus (Debian's `prometheus` package: apt-get install prometheus) scraping a
# coordinator and a worker on this host while they solve a batch, with deploy/monitoring's alert
# rules loaded; prints what Prometheus holds, the rules' state, and runs every query of
# deploy/monitoring/grafana-dashboard.json (each must be accepted; most return series).
#
#   scripts/prometheus-scrape.sh [SECONDS]      # default 20 s of scraping, every 2 s
#
# The coordinator needs its token for /metrics, so Prometheus sends it (a credentials file);
# the worker serves its metrics on --metrics-listen. The script queries Prometheus's HTTP API
# for `up` of both targets and the new histograms, then stops everything it started.
set -euo pipefail
seconds="${1:-20}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${TILESOLVE_BIN:-$root/target/release/tilesolve}"
command -v prometheus >/dev/null || { echo "needs Prometheus: apt-get install prometheus" >&2; exit 1; }
work="$(mktemp -d)"
pids=()
cleanup() {
    kill "${pids[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
coordinator_port=$(free_port); worker_port=$(free_port); prometheus_port=$(free_port)
url="http://127.0.0.1:$coordinator_port"
export TILESOLVE_TOKEN=prometheus-scrape-token
"$bin" serve --listen "127.0.0.1:$coordinator_port" --data "$work/coordinator" > "$work/coordinator.log" 2>&1 &
pids+=($!)
until "$bin" health --address "$url" >/dev/null 2>&1; do sleep 0.2; done
"$bin" worker --coordinator "$url" --threads 1 --data "$work/worker" \
    --metrics-listen "127.0.0.1:$worker_port" > "$work/worker.log" 2>&1 &
pids+=($!)

printf '%s' "$TILESOLVE_TOKEN" > "$work/token"
cat > "$work/prometheus.yml" <<YAML
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $root/deploy/monitoring/tilesolve-alerts.yaml
scrape_configs:
  - job_name: tilesolve-coordinator
    authorization:
      type: Bearer
      credentials_file: $work/token
    static_configs:
      - targets: ["127.0.0.1:$coordinator_port"]
  - job_name: tilesolve-worker
    static_configs:
      - targets: ["127.0.0.1:$worker_port"]
YAML
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/tsdb" \
    --web.listen-address "127.0.0.1:$prometheus_port" > "$work/prometheus.log" 2>&1 &
pids+=($!)

# Work to watch: the ten examples15 boards on the 5-5-5 tables. Then twenty of Korf's 100,
# cancelled at once: more than the TilesolvePuzzlesFailing alert's 10, none of them a failure.
"$bin" submit --coordinator "$url" --heuristic pdb:5-5-5 --wait "$root/tests/data/examples15.txt" > /dev/null 2>&1
head -n 20 "$root/tests/data/korf100-blank-last.txt" > "$work/cancelled.txt"
cancelled=$("$bin" submit --coordinator "$url" --heuristic pdb:5-5-5 "$work/cancelled.txt" 2>/dev/null)
"$bin" cancel --coordinator "$url" "$cancelled" > /dev/null
sleep "$seconds"

api="http://127.0.0.1:$prometheus_port/api/v1/query"
query() {
    curl -s --get "$api" --data-urlencode "query=$1" | python3 -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    metric = r["metric"]
    labels = ",".join(k + "=" + v for k, v in sorted(metric.items()) if k != "__name__")
    print("  " + metric.get("__name__", "") + "{" + labels + "} " + r["value"][1])'
}
echo "Prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3) scraped for ${seconds} s:"
echo "up:"; query 'up'
echo "RPC latency, 0.99 quantile by method over 30 s (seconds; Poll is a long poll: idle workers wait there):"
query 'histogram_quantile(0.99, sum by (method, le) (rate(tilesolve_rpc_seconds_bucket[30s]))) >= 0'
echo "RPC calls by method:"; query 'sum by (method) (tilesolve_rpc_seconds_count)'
echo "worker:"; query '{__name__=~"tilesolve_worker_(tasks_done_total|tasks_failed_total|tasks_cancelled_total|nodes_searched_total|table_bytes|task_seconds_count)"}'
echo "puzzles (a cancelled batch's are not failures):"
query '{__name__=~"tilesolve_puzzles_(solved|failed|cancelled)_total"}'
echo "build:"; query 'tilesolve_build_info'
echo "process (both jobs):"; query '{__name__=~"process_(cpu_seconds_total|resident_memory_bytes|open_fds)"}'
echo "store disk:"; query '{__name__=~"tilesolve_store_disk_(free|size)_bytes"}'
echo "alert rules loaded:"
curl -s "http://127.0.0.1:$prometheus_port/api/v1/rules" | python3 -c '
import json, sys
rules = [r for g in json.load(sys.stdin)["data"]["groups"] for r in g["rules"]]
if not rules:
    sys.exit("  no rules loaded")
for r in rules:
    print("  " + r["name"] + ": " + r["state"] + " (" + r["health"] + ")")
if any(r["health"] != "ok" for r in rules):
    sys.exit("  a rule failed to evaluate")'
echo "dashboard queries (\$__rate_interval as 30s):"
python3 - "$root/deploy/monitoring/grafana-dashboard.json" "$api" <<'PY'
import json, sys, urllib.parse, urllib.request
board, api = sys.argv[1], sys.argv[2]
answered = with_data = 0
failed = []
for panel in json.load(open(board))["panels"]:
    for target in panel.get("targets", []):
        expr = target["expr"].replace("$__rate_interval", "30s")
        url = api + "?" + urllib.parse.urlencode({"query": expr})
        try:
            reply = json.load(urllib.request.urlopen(url))
        except Exception as error:  # Prometheus answers 400 to a query it cannot parse
            failed.append(f"{panel['title']}: {expr}: {error}")
            continue
        answered += 1
        with_data += bool(reply["data"]["result"])
print(f"  {answered} accepted, {with_data} with series, {len(failed)} refused")
for line in failed:
    print("  refused: " + line)
sys.exit(1 if failed else 0)
PY
