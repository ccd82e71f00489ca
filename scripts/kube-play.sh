#!/usr/bin/env bash
# Plays deploy/kubernetes/base/ on this host with `podman kube play`: the coordinator and N workers
# as pods on a podman network, from the image deploy/image.sh built. Prints the coordinator's
# address (last line) once it and every worker are ready.
#
#   scripts/kube-play.sh 2          # coordinator + 2 workers; the coordinator on 127.0.0.1:7411
#   scripts/kube-play.sh down       # remove them (the store's volume stays)
#   scripts/kube-play.sh down --volumes   # and the store
#
# Environment: TILESOLVE_KUBE_PORT (host port, default 7411), TILESOLVE_TOKEN and
# TILESOLVE_WORKER_TOKEN (default: new random tokens, written to target/kube-play/token and
# worker-token).
#
# What podman 4.3 plays differs from a cluster, so the manifests are rendered first, into
# target/kube-play/play.yaml:
# - It plays Pods and Deployments, not StatefulSets or Services: the coordinator's StatefulSet
#   is played as a Pod named tilesolve-coordinator from the same pod template, its volume claim
#   template as a named volume. Pods on a podman network with DNS resolve each other by pod
#   name, so the workers reach http://tilesolve-coordinator:7411 exactly as through the
#   cluster's Service (this, not host networking, keeps the manifests' addresses unchanged and
#   gives each worker its own network namespace, so their health ports do not collide).
# - Its secretKeyRef reads a podman secret holding JSON (key: base64 value), not a Secret
#   manifest: the script creates that secret.
# - The coordinator's port is published on 127.0.0.1 with a hostPort (the workers' metrics port
#   is left undeclared: podman would publish it on the host); gRPC probes are not run
#   by podman, so the script itself asks each pod's health endpoint with `tilesolve health`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/podman/env.sh"
if [ "$engine" != podman ]; then
    echo "scripts/kube-play.sh needs podman (Debian: apt-get install podman runc)" >&2
    exit 1
fi
cd "$root"
state="$root/target/kube-play"
network=tilesolve-kube
volume=tilesolve-coordinator-data
port="${TILESOLVE_KUBE_PORT:-7411}"

down() {
    if [ -f "$state/play.yaml" ]; then
        podman kube down "$state/play.yaml" >/dev/null 2>&1 || true
    fi
    # Pods another checkout played (its play.yaml is not here) go by their names.
    for pod in $(podman pod ps --format '{{.Name}}' \
        | grep -E '^tilesolve-(coordinator|worker-pod-[0-9]+)$' || true); do
        podman pod rm -f "$pod" >/dev/null 2>&1 || true
    done
    podman secret rm tilesolve >/dev/null 2>&1 || true
    podman network rm "$network" >/dev/null 2>&1 || true
    if [ "${1:-}" = "--volumes" ]; then
        podman volume rm -f "$volume" >/dev/null 2>&1 || true
    fi
    rm -f "$state/play.yaml"
}

# The coordinator's pod template, as a Pod: the StatefulSet's `template:` block (indented by
# four) up to `volumeClaimTemplates:`, with the host port and the named volume added.
render_coordinator() {
    awk -v name=tilesolve-coordinator -v port="$port" -v volume="$volume" -v image="$image" '
        /^kind: StatefulSet$/ { statefulset = 1 }
        statefulset && /^  template:$/ { grab = 1; print "apiVersion: v1"; print "kind: Pod"; next }
        grab && /^  [a-zA-Z]/ { grab = 0 }
        grab {
            line = substr($0, 5)
            if (line == "metadata:") { print line; print "  name: " name; next }
            sub(/image: tilesolve$/, "image: " image, line)
            print line
            if (line ~ /containerPort: 7411$/) {
                indent = line; sub(/containerPort.*/, "", indent)
                print indent "hostPort: " port
                print indent "hostIP: 127.0.0.1"
            }
        }
        END {
            print "  volumes:"
            print "    - name: data"
            print "      persistentVolumeClaim:"
            print "        claimName: " volume
        }
    ' deploy/kubernetes/base/coordinator.yaml
}

# The workers' Deployment with its replica count and image; without its declared metrics port,
# which podman 4.3 publishes on the host (every worker would bind the host's 9464): the
# metrics are still served inside each pod.
render_workers() {
    sed -e "s|^  replicas: [0-9]*$|  replicas: $1|" -e "s|image: tilesolve$|image: $image|" \
        -e '/^          ports:$/{N;N;/name: metrics/d}' deploy/kubernetes/base/worker.yaml
}

# tilesolve from the image, on the host's network: no tilesolve needed on the host.
tilesolve() {
    podman run --rm --network host "$image" "$@"
}

wait_for() {
    local what="$1"
    shift
    for _ in $(seq 1 240); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.5
    done
    echo "gave up waiting for $what" >&2
    podman pod ps >&2
    exit 1
}

case "${1:-}" in
    down)
        down "${2:-}"
        exit 0
        ;;
    ''|*[!0-9]*)
        echo "usage: scripts/kube-play.sh WORKERS | down [--volumes]" >&2
        exit 2
        ;;
esac
workers="$1"
if ! podman image exists "$image"; then
    echo "no image $image: run deploy/image.sh first" >&2
    exit 1
fi
down
mkdir -p "$state"
random_token() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
token="${TILESOLVE_TOKEN:-$(random_token)}"
worker_token="${TILESOLVE_WORKER_TOKEN:-$(random_token)}"
(umask 077 && printf '%s\n' "$token" > "$state/token" \
    && printf '%s\n' "$worker_token" > "$state/worker-token")
printf '{"token":"%s","worker-token":"%s"}' "$(printf '%s' "$token" | base64 -w0)" \
    "$(printf '%s' "$worker_token" | base64 -w0)" | podman secret create tilesolve - >/dev/null
podman network create "$network" >/dev/null
podman volume exists "$volume" || podman volume create "$volume" >/dev/null

{
    render_coordinator
    echo "---"
    render_workers "$workers"
} > "$state/play.yaml"
for expected in "kind: Pod" "hostPort: $port" "claimName: $volume" "replicas: $workers"; do
    grep -q "$expected" "$state/play.yaml" || {
        echo "rendering the manifests lost '$expected': see $state/play.yaml" >&2
        exit 1
    }
done

# podman looks for a build context named after each container in the working directory.
(cd "$state" && podman kube play --network "$network" play.yaml >/dev/null)
wait_for "the coordinator" tilesolve health --address "http://127.0.0.1:$port"
for index in $(seq 0 $((workers - 1))); do
    wait_for "worker $index" podman exec "tilesolve-worker-pod-$index-worker" \
        /usr/local/bin/tilesolve health --address http://127.0.0.1:7412 \
        --service tilesolve.worker.ready
done
echo "coordinator and $workers workers ready; token in $state/token"
echo "http://127.0.0.1:$port"
