#!/usr/bin/env bash
# Renders the base and every overlay of deploy/kubernetes with `kubectl kustomize` and checks
# each pod template against Pod Security "restricted" (non-root, no privilege escalation, every
# capability dropped, the runtime's default seccomp profile, no host namespaces, ports or
# paths, allowed volume types) and against what tilesolve needs: no service account token,
# workers on the worker token with threads from their CPU request, metrics on, spread over
# nodes; the coordinator with both tokens. Prints one line per pod template.
#
#   scripts/kube-check.sh       # needs kubectl (it renders kustomize) and Python with PyYAML
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command -v kubectl >/dev/null || { echo "needs kubectl (it renders kustomize)" >&2; exit 1; }
python3 -c 'import yaml' 2>/dev/null || { echo "needs PyYAML: pip install pyyaml" >&2; exit 1; }
cd "$root/deploy/kubernetes"
status=0
for dir in base overlays/*/; do
    dir="${dir%/}"
    kubectl kustomize "$dir" | python3 "$root/scripts/kube-check.py" "$dir" || status=1
done
exit "$status"
