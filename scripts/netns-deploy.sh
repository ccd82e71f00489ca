#!/usr/bin/env bash
# The deployment guide (docs/DEPLOY.md), tried for real on one Linux host: the coordinator and two
# workers each in their own network namespace with its own address (10.77.0.1-3), joined by a
# bridge, as if on three machines; token and TLS on; a batch submitted from the host and watched.
#
#   sudo scripts/netns-deploy.sh [PDB_DIR]
#
# PDB_DIR (optional) holds a ready 4x4-blank-last-1.2.3.4.5.6.7.8.pdb for the coordinator (else it
# builds the 7-8 tables, about two minutes). Workers start with empty data directories and fetch
# the tables from the coordinator. Needs root (ip netns), openssl and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/target/release/tilesolve
[ -x "$BIN" ] || cargo build --release --bin tilesolve
WORK=$(mktemp -d /tmp/tilesolve-deploy.XXXXXX)
NS=(tsc tsw1 tsw2)
ADDR=(10.77.0.1 10.77.0.2 10.77.0.3)
PIDS=()

cleanup() {
    for pid in "${PIDS[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
    sleep 1
    for ns in "${NS[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
    ip link del tsbr0 2>/dev/null || true
}
trap cleanup EXIT

# Three "hosts": a namespace each, a veth into a bridge on the real host (10.77.0.254).
ip link add tsbr0 type bridge
ip addr add 10.77.0.254/24 dev tsbr0
ip link set tsbr0 up
for i in 0 1 2; do
    ns=${NS[$i]}
    ip netns add "$ns"
    ip link add "v$ns" type veth peer name eth0 netns "$ns"
    ip link set "v$ns" master tsbr0 up
    ip -n "$ns" addr add "${ADDR[$i]}/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
done

# A private CA and the coordinator's certificate for the name workers will check.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=tilesolve-ca \
    -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=coordinator.tilesolve \
    -keyout "$WORK/coord.key" -out "$WORK/coord.csr" 2>/dev/null
printf 'subjectAltName=DNS:coordinator.tilesolve,IP:10.77.0.1\n' > "$WORK/san.ext"
openssl x509 -req -in "$WORK/coord.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
    -CAcreateserial -days 2 -extfile "$WORK/san.ext" -out "$WORK/coord.pem" 2>/dev/null
export TILESOLVE_TOKEN
TILESOLVE_TOKEN=$(openssl rand -hex 24)

mkdir -p "$WORK/coordinator" "$WORK/worker1" "$WORK/worker2"
if [ -n "${1:-}" ]; then
    ln -s "$(realpath "$1")/4x4-blank-last-1.2.3.4.5.6.7.8.pdb" "$WORK/coordinator/"
fi

echo "== coordinator on 10.77.0.1:7411 (namespace tsc)"
ip netns exec tsc "$BIN" serve --listen 10.77.0.1:7411 --data "$WORK/coordinator" \
    --tls-cert "$WORK/coord.pem" --tls-key "$WORK/coord.key" > "$WORK/coordinator.log" 2>&1 &
PIDS+=($!)
sleep 2
for i in 1 2; do
    echo "== worker $i on ${ADDR[$i]} (namespace ${NS[$i]})"
    ip netns exec "${NS[$i]}" "$BIN" worker --coordinator https://10.77.0.1:7411 \
        --tls-ca "$WORK/ca.pem" --tls-domain coordinator.tilesolve \
        --data "$WORK/worker$i" --threads 1 > "$WORK/worker$i.log" 2>&1 &
    PIDS+=($!)
done

echo "== submit from the host (10.77.0.254), wait for the answers"
"$BIN" submit --coordinator https://10.77.0.1:7411 --tls-ca "$WORK/ca.pem" \
    --tls-domain coordinator.tilesolve --wait ../shared/bench/examples15.txt
echo "== watch: /metrics over TLS with the token"
curl -s --cacert "$WORK/ca.pem" --resolve coordinator.tilesolve:7411:10.77.0.1 \
    -H "authorization: Bearer $TILESOLVE_TOKEN" https://coordinator.tilesolve:7411/metrics |
    grep -E '^tilesolve_(puzzles_solved_total|workers|worker_threads) '
echo "== without the token"
curl -s -o /dev/null -w 'HTTP %{http_code}\n' --cacert "$WORK/ca.pem" \
    --resolve coordinator.tilesolve:7411:10.77.0.1 https://coordinator.tilesolve:7411/metrics
echo "== the coordinator saw its workers from their own addresses"
grep -E 'worker registered|registered' "$WORK/coordinator.log" | head -4
echo "== the workers fetched the pattern database"
ls -l "$WORK"/worker*/ | grep pdb || true
