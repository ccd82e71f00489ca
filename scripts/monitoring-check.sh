#!/usr/bin/env bash
# Checks deploy/monitoring/: the alert rules with promtool (syntax and their unit tests), the
# PrometheusRule beside them is the same rules, and the Grafana dashboard is well formed (every
# panel has a unique id, a place on the grid, a Prometheus datasource and queries).
# scripts/prometheus-scrape.sh then loads the rules into a real Prometheus and runs every
# dashboard query against what it scraped.
#
#   scripts/monitoring-check.sh            # check
#   scripts/monitoring-check.sh --write    # remake prometheus-rule.yml from tilesolve-alerts.yaml
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/deploy/monitoring"

# The PrometheusRule: a fixed head, then the rule file's `groups:` block under `spec:`.
prometheus_rule() {
    cat <<'YAML'
# tilesolve-alerts.yaml as a PrometheusRule for the Prometheus operator. Made by
# `scripts/monitoring-check.sh --write`: edit tilesolve-alerts.yaml, not this.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: tilesolve
  labels:
    app.kubernetes.io/name: tilesolve
spec:
YAML
    sed -n '/^groups:/,$p' "$dir/tilesolve-alerts.yaml" | sed 's/^/  /'
}

if [ "${1:-}" = "--write" ]; then
    prometheus_rule > "$dir/prometheus-rule.yml"
    echo "wrote $dir/prometheus-rule.yml"
    exit 0
fi
command -v promtool >/dev/null || { echo "needs promtool: apt-get install prometheus" >&2; exit 1; }
promtool check rules "$dir"/*.yaml
promtool test rules "$dir/tests/alerts-test.yml"
if ! diff <(prometheus_rule) "$dir/prometheus-rule.yml" >/dev/null; then
    echo "prometheus-rule.yml differs from tilesolve-alerts.yaml: run $0 --write" >&2
    exit 1
fi
echo "prometheus-rule.yml: the same rules"
python3 - "$dir/grafana-dashboard.json" <<'PY'
import json, sys
path = sys.argv[1]
board = json.load(open(path))
problems = []
for key in ("title", "uid", "panels", "schemaVersion", "time", "templating"):
    if key not in board:
        problems.append(f"no {key}")
ids = set()
queries = 0
for panel in board.get("panels", []):
    name = panel.get("title", "?")
    if panel.get("id") in ids:
        problems.append(f"panel {name}: id {panel.get('id')} used twice")
    ids.add(panel.get("id"))
    grid = panel.get("gridPos", {})
    if not all(isinstance(grid.get(k), int) for k in "xywh") or grid["x"] + grid["w"] > 24:
        problems.append(f"panel {name}: gridPos {grid}")
    if panel.get("type") == "row":
        continue
    if panel.get("datasource", {}).get("uid") != "${datasource}":
        problems.append(f"panel {name}: datasource is not the dashboard's variable")
    targets = panel.get("targets", [])
    if not targets or not all(t.get("expr") and t.get("refId") for t in targets):
        problems.append(f"panel {name}: targets without expr or refId")
    if not panel.get("fieldConfig", {}).get("defaults", {}).get("unit"):
        problems.append(f"panel {name}: no unit")
    queries += len(targets)
if problems:
    sys.exit(f"{path}:\n  " + "\n  ".join(problems))
print(f"grafana-dashboard.json: {len(board['panels'])} panels, {queries} queries, well formed")
PY
